"""Kubernetes resource quantities, exactly (no floats): parse, compare, add, format.

The compiler needs quantities for cpu/memory quota arithmetic (e.g. 16 CPUs x 3/7 of a GPU) and
must print them the way Kubernetes users write them. Values are kept as `Fraction`s so that
arithmetic is exact; formatting rounds *up* to the nearest milli-unit (quota is never rounded
down below what a workload needs).
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

# The grammar of Kubernetes' resource.Quantity, as Kueue's CRDs state it on every quantity field.
QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
_QUANTITY = re.compile(QUANTITY_PATTERN)
_NUMBER = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
            "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
            "P": Fraction(10**15), "E": Fraction(10**18)}
BINARY_SUFFIXES = dict(_BINARY)


class QuantityError(ValueError):
    pass


@functools.lru_cache(maxsize=65536)
def parse_quantity_text(text: str) -> Fraction:
    """The exact value of a quantity string, as Kubernetes reads it. The one grammar every part of
    kueue-policy uses (policy values, the verify stage, the admission engine, CEL's quantity()).
    Raises QuantityError; callers word the message for their context."""
    if not _QUANTITY.match(text):
        raise QuantityError(f"{text!r} is not a Kubernetes quantity (examples: 16, 500m, 128Gi, 1.5)")
    number = _NUMBER.match(text)
    value = Fraction(number.group(0))  # type: ignore[union-attr]  # the full pattern matched
    suffix = text[number.end():]  # type: ignore[union-attr]
    if suffix in _BINARY:
        value *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        value *= _DECIMAL[suffix]
    else:
        exponent = Fraction(suffix[1:])
        if exponent.denominator != 1:
            raise QuantityError(f"{text!r}: a quantity's exponent must be a whole number")
        value *= Fraction(10) ** int(exponent)
    return value


def parse_quantity(value: str | int | float) -> Fraction:
    """Parse '16', '500m', '128Gi', '1.5', 1e3 ... into an exact Fraction. Raises QuantityError."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a quantity")
        return Fraction(str(value))
    return parse_quantity_text(str(value).strip())


def format_quantity(value: Fraction, *, binary: bool = False) -> str:
    """Canonical, human form. Memory-like values (binary=True) use Ki/Mi/Gi/Ti when exact."""
    if value < 0:
        return "-" + format_quantity(-value, binary=binary)
    if value.denominator != 1:
        millis = math.ceil(value * 1000)
        if millis % 1000 == 0:
            return str(millis // 1000)
        return f"{millis}m"
    integer = int(value)
    if binary and integer:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = _BINARY[suffix]
            if integer % unit == 0:
                return f"{integer // unit}{suffix}"
    return str(integer)
