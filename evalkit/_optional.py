"""Optional dependencies: imported when first needed, with an ImportError that names the extra to install.

Private floor: imports nothing from evalkit.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, *, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise ImportError naming what needed it and the extra that installs it.

    Examples
    --------
    >>> require("json", extra="none", purpose="this example").dumps([1])
    '[1]'
    >>> require("no_such_module_here", extra="stats", purpose="length_bias")
    Traceback (most recent call last):
    ...
    ImportError: length_bias needs no_such_module_here, from the 'stats' extra: pip install "evalkit[stats]"
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{purpose} needs {module.split('.')[0]}, from the '{extra}' extra: "
                          f'pip install "evalkit[{extra}]"') from exc
