"""The llm-rubric grading provider of the promptfoo fixture: a rule, no network.

v1 rubric ("names the capital"): pass when the capital is named without a hedge.
v2 rubric ("only the capital"): pass only when the answer is the capital alone.
"""

import json
import re


def call_api(prompt, options, context):
    messages = json.loads(prompt)
    text = messages[-1]["content"]
    output = re.search(r"<Output>\n(.*)\n</Output>", text, re.S).group(1).strip()
    rubric = re.search(r"<Rubric>\n(.*)\n</Rubric>", text, re.S).group(1)
    capital = re.search(r"capital ([A-Z][a-z]+)", rubric).group(1)
    hedged = "might" in output or "possibly" in output
    if "only" in rubric:
        ok = output.rstrip(".") == capital
        reason = f"the answer is exactly {capital}" if ok else f"the answer is not just {capital}"
    else:
        ok = capital in output and not hedged
        reason = f"names {capital}" if ok else (f"only guesses {capital}" if hedged else f"does not name {capital}")
    return {"output": json.dumps({"pass": ok, "score": 1.0 if ok else 0.0, "reason": reason})}
