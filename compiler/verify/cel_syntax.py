"""Does a CEL expression parse? For DRA selectors and Kueue deviceSelectors.

The `cel` library's parser lacks CEL's optional syntax (`.?field`, `[?key]`), which Kubernetes
enables; an expression using it that fails to parse here is not reported (we cannot judge it),
rather than refused wrongly.
"""

from __future__ import annotations

import re
from functools import lru_cache

from compiler.cel.library import cel

MAX_EXPRESSION_LENGTH = 10 * 1024  # resource.k8s.io CELSelectorExpressionMaxLength
_OPTIONAL_SYNTAX = re.compile(r"\.\?|\[\?")


@lru_cache(maxsize=4096)
def syntax_error(expression: str) -> str | None:
    """None if the expression parses (or uses syntax we cannot parse), else the parser's message."""
    try:
        cel.compile(expression)
    except ValueError as exc:
        if _OPTIONAL_SYNTAX.search(expression):
            return None
        return str(exc)
    return None
