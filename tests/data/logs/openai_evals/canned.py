"""Completion functions for the OpenAI evals fixture: canned answers and a rule-based grader, no network."""

from evals.api import CompletionResult
from evals.record import record_error

ANSWERS = {"France": "Paris", "Italy": "Rome maybe", "Japan": "Tokyo", "Canada": "Toronto", "Kenya": "Nairobi"}


class Result(CompletionResult):
    def __init__(self, text):
        self.text = text

    def get_completions(self):
        return [self.text]


def _text(prompt):
    return prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in prompt)


class Answerer:
    def __init__(self, **kwargs):
        pass

    def __call__(self, prompt, **kwargs):
        text = _text(prompt)
        if "Peru" in text:  # evals' own error event, recorded under the current sample, then an empty answer
            record_error("provider call failed", RuntimeError("simulated provider outage"))
            return Result("")
        return Result(next(answer for country, answer in ANSWERS.items() if country in text))


class Grader:
    """closedqa grader: Y when the submission is exactly the criterion's city, N otherwise; no letter for Kenya."""

    def __init__(self, **kwargs):
        pass

    def __call__(self, prompt, **kwargs):
        text = _text(prompt)
        submission = text.split("[Submission]: ", 1)[1].split("\n***", 1)[0].strip()
        criterion = text.split("[Criterion]: ", 1)[1].split("\n***", 1)[0].strip()
        if submission == "Nairobi":
            return Result("I cannot decide.")
        verdict = "Y" if submission and criterion.endswith(submission) else "N"
        return Result(f"The submission is {submission!r}; the criterion asks for {criterion!r}.\n{verdict}\n{verdict}")
