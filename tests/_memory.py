"""Peak memory of one call, for the tests that a refused bomb or body stays under its cap."""

import tracemalloc


def peak_traced(call) -> tuple[object, int]:
    """What ``call()`` returned or raised, and the peak of Python's traced memory while it ran (bytes)."""
    tracemalloc.start()
    try:
        outcome = call()
    except Exception as exc:  # noqa: BLE001 - the caller checks which
        outcome = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return outcome, peak
