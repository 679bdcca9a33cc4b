"""Write ``ragas_result.json``: the table of a ragas ``evaluate()`` run (ragas 0.4.3), made offline.

Run with ragas installed (``pip install ragas==0.4.3 rapidfuzz "langchain-community<0.4"``: and rapidfuzz; ragas 0.4.3 imports a
module that later langchain-community releases removed): ``python make_ragas.py``. ragas' ``evaluate``
scores six samples with three metrics that need no model (exact match, string presence, Levenshtein
similarity); one sample has no reference, so the metrics that need one cannot score it. The result's
``to_pandas()`` table is written with pandas' ``to_json(orient="table")``, which keeps the index, the
columns and their types, so that ``pandas.read_json(..., orient="table")`` gives back the same frame.
"""

import os
from pathlib import Path

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")

from ragas import EvaluationDataset, evaluate  # noqa: E402
from ragas.metrics import ExactMatch, NonLLMStringSimilarity, StringPresence  # noqa: E402

HERE = Path(__file__).resolve().parent
SAMPLES = [("France", "Paris", "Paris"), ("Italy", "Rome", "Rome, probably"), ("Japan", "Tokyo", "Tokyo"),
           ("Canada", "Ottawa", "Toronto"), ("Kenya", "Nairobi", "The capital of Kenya is Nairobi."),
           ("Peru", None, "Lima")]


def main():
    data = EvaluationDataset.from_list([
        {"user_input": f"What is the capital of {country}?", "response": answer,
         **({"reference": capital} if capital else {})} for country, capital, answer in SAMPLES])
    result = evaluate(data, metrics=[ExactMatch(), StringPresence(), NonLLMStringSimilarity()], show_progress=False,
                      raise_exceptions=False)
    result.to_pandas().to_json(HERE / "ragas_result.json", orient="table", indent=1)


if __name__ == "__main__":
    main()
