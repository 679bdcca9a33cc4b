#!/bin/sh
# Write the lm-evaluation-harness fixture (lm_eval 0.4.13, offline): results_*.json and samples_*.jsonl in out/.
# Run from this folder with lm_eval installed (pip install lm_eval==0.4.13): sh make_lm_eval.sh
# The "dummy" model answers every multiple-choice option with a random log-likelihood (seeded) and every
# generation with "lol"; the tasks read tasks/capitals.jsonl.
set -e
rm -rf out
HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 lm_eval --model dummy --tasks capitals_mc,capitals_gen --include_path tasks \
  --output_path out --log_samples --seed 1234
