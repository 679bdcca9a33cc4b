"""Write the OpenAI evals fixture logs ``match.jsonl`` and ``closedqa.jsonl`` (evals 3.0.1.post1, offline).

Run with evals installed (``pip install evals==3.0.1.post1``): ``python make_openai_evals.py``. The evals
run through evals' own command-line entry (``evals.cli.oaieval.run``) with the registry in ``registry/``
and the completion functions in ``canned.py``, and are written by evals' ``LocalRecorder``. evals builds
an OpenAI client when it is imported, so a placeholder key is set; the registry is told that the OpenAI
API lists no models, so that no request leaves the machine.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ.setdefault("OPENAI_API_KEY", "unused-offline-placeholder")
os.environ.update(EVALS_THREADS="1", EVALS_SEQUENTIAL="1", EVALS_SHOW_EVAL_PROGRESS="")
sys.path.insert(0, str(HERE))

from evals.cli import oaieval  # noqa: E402
from evals.registry import Registry  # noqa: E402


def main():
    for eval_name, fns, out in (("capitals", "canned-answerer", "match.jsonl"),
                                ("capitals-graded", "canned-answerer,canned-grader", "closedqa.jsonl")):
        registry = Registry()
        registry.__dict__["api_model_ids"] = []  # a cached property: no call to list the API's models
        path = HERE / out
        path.unlink(missing_ok=True)
        args = oaieval.get_parser().parse_args([fns, eval_name, "--registry_path", str(HERE / "registry"),
                                                "--record_path", str(path), "--seed", "20220722"])
        oaieval.run(args, registry=registry)


if __name__ == "__main__":
    main()
