"""Generate evalkit's synthetic demo data sets into data/demo/ (seeded, reproducible).

Run ``python data/make_demo.py [OUT_DIR]``; by default every file in data/demo/ is rewritten byte for byte the same.
The generating rules are documented in data/demo/README.md. Nothing here is real data.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "demo"
LEVELS = np.array(["none", "minor", "partial", "mostly", "fully"])


def make_tcva(out: Path, rng: np.random.Generator) -> None:
    """Claim verdicts for 12 documents x 10 systems, with a simulated human rating per summary."""
    n_docs, n_systems = 12, 10
    system_skill = np.linspace(-1.2, 1.2, n_systems)
    doc_difficulty = rng.normal(0.0, 0.5, n_docs)
    claim_rows, item_rows = [], []
    for d in range(n_docs):
        for s in range(n_systems):
            item_id = f"doc{d:02d}-sys{s}"
            quality = system_skill[s] - doc_difficulty[d] + rng.normal(0.0, 0.6)
            # Weaker summaries have fewer claims; about 1 in 15 has none (nothing checkable extracted).
            n_claims = 0 if rng.random() < 0.07 else int(rng.integers(1, 8))
            # Ordered-logit style draw: higher quality shifts verdicts toward "fully".
            cuts = np.array([-2.2, -1.4, -0.6, 0.2])
            latent = quality + rng.logistic(0.0, 0.7, n_claims)
            levels = np.searchsorted(cuts, latent)
            for idx, lvl in enumerate(levels):
                claim_rows.append({"item_id": item_id, "claim_idx": idx, "verdict": LEVELS[lvl]})
            # Annotators punish an unsupported claim more than they reward supported ones.
            if n_claims:
                worst = levels.min() / 4
                mean = levels.mean() / 4
                truth = 1 + 4 * (0.4 * worst + 0.6 * mean)
            else:
                truth = 1 + 4 * (0.35 + 0.1 * np.tanh(quality))
            # Annotators also react to things no extracted claim captures (style, omissions).
            truth += rng.normal(0.0, 0.8)
            ratings = np.clip(np.round(truth + rng.normal(0.0, 1.1, 3)), 1, 5)
            item_rows.append({"item_id": item_id, "human": round(float(ratings.mean()), 4),
                              "document": f"doc{d:02d}", "system": f"sys{s}"})
    pd.DataFrame(claim_rows).to_csv(out / "tcva_verdicts.csv", index=False)
    pd.DataFrame(item_rows).to_csv(out / "tcva_items.csv", index=False)


PRODUCTS = ["Aurora kettle", "Birch desk lamp", "Cobalt headphones", "Delta e-bike", "Ember heater",
            "Fjord backpack", "Garnet blender", "Harbor router", "Iris thermostat", "Juniper stroller"]
TOPICS = [("warranty", "The {p} has a {n}-year warranty.", "years", (1, 5)),
          ("battery", "The {p} battery lasts about {n} hours on a full charge.", "hours", (4, 40)),
          ("return", "The {p} can be returned within {n} days of delivery.", "days", (14, 60)),
          ("weight", "The {p} weighs {n} kg.", "kg", (1, 25))]


def make_judge(out: Path, rng: np.random.Generator) -> None:
    """100 support answers, human PASS/FAIL labels and two simulated judge runs (rubric v1 and v2)."""
    cases, labels, outputs = [], [], []
    judges = {"v1": {"recall": 0.70, "false_flag": 0.10, "malformed": 0.06},
              "v2": {"recall": 0.85, "false_flag": 0.08, "malformed": 0.02}}
    malformed = ["PASS.", "**FAIL**", "Pass", "Verdict: PASS", "", "FAIL - one claim is unsupported"]
    for i in range(100):
        product = PRODUCTS[i % len(PRODUCTS)]
        topic, sentence, unit, (lo, hi) = TOPICS[int(rng.integers(len(TOPICS)))]
        true_n = int(rng.integers(lo, hi + 1))
        other = TOPICS[(TOPICS.index((topic, sentence, unit, (lo, hi))) + 1) % len(TOPICS)]
        source = (sentence.format(p=product, n=true_n) + " "
                  + other[1].format(p=product, n=int(rng.integers(other[3][0], other[3][1] + 1))))
        fails = rng.random() < 0.3
        stated = true_n if not fails else true_n + int(rng.choice([-1, 1])) * int(rng.integers(1, 4))
        answer = sentence.format(p=product, n=max(stated, 1))
        if fails and rng.random() < 0.4:
            answer += " It also ships with a free spare part."  # a claim the source never makes
        output = {"answer": answer, "topic": topic, "confidence": round(float(rng.uniform(0.4, 1.0)), 2)}
        text = json.dumps(output)
        roll = rng.random()
        if roll < 0.04:
            text = text[:-12]  # a truncated, invalid JSON output
        elif roll < 0.08:
            output["answer"] = answer + " " + "Please let me know if there is anything else I can help with. " * 4
            text = json.dumps(output)
        day = ["mon", "tue", "wed", "thu", "fri"][i % 5]
        case_id = f"case-{i:03d}"
        cases.append({"case_id": case_id, "day": day, "input": f"What is the {topic} of the {product}?",
                      "source": source, "output": text})
        labels.append({"case_id": case_id, "label": "FAIL" if fails else "PASS", "labeller": "demo-annotator",
                       "position": i})
        for version, spec in judges.items():
            says_fail = rng.random() < (spec["recall"] if fails else spec["false_flag"])
            reason = ("The response states a figure the source does not support." if says_fail
                      else "Every claim in the response is stated in the source.")
            raw = ("FAIL" if says_fail else "PASS") + "\n" + reason
            if rng.random() < spec["malformed"]:
                raw = malformed[int(rng.integers(len(malformed)))] + ("\n" + reason if rng.random() < 0.5 else "")
            outputs.append({"case_id": case_id, "rubric": version, "raw": raw})
    with (out / "judge_cases.jsonl").open("w", encoding="utf-8") as handle:
        for case in cases:
            handle.write(json.dumps(case) + "\n")
    pd.DataFrame(labels).to_csv(out / "judge_labels.csv", index=False)
    with (out / "judge_outputs.jsonl").open("w", encoding="utf-8") as handle:
        for row in outputs:
            handle.write(json.dumps(row) + "\n")


def main(out: Path = OUT) -> None:
    """Write every demo data set into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    make_tcva(out, np.random.default_rng(20261130))
    make_judge(out, np.random.default_rng(20261201))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
