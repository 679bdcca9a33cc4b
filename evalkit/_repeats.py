"""What makes repeat r of a judge run differ from the first: one rule, for the live calls and the Batch API alike."""

from __future__ import annotations

#: What a repeat records of the model's parameters (``attrs["repeats"]``): what made its answers differ.
DRAW_RECORD = ("seed", "temperature")


def repeat_model(model, params: dict, r: int):
    """The model for repeat ``r`` (1-based) and the extra cache-key parameters: repeat 1 is the model as given (its
    answers are a single run's); a model with ``replace`` (:class:`evalkit.models.OpenAIChat`) draws repeat ``r`` with
    ``seed = (its seed or 0) + r - 1``; any other callable is called again, with the repeat in its cache key."""
    if r == 1:
        return model, None
    if callable(getattr(model, "replace", None)):
        return model.replace(seed=int(params.get("seed") or 0) + r - 1), None
    return model, {"repeat": r}
