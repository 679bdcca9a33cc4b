"""Every default of the coverage harness's active-labelling and jury entries (tests/harness/active.py) holds on fixed
seeds."""

import pytest

from tests import harness


@pytest.mark.parametrize(("entry", "design", "n"), harness.default_cells("active"))
def test_default_holds(entry, design, n, full_tier):
    harness.check_default(entry, design, n, full=full_tier)
