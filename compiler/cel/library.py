"""The `cel` library (common-expression-language), imported without its interactive shell.

The package's `__init__` imports `cel.cli`, a REPL built on prompt_toolkit, which costs about
half a second at the start of every command (more than loading a 1,000-team policy) and which
nothing here uses. An empty `cel.cli` registered before the first import of the package keeps
its own modules (the compiled extension and `cel.stdlib`) as they are and leaves the shell out.
Every module of kueue-policy imports the library from here.
"""

from __future__ import annotations

import sys
import types

if "cel" not in sys.modules:
    sys.modules.setdefault("cel.cli", types.ModuleType("cel.cli", "cel's shell: not used by kueue-policy"))

import cel  # noqa: E402  (after the shell is left out)
from cel import stdlib  # noqa: E402

__all__ = ["cel", "stdlib"]
