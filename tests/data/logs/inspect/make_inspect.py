"""Write the inspect_ai logs: ``data/demo/logs/inspect_v1.eval``, ``inspect_v2.eval`` and ``inspect_labels.csv``, and
``inspect_small.eval`` / ``inspect_small.json`` beside this script.

Run with inspect_ai installed (``pip install inspect-ai==0.3.285``), offline:
``python make_inspect.py``. The model under evaluation and the grader are inspect_ai's own ``mockllm``
provider with ``custom_outputs`` callables, so the answers and grades follow the rules below and no
network is used. Also writes ``inspect_labels.csv``: the label a reader would give each answer, by the
answer's kind (see data/demo/logs/README.md).

Ten questions, two epochs each. Each (question, epoch) gets an answer of one kind:
  correct   the capital alone                         label PASS
  verbose   "The capital of X is Y."                  label PASS
  hedged    "It might be Y, or possibly Z."           label FAIL (does not commit)
  extra     "Y, which is also the largest port in X." label FAIL (adds a false claim)
  wrong     another city                              label FAIL
  empty     ""                                        label FAIL
and one (question, epoch) raises an error in the model (a simulated outage).
Scorers: match(), includes(), model_graded_qa(partial_credit=True) with a mockllm grader.
Grader v1 (inspect_ai's default instructions, partial credit): C when the capital is named, P when it
is named with a hedge, I otherwise; it cannot grade an empty answer (no GRADE line: unscored).
Grader v2 (stricter instructions): C only for the capital alone; I otherwise (including an empty answer).
"""

import csv
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes, match, model_graded_qa
from inspect_ai.solver import generate

HERE = Path(__file__).resolve().parent
DEMO = HERE.parents[3] / "data" / "demo" / "logs"  # the logs the notebook reads ship with the package

QUESTIONS = [  # id, country, capital, a wrong city, the answer kind in epochs 1 and 2
    ("q01", "France", "Paris", "Lyon", ("correct", "verbose")),
    ("q02", "Italy", "Rome", "Milan", ("correct", "hedged")),
    ("q03", "Japan", "Tokyo", "Osaka", ("extra", "correct")),
    ("q04", "Canada", "Ottawa", "Toronto", ("wrong", "wrong")),
    ("q05", "Australia", "Canberra", "Sydney", ("wrong", "correct")),
    ("q06", "Kenya", "Nairobi", "Mombasa", ("verbose", "verbose")),
    ("q07", "Peru", "Lima", "Cusco", ("hedged", "extra")),
    ("q08", "Norway", "Oslo", "Bergen", ("correct", "error")),
    ("q09", "Egypt", "Cairo", "Alexandria", ("empty", "correct")),
    ("q10", "Chile", "Santiago", "Valparaiso", ("extra", "hedged")),
]
BY_QUESTION = {f"What is the capital of {country}?": row for row in QUESTIONS for country in [row[1]]}
LABEL = {"correct": "PASS", "verbose": "PASS", "hedged": "FAIL", "extra": "FAIL", "wrong": "FAIL", "empty": "FAIL"}
STRICT = "Only the bare name of the capital is correct."
V2_INSTRUCTIONS = (f"{STRICT} An answer that hedges, restates the question or adds any claim is incorrect. "
                   "Reply with 'GRADE: C' or 'GRADE: I' on the last line.")


def reply(text: str) -> ModelOutput:
    output = ModelOutput.from_content(model="mockllm", content=text)
    words = len(text.split())
    output.usage = ModelUsage(input_tokens=20, output_tokens=words, total_tokens=20 + words)  # no tokenizer download
    return output


def answer_text(kind, country, capital, wrong):
    return {"correct": capital, "verbose": f"The capital of {country} is {capital}.",
            "hedged": f"It might be {capital}, or possibly {wrong}.",
            "extra": f"{capital}, which is also the largest port in {country}.", "wrong": wrong, "empty": ""}[kind]


def answerer():
    calls = {}

    def respond(messages, tools, tool_choice, config):
        sample_id, country, capital, wrong, kinds = BY_QUESTION[messages[-1].text]
        epoch = calls[sample_id] = calls.get(sample_id, 0) + 1  # max_samples=1: the epochs of a sample run in order
        kind = kinds[epoch - 1]
        if kind == "error":
            raise RuntimeError("simulated provider outage")
        return reply(answer_text(kind, country, capital, wrong))
    return respond


def grader(version):
    def grade(messages, tools, tool_choice, config):
        prompt = messages[-1].text
        submission = prompt.split("[Submission]: ", 1)[1].split("\n***", 1)[0].strip()
        capital = prompt.split("[Criterion]: ", 1)[1].split("\n***", 1)[0].strip()
        hedged = "might" in submission or "possibly" in submission
        if version == "v1":
            if not submission:
                return reply("There is no submission to assess.")  # no GRADE line: inspect_ai leaves it unscored
            if capital in submission:
                return reply(f"The submission names {capital}" + (", but only as a guess.\nGRADE: P" if hedged else ".\nGRADE: C"))
            return reply(f"The submission does not name {capital}.\nGRADE: I")
        if submission.rstrip(".") == capital:
            return reply(f"The submission is exactly {capital}.\nGRADE: C")
        return reply(f"The submission is not just {capital}.\nGRADE: I")
    return grade


def task(version, ids=None):
    samples = [Sample(id=sid, input=f"What is the capital of {country}?", target=capital)
               for sid, country, capital, _, _ in QUESTIONS if ids is None or sid in ids]
    graded = model_graded_qa(partial_credit=True, model=get_model(f"mockllm/grader-{version}", custom_outputs=grader(version)),
                             instructions=None if version == "v1" else V2_INSTRUCTIONS)
    return Task(name="capitals", dataset=samples, solver=generate(), scorer=[match(), includes(), graded], epochs=2,
                metadata={"grader": version})


def run(version, name, ids=None):
    with tempfile.TemporaryDirectory() as tmp:
        log = eval(task(version, ids), model=get_model("mockllm/answerer", custom_outputs=answerer()), log_dir=tmp,
                   log_format="eval", fail_on_error=False, max_samples=1, display="none")[0]
        if log.status != "success":
            sys.exit(f"the {name} run ended with status {log.status}: {log.error}")
        shutil.copy(log.location, (HERE if name == "inspect_small" else DEMO) / f"{name}.eval")
    return log


def main():
    for version in ("v1", "v2"):
        run(version, f"inspect_{version}")
    run("v1", "inspect_small", ids=["q02", "q08", "q09"])
    with tempfile.TemporaryDirectory() as tmp:  # the same log in inspect_ai's JSON format, by its own converter
        subprocess.run([str(Path(sys.executable).parent / "inspect"), "log", "convert", str(HERE / "inspect_small.eval"),
                        "--to", "json", "--output-dir", tmp], check=True)
        shutil.copy(Path(tmp) / "inspect_small.json", HERE / "inspect_small.json")
    with open(DEMO / "inspect_labels.csv", "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["sample_id", "epoch", "kind", "label"])
        for sid, _, _, _, kinds in QUESTIONS:
            for epoch, kind in enumerate(kinds, start=1):
                if kind != "error":
                    writer.writerow([sid, epoch, kind, LABEL[kind]])


if __name__ == "__main__":
    main()
