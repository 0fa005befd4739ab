"""Kubernetes resource quantities (`16`, `500m`, `128Gi`, `1e3`) as exact decimals.

Only what the webhook rules need: parse and compare. Decimal keeps `0.1` + `0.2` exact and
`1Ei` representable, as Go's resource.Quantity does.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

# The pattern Kueue's CRDs put on every Quantity field (k8s resource.Quantity's grammar).
QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
_QUANTITY = re.compile(QUANTITY_PATTERN)
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)")

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}


class QuantityError(ValueError):
    pass


@lru_cache(maxsize=8192)
def _parse_str(text: str) -> Decimal:
    if not _QUANTITY.fullmatch(text):
        raise QuantityError(f"quantities must match the regular expression '{QUANTITY_PATTERN}'")
    number = _NUMBER.match(text)
    assert number is not None  # the full pattern matched, so a number leads
    mantissa = Decimal(number.group(0))
    suffix = text[number.end():]
    if suffix in _BINARY:
        return mantissa * _BINARY[suffix]
    if suffix in _DECIMAL:
        return mantissa * _DECIMAL[suffix]
    try:  # exponent form: 1e3, 2E-2
        return mantissa * (Decimal(10) ** int(suffix[1:]))
    except (InvalidOperation, ValueError) as exc:  # pragma: no cover - the pattern excludes it
        raise QuantityError(f"unsupported quantity suffix {suffix!r}") from exc


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
