"""Markers for tests that need an optional extra: skipped, with the extra named, in an install without it."""

import importlib.util

import pytest


def needs(module: str, extra: str):
    """Skip unless ``module`` can be imported; the reason names the extra that installs it."""
    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"needs the '{extra}' extra: pip install \"llm-evalkit[{extra}]\"")


needs_openai = needs("openai", "openai")
needs_parquet = needs("pyarrow", "parquet")
