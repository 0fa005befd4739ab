"""Kubernetes resource quantities (`16`, `500m`, `128Gi`, `1e3`) as exact decimals.

Only what the webhook rules need: parse and compare. Decimal keeps `0.1` + `0.2` exact and
`1Ei` representable, as Go's resource.Quantity does.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from functools import lru_cache

from compiler.quantity import QUANTITY_PATTERN, QuantityError, parse_quantity_text

__all__ = ["QUANTITY_PATTERN", "QuantityError", "parse_quantity", "show"]


@lru_cache(maxsize=8192)
def _parse_str(text: str) -> Decimal:
    try:
        value = parse_quantity_text(text)
    except QuantityError:
        raise QuantityError(f"quantities must match the regular expression '{QUANTITY_PATTERN}'") from None
    with localcontext() as context:
        context.prec = 80  # quantities are finite decimals: this is exact
        return Decimal(value.numerator) / Decimal(value.denominator)


def parse_quantity(value: object) -> Decimal:
    """A quantity from a YAML value: int, or a string in the Kubernetes grammar."""
    if isinstance(value, bool):
        raise QuantityError("a quantity must be an integer or a string")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, str):
        return _parse_str(value)
    raise QuantityError("a quantity must be an integer or a string")


def show(value: object) -> str:
    """How a quantity is shown in a message: as written."""
    return str(value)
