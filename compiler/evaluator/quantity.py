"""Exact Kubernetes quantities.

Kueue keeps every resource as an int64: cpu in milli-units, everything else in whole units
(rounded up). We do the same with integers parsed through `Decimal`, so `0.1` cpu is exactly
100 and `1Gi` memory exactly 1073741824, with no float drift in quota sums.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12),
            "P": Decimal(10**15), "E": Decimal(10**18)}
_PATTERN = re.compile(r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$")

# Resources Kueue counts in milli-units (resources.ResourceValue uses MilliValue for cpu only).
MILLI_RESOURCES = frozenset({"cpu"})


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


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
    match = _PATTERN.match(text.strip())
    if not match:
        raise QuantityError(f"{text!r} is not a Kubernetes quantity (examples: 16, 500m, 128Gi, 1.5)")
    sign, number, exponent, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation as error:  # pragma: no cover - the regex already guards this
        raise QuantityError(f"{text!r} is not a quantity") from error
    if exponent:
        value = value.scaleb(int(exponent[1:]))
    elif suffix in _BINARY:
        value = value * _BINARY[suffix]
    else:
        value = value * _DECIMAL[suffix or ""]
    return -value if sign == "-" else value


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
