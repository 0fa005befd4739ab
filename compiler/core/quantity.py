"""Kubernetes resource quantities: the one parser, the one exact type, the one formatter.

Every reader of a quantity (policy validation, the admission engine's input, the verify stage,
CEL's `quantity()`) goes through `parse_quantity`; each passes its own `Wording` for errors and
says which YAML types it accepts, so the grammar, the bounds and the bool/int/float rules live
here once.

The exact type is `fractions.Fraction`. Why not an integer of milli- or nano-units: the compiler
divides quota (16 CPUs x 3/7 of a GPU for a MIG instance) and must round the *result* once, up,
where output is written; a fixed unit would round every intermediate step, and no single unit
fits both cpu (milli) and a memory quantity written as `1.5Ki` or `100n`. A Fraction holds every
quantity the grammar can spell exactly and compares `1Gi` == `1024Mi`. The engine converts to
Kueue's int64 representation (milli-units for cpu, whole units rounded up otherwise) with
`to_units`, once per distinct text.

Input is bounded before any arithmetic. Kubernetes reads any number of digits and an exponent
up to an int32, but it holds a quantity as an int64 at nano-unit scale at best (about 28
significant digits); anything past that is rounded or capped. A parser that takes `1e99999999`
literally computes a 100-million-digit number and hangs, so a number may have at most
`MAX_DIGITS` digits and a decimal exponent at most `MAX_EXPONENT` in magnitude: generous for any
real resource, and each value costs microseconds.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from fractions import Fraction

# The grammar of Kubernetes' resource.Quantity, as Kueue's CRDs state it on every quantity field.
QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
_QUANTITY = re.compile(QUANTITY_PATTERN)
_NUMBER = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)")
BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

MAX_DIGITS = 64      # digits in the number part (integer and fraction)
MAX_EXPONENT = 64    # |decimal exponent| after `e`
# Sign, digits, point, `e`, exponent sign and digits: nothing longer can be a bounded quantity.
MAX_LENGTH = MAX_DIGITS + 8

# Resources Kueue counts in milli-units (resources.ResourceValue uses MilliValue for cpu only).
MILLI_RESOURCES = frozenset({"cpu"})


class QuantityError(ValueError):
    pass


@dataclass(frozen=True)
class Wording:
    """How one reader words a value that is not a quantity. Templates see `value` (the value as
    given) and `type` (its Python type's name)."""

    bad_type: str = "{value!r} is not a quantity"
    bad_text: str = "{value!r} is not a Kubernetes quantity (examples: 16, 500m, 128Gi, 1.5)"
    bad_exponent: str = "{value!r}: a quantity's exponent must be a whole number"
    out_of_range: str = (f"{{value!r}}: a quantity may have at most {MAX_DIGITS} digits and an exponent "
                         f"between -{MAX_EXPONENT} and {MAX_EXPONENT}")

    def error(self, template: str, value: object) -> QuantityError:
        if isinstance(value, str) and len(value) > 2 * MAX_LENGTH:
            value = value[:MAX_LENGTH] + "..."  # a message names the value, it need not repeat a megabyte
        return QuantityError(template.format(value=value, type=type(value).__name__))


DEFAULT_WORDING = Wording()
ANY_NUMBER = (str, int, float)


def parse_quantity(value: object, *, accept: tuple[type, ...] = ANY_NUMBER, strip: bool = True,
                   wording: Wording = DEFAULT_WORDING) -> Fraction:
    """The exact value of a quantity: '16', '500m', '128Gi', '1.5', '1e3', or (when `accept`
    allows) a YAML int or float. `strip` drops surrounding blanks (YAML readers keep them only in
    quoted strings). Raises QuantityError worded by `wording`."""
    if isinstance(value, bool) or not isinstance(value, accept):
        raise wording.error(wording.bad_type, value)
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise wording.error(wording.bad_type, value)
        value = repr(value)  # the shortest text that reads back as this float: 0.1 is 1/10
    text = value.strip() if strip else value  # type: ignore[union-attr]  # str by now
    try:
        return _parse_text(text)
    except _GrammarError as error:
        raise wording.error(getattr(wording, error.args[0]), value) from None


class _GrammarError(Exception):
    """Which `Wording` field describes the failure."""


@functools.lru_cache(maxsize=65536)
def _parse_text(text: str) -> Fraction:
    # The same few quantity strings recur across thousands of queues: parse each once.
    if len(text) > MAX_LENGTH:
        raise _GrammarError("out_of_range" if _QUANTITY.match(text[:MAX_LENGTH]) else "bad_text")
    if not _QUANTITY.match(text):
        raise _GrammarError("bad_text")
    number = _NUMBER.match(text)
    assert number is not None  # the full pattern matched
    if sum(c.isdigit() for c in number.group(0)) > MAX_DIGITS:
        raise _GrammarError("out_of_range")
    value = Fraction(number.group(0))
    suffix = text[number.end():]
    if suffix in BINARY_SUFFIXES:
        return value * BINARY_SUFFIXES[suffix]
    if suffix in _DECIMAL_EXPONENTS:
        return value * Fraction(10) ** _DECIMAL_EXPONENTS[suffix]
    exponent = Fraction(suffix[1:])
    if exponent.denominator != 1:
        raise _GrammarError("bad_exponent")
    if abs(exponent) > MAX_EXPONENT:
        raise _GrammarError("out_of_range")
    return value * Fraction(10) ** int(exponent)


def to_units(resource: str, value: object) -> int:
    """The int64 Kueue would hold: milli-units for cpu, whole units (ceil) otherwise."""
    if isinstance(value, str):
        return _text_units(resource, value)
    return _units(resource, parse_quantity(value))


@functools.lru_cache(maxsize=65536)
def _text_units(resource: str, text: str) -> int:
    return _units(resource, parse_quantity(text))


def _units(resource: str, value: Fraction) -> int:
    if resource in MILLI_RESOURCES:
        value = value * 1000
    return math.ceil(value) if value >= 0 else -math.ceil(-value)


def round_cpu(value: Fraction) -> Fraction:
    """Up to the next milli-CPU: Kubernetes' finest CPU unit."""
    return Fraction(math.ceil(value * 1000), 1000)


def round_memory(value: Fraction) -> Fraction:
    """Up to the next whole MiB: exact bytes of 3/7 of 128Gi are unreadable."""
    mib = 2**20
    return Fraction(math.ceil(value / mib) * mib)


def is_binary_resource(resource: str) -> bool:
    """Resources people count in powers of two (and write as Ki/Mi/Gi)."""
    return resource in ("memory", "ephemeral-storage", "storage") or resource.startswith("hugepages-")


def format_quantity(value: Fraction | int, *, binary: bool = False) -> str:
    """Canonical, human form, for output only. A fraction is rounded *up* to the milli-unit (quota
    is never rounded below what a workload needs); binary values use Ki/Mi/Gi/... when exact."""
    if value < 0:
        return "-" + format_quantity(-value, binary=binary)
    value = Fraction(value)
    if value.denominator != 1:
        millis = math.ceil(value * 1000)
        if millis % 1000 == 0:
            return str(millis // 1000)
        return f"{millis}m"
    integer = int(value)
    if binary and integer:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = BINARY_SUFFIXES[suffix]
            if integer % unit == 0:
                return f"{integer // unit}{suffix}"
    return str(integer)


def format_units(resource: str, amount: int) -> str:
    """An engine amount (see `to_units`) as Kubernetes prints it: `1500m`, `2`, `10Mi`."""
    if resource in MILLI_RESOURCES:
        return format_quantity(Fraction(amount, 1000))
    return format_quantity(amount, binary=is_binary_resource(resource))


def canonical_quantity(text: object) -> object:
    """A quantity as Kubernetes' resource.Quantity writes it in JSON (its canonical form, which
    Kueue hashes for a pod group's roles): the format the text was written in (binary Ki..Ei,
    decimal suffix, or exponent) with the largest suffix that keeps an integer mantissa, rounded
    up at nano precision. Unreadable text is returned as is."""
    raw = str(text).strip()
    try:
        value = parse_quantity(raw)
    except QuantityError:
        return text
    if value == 0:
        return "0"
    sign, value = ("-", -value) if value < 0 else ("", value)
    if raw.endswith("i") and value.denominator == 1 and value >= 1024:
        for suffix, unit in sorted(BINARY_SUFFIXES.items(), key=lambda item: -item[1]):
            if value % unit == 0:
                return f"{sign}{value // unit}{suffix}"
        return f"{sign}{value}"
    power, mantissa = -9, -(-value * 10 ** 9 // 1)
    while power < 18 and mantissa % 1000 == 0:
        mantissa, power = mantissa // 1000, power + 3
    if "e" in raw.lower() and not raw.endswith(("Ei", "E")):
        return f"{sign}{mantissa}" + (f"e{power}" if power else "")
    return f"{sign}{mantissa}{_DECIMAL_SUFFIX_OF_POWER[power]}"


_DECIMAL_SUFFIX_OF_POWER = {power: suffix for suffix, power in _DECIMAL_EXPONENTS.items()}
