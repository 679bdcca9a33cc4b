"""Optional dependencies: imported when first needed, with an ImportError that names the extra to install.

Private floor: imports nothing from evalkit.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: The name evalkit is published under on the package index (``import evalkit`` is unchanged): ``evalkit`` itself
#: belongs to an unrelated project there, so every install hint names this one.
DISTRIBUTION = "llm-evalkit"


def install_hint(extra: str) -> str:
    """The command that installs ``extra``, quoted for any shell.

    Examples
    --------
    >>> install_hint("stats")
    'pip install "llm-evalkit[stats]"'
    """
    return f'pip install "{DISTRIBUTION}[{extra}]"'


def require(module: str, *, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise ImportError naming what needed it and the extra that installs it.

    Examples
    --------
    >>> require("json", extra="none", purpose="this example").dumps([1])
    '[1]'
    >>> require("no_such_module_here", extra="stats", purpose="length_bias")
    Traceback (most recent call last):
    ...
    ImportError: length_bias needs no_such_module_here, from the 'stats' extra: pip install "llm-evalkit[stats]"
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{purpose} needs {module.split('.')[0]}, from the '{extra}' extra: "
                          f"{install_hint(extra)}") from exc
