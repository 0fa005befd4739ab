"""The Kubernetes CEL extension libraries DRA selectors use: quantity and semver.

The `cel` library (common-expression-language, Rust core) cannot carry opaque Python objects
through an evaluation, so a Quantity or a Semver travels inside CEL as a *tagged map* with one
key, e.g. `{"__kp_quantity__": "85899345920"}` (the exact value as a reduced fraction) or
`{"__kp_semver__": "570.158.1"}`. Canonical values make CEL `==` behave as in Kubernetes
(quantity('1Gi') == quantity('1024Mi')). Functions registered here unwrap, compute, wrap.

Method calls (`q.compareTo(q2)`) reach a registered function with the receiver as first argument.
`compareTo`, `isGreaterThan` and `isLessThan` serve both types, as in Kubernetes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from compiler.core.quantity import QuantityError, Wording, parse_quantity

QUANTITY_TAG = "__kp_quantity__"
SEMVER_TAG = "__kp_semver__"


class CelFunctionError(ValueError):
    """An extension function was called with values it does not accept."""


# --- Quantity ---------------------------------------------------------------------------------

_NOT_A_QUANTITY = "{value!r} is not a Kubernetes quantity (e.g. 40Gi, 500m, 1.5)"
_CEL_WORDING = Wording(bad_type="quantity() takes a string, got {type}", bad_text=_NOT_A_QUANTITY,
                       bad_exponent=_NOT_A_QUANTITY)


@dataclass(frozen=True, order=True)
class Quantity:
    """An exact Kubernetes resource quantity."""

    value: Fraction
    text: str = ""

    @classmethod
    def parse(cls, text: str) -> "Quantity":
        try:
            return cls(parse_quantity(text, accept=(str,), strip=False, wording=_CEL_WORDING), text)
        except QuantityError as error:
            raise CelFunctionError(str(error)) from None

    def tagged(self) -> dict:
        return {QUANTITY_TAG: _fraction_text(self.value)}

    def __str__(self) -> str:
        return self.text or _fraction_text(self.value)


def _fraction_text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def _is_quantity(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and QUANTITY_TAG in value


def unwrap_quantity(value: Any, function: str) -> Fraction:
    if _is_quantity(value):
        return Fraction(value[QUANTITY_TAG])
    raise CelFunctionError(f"{function}: expected a quantity, got {describe_value(value)}")


def _wrap_fraction(value: Fraction) -> dict:
    return {QUANTITY_TAG: _fraction_text(value)}


# --- Semver -----------------------------------------------------------------------------------

_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
                     r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$")


@dataclass(frozen=True)
class Semver:
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: str = ""

    @classmethod
    def parse(cls, text: str, normalize: bool = False) -> "Semver":
        if not isinstance(text, str):
            raise CelFunctionError(f"semver() takes a string, got {type(text).__name__}")
        candidate = _normalize(text) if normalize else text
        match = _SEMVER.match(candidate)
        if not match:
            raise CelFunctionError(f"{text!r} is not a semantic version (MAJOR.MINOR.PATCH)"
                                   + ("" if normalize else "; semver(s, true) accepts v1.2 forms"))
        major, minor, patch, pre, build = match.groups()
        return cls(int(major), int(minor), int(patch), tuple(pre.split(".")) if pre else (), build or "")

    def key(self) -> tuple:
        # Semver precedence: a release sorts after its pre-releases; build metadata is ignored.
        pre_key = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.prerelease)
        return (self.major, self.minor, self.patch, 0 if self.prerelease else 1, pre_key)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + self.build
        return text

    def tagged(self) -> dict:
        return {SEMVER_TAG: str(self)}


def _normalize(text: str) -> str:
    """Kubernetes' normalisation: optional leading v, missing minor/patch become 0, leading
    zeros dropped (570.158.01 -> 570.158.1)."""
    body = text[1:] if text[:1] in ("v", "V") else text
    split = re.match(r"^([0-9.]*)(.*)$", body)
    core, rest = (split.group(1), split.group(2)) if split else ("", body)
    parts = core.split(".") if core else []
    if not parts or len(parts) > 3 or any(not p.isdigit() for p in parts):
        return text
    parts = [str(int(p)) for p in parts] + ["0"] * (3 - len(parts))
    return ".".join(parts) + rest


def _is_semver(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and SEMVER_TAG in value


def unwrap_semver(value: Any, function: str) -> Semver:
    if _is_semver(value):
        return Semver.parse(value[SEMVER_TAG])
    raise CelFunctionError(f"{function}: expected a semver, got {describe_value(value)}")


# --- Values coming back to Python -------------------------------------------------------------

def describe_value(value: Any) -> str:
    if _is_quantity(value):
        return "quantity"
    if _is_semver(value):
        return "semver"
    return {bool: "bool", int: "int", float: "double", str: "string", bytes: "bytes",
            list: "list", dict: "map", type(None): "null"}.get(type(value), type(value).__name__)


def to_python(value: Any) -> Any:
    """Turn tagged maps in an evaluation result back into Quantity / Semver objects."""
    if _is_quantity(value):
        return Quantity(Fraction(value[QUANTITY_TAG]))
    if _is_semver(value):
        return Semver.parse(value[SEMVER_TAG])
    if isinstance(value, list):
        return [to_python(v) for v in value]
    if isinstance(value, dict):
        return {k: to_python(v) for k, v in value.items()}
    return value


def to_cel(value: Any) -> Any:
    """Turn Quantity / Semver objects inside variables into tagged maps."""
    if isinstance(value, (Quantity, Semver)):
        return value.tagged()
    if isinstance(value, (list, tuple)):
        return [to_cel(v) for v in value]
    if isinstance(value, dict):
        return {k: to_cel(v) for k, v in value.items()}
    return value


# --- The functions ----------------------------------------------------------------------------

def _sign(value: Fraction | int) -> int:
    return (value > 0) - (value < 0)


def _compare(function: str, left: Any, right: Any) -> int:
    if _is_quantity(left):
        return _sign(unwrap_quantity(left, function) - unwrap_quantity(right, function))
    if _is_semver(left):
        a, b = unwrap_semver(left, function).key(), unwrap_semver(right, function).key()
        return (a > b) - (a < b)
    raise CelFunctionError(f"{function}: no overload for {describe_value(left)} "
                           "(it is defined on quantity and semver values)")


def _quantity_operand(value: Any, function: str) -> Fraction:
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    return unwrap_quantity(value, function)


def _as_integer(value: Any) -> int:
    number = unwrap_quantity(value, "asInteger")
    if number.denominator != 1 or not -(2**63) <= number.numerator < 2**63:
        raise CelFunctionError(f"asInteger: {_fraction_text(number)} is not representable as int64")
    return number.numerator


def _semver_part(name: str) -> Callable[[Any], int]:
    def part(value: Any) -> int:
        return getattr(unwrap_semver(value, name), name)
    return part


def _is_quantity_text(text: Any) -> bool:
    try:
        Quantity.parse(text)
        return True
    except CelFunctionError:
        return False


def _is_semver_text(text: Any, normalize: bool = False) -> bool:
    try:
        Semver.parse(text, normalize)
        return True
    except CelFunctionError:
        return False


def _includes(values: Any, item: Any) -> bool:
    if not isinstance(values, list):
        raise CelFunctionError(f"includes: expected a list attribute, got {describe_value(values)}")
    return item in values


def _find(text: Any, pattern: Any) -> str:
    if not isinstance(text, str) or not isinstance(pattern, str):
        raise CelFunctionError("find: expected string.find(string)")
    match = re.search(pattern, text)
    return match.group(0) if match else ""


def _find_all(text: Any, pattern: Any, limit: int = -1) -> list[str]:
    if not isinstance(text, str) or not isinstance(pattern, str):
        raise CelFunctionError("findAll: expected string.findAll(string)")
    found = [m.group(0) for m in re.finditer(pattern, text)]
    return found if limit < 0 else found[:limit]


KUBERNETES_FUNCTIONS: dict[str, Callable[..., Any]] = {
    # DRAListTypeAttributes (1.36+): list-valued attributes
    "includes": _includes,
    # Kubernetes regex library
    "find": _find,
    "findAll": _find_all,
    "quantity": lambda text: Quantity.parse(text).tagged(),
    "isQuantity": _is_quantity_text,
    "compareTo": lambda a, b: _compare("compareTo", a, b),
    "isGreaterThan": lambda a, b: _compare("isGreaterThan", a, b) > 0,
    "isLessThan": lambda a, b: _compare("isLessThan", a, b) < 0,
    "add": lambda a, b: _wrap_fraction(unwrap_quantity(a, "add") + _quantity_operand(b, "add")),
    "sub": lambda a, b: _wrap_fraction(unwrap_quantity(a, "sub") - _quantity_operand(b, "sub")),
    "asInteger": _as_integer,
    "isInteger": lambda q: unwrap_quantity(q, "isInteger").denominator == 1
    and -(2**63) <= unwrap_quantity(q, "isInteger").numerator < 2**63,
    "asApproximateFloat": lambda q: float(unwrap_quantity(q, "asApproximateFloat")),
    "sign": lambda q: _sign(unwrap_quantity(q, "sign")),
    "semver": lambda text, normalize=False: Semver.parse(text, bool(normalize)).tagged(),
    "isSemver": _is_semver_text,
    "major": _semver_part("major"),
    "minor": _semver_part("minor"),
    "patch": _semver_part("patch"),
}
