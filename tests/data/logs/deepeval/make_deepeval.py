"""Write ``deepeval_result.json``: a deepeval ``EvaluationResult`` (deepeval 4.3.1), made offline.

Run with deepeval installed (``pip install deepeval==4.3.1``): ``python make_deepeval.py``. deepeval's own
``evaluate()`` runs two metrics written on deepeval's ``BaseMetric`` without a model (exact answer; answer
length against a threshold) on six ``LLMTestCase``s; the length metric raises for one case, which
deepeval records as that metric's error (``ErrorConfig(ignore_errors=True)``). The result is saved with
pydantic's ``model_dump(mode="json")``: the form :func:`evalkit.logs.from_deepeval` also reads.
"""

import json
import os
from pathlib import Path

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("DEEPEVAL_RESULTS_FOLDER", "")

from deepeval import evaluate  # noqa: E402
from deepeval.evaluate.configs import AsyncConfig, DisplayConfig, ErrorConfig  # noqa: E402
from deepeval.metrics import BaseMetric  # noqa: E402
from deepeval.test_case import LLMTestCase  # noqa: E402

HERE = Path(__file__).resolve().parent
CASES = [("France", "Paris", "Paris"), ("Italy", "Rome", "Rome, probably"), ("Japan", "Tokyo", "Tokyo"),
         ("Canada", "Ottawa", "Toronto"), ("Kenya", "Nairobi", "The capital of Kenya is Nairobi."), ("Peru", "Lima", "")]


class ExactAnswer(BaseMetric):
    def __init__(self):
        self.threshold = 1.0

    def measure(self, test_case, *args, **kwargs):
        self.score = float(test_case.actual_output.strip() == test_case.expected_output)
        self.success = self.score >= self.threshold
        self.reason = "the answer is the expected city" if self.success else f"expected {test_case.expected_output!r}"
        return self.score

    async def a_measure(self, test_case, *args, **kwargs):
        return self.measure(test_case)

    def is_successful(self):
        return self.success

    @property
    def __name__(self):
        return "Exact answer"


class Brevity(BaseMetric):
    def __init__(self):
        self.threshold = 0.5

    def measure(self, test_case, *args, **kwargs):
        words = len(test_case.actual_output.split())
        if words == 0:
            raise ValueError("empty answer: nothing to measure")
        self.score = 1.0 / words
        self.success = self.score >= self.threshold
        self.reason = f"{words} word(s)"
        return self.score

    async def a_measure(self, test_case, *args, **kwargs):
        return self.measure(test_case)

    def is_successful(self):
        return self.success

    @property
    def __name__(self):
        return "Brevity"


def main():
    cases = [LLMTestCase(name=f"capital-{country.lower()}", input=f"What is the capital of {country}?",
                         actual_output=answer, expected_output=capital) for country, capital, answer in CASES]
    result = evaluate(cases, [ExactAnswer(), Brevity()], async_config=AsyncConfig(run_async=False),
                      display_config=DisplayConfig(show_indicator=False, print_results=False),
                      error_config=ErrorConfig(ignore_errors=True))
    (HERE / "deepeval_result.json").write_text(json.dumps(result.model_dump(mode="json"), indent=1) + "\n")


if __name__ == "__main__":
    main()
