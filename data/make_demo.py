"""Generate evalkit's synthetic demo data sets into data/demo/ (seeded, reproducible).

Run ``python data/make_demo.py [OUT_DIR]``; by default every file in data/demo/ is rewritten byte for byte the same.
The generating rules are documented in data/demo/README.md. Nothing here is real data.
"""

from __future__ import annotations

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


def main(out: Path = OUT) -> None:
    """Write every demo data set into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    make_tcva(out, np.random.default_rng(20261130))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
