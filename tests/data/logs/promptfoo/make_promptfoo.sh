#!/bin/sh
# Write the promptfoo logs (promptfoo 0.123.1, offline): data/demo/logs/promptfoo_v1.json and promptfoo_v2.json
# (read by the notebook), and promptfoo_v1.jsonl here (the same run as JSON lines).
# Usage: PROMPTFOO=/path/to/node_modules/promptfoo sh make_promptfoo.sh   (run from this folder)
# promptfoo 0.123.1's command-line entry refuses Node 20; its main module runs on it and is called directly.
# The system under test (provider.py) and the llm-rubric grader (grader.py) are local python scripts.
set -e
DEMO=../../../../data/demo/logs
export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_CONFIG_DIR="$(mktemp -d)"
export PROMPTFOO_PYTHON="${PROMPTFOO_PYTHON:-python3}"
for v in v1 v2; do
  node "$PROMPTFOO/dist/src/main.js" eval -c "promptfooconfig_$v.yaml" --repeat 2 --no-cache --no-table \
    --max-concurrency 1 -o "$DEMO/promptfoo_$v.json" || true   # exits 100 when a test fails
done
node "$PROMPTFOO/dist/src/main.js" eval -c promptfooconfig_v1.yaml --repeat 2 --no-cache --no-table \
  --max-concurrency 1 -o promptfoo_v1.jsonl || true
rm -rf "$PROMPTFOO_CONFIG_DIR"
