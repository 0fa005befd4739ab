"""Exact Kubernetes quantities.

Kueue keeps every resource as an int64: cpu in milli-units, everything else in whole units
(rounded up). We do the same with integers parsed through `Decimal`, so `0.1` cpu is exactly
100 and `1Gi` memory exactly 1073741824, with no float drift in quota sums.
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal, localcontext

from compiler.quantity import BINARY_SUFFIXES as _BINARY
from compiler.quantity import QuantityError, parse_quantity_text

__all__ = ["MILLI_RESOURCES", "QuantityError", "format_units", "parse_decimal", "to_units"]

# Resources Kueue counts in milli-units (resources.ResourceValue uses MilliValue for cpu only).
MILLI_RESOURCES = frozenset({"cpu"})


def parse_decimal(text: object) -> Decimal:
    """The exact value of a quantity like `500m`, `1.5`, `12Gi`, `1e3`."""
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, int):
        return Decimal(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"{text!r} is not a quantity")
        return Decimal(repr(text))
    if not isinstance(text, str):
        raise QuantityError(f"{text!r} is not a quantity")
    value = parse_quantity_text(text.strip())
    with localcontext() as context:
        context.prec = 80  # quantities are finite decimals: this is exact
        return Decimal(value.numerator) / Decimal(value.denominator)


def to_units(resource: str, text: object) -> int:
    """The int64 Kueue would hold: milli-units for cpu, whole units (ceil) otherwise."""
    if isinstance(text, str):
        # The same few quantity strings recur across thousands of queues: parse each once.
        return _text_units(resource, text)
    return _to_units(resource, text)


@functools.lru_cache(maxsize=65536)
def _text_units(resource: str, text: str) -> int:
    return _to_units(resource, text)


def _to_units(resource: str, text: object) -> int:
    value = parse_decimal(text)
    if resource in MILLI_RESOURCES:
        value = value * 1000
    return int(math.ceil(value)) if value >= 0 else -int(math.ceil(-value))


def format_units(resource: str, amount: int) -> str:
    """Render an internal amount back as Kubernetes prints it (`1500m`, `2`, `10Mi`)."""
    if resource in MILLI_RESOURCES:
        if amount % 1000 == 0:
            return str(amount // 1000)
        return f"{amount}m"
    if amount != 0 and _is_binary_resource(resource):
        for suffix, factor in sorted(_BINARY.items(), key=lambda item: -item[1]):
            if amount % factor == 0:
                return f"{amount // factor}{suffix}"
    return str(amount)


def _is_binary_resource(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage", "storage") or resource.startswith("hugepages-")
