"""The `device` variable of a DRA CEL selector, built from a ResourceSlice device.

Kubernetes exposes (resource.k8s.io/v1):
    device.driver                          string
    device.attributes['<domain>'].<name>   bool / int / string / semver (version attributes)
    device.capacity['<domain>'].<name>     quantity
    device.allowMultipleAllocations        bool
An attribute written without a domain belongs to the driver's domain; an unknown domain reads as
an empty map. A map cannot answer "any key" in the `cel` library, so `device_variable_for` adds
an empty map for every string literal of the expression that is not already a domain: exactly
the lookups `device.attributes['x']` the expression can make.
"""

from __future__ import annotations

from typing import Any, Mapping

from compiler.cel.engine import Program
from compiler.cel.k8s_ext import CelFunctionError, Quantity, Semver
from compiler.core.shapes import checked


class DeviceDataError(ValueError):
    """A device's attribute or capacity value cannot be read."""


_SCALAR_KINDS = ("string", "int", "bool", "version")
_LIST_KINDS = {"strings": "string", "ints": "int", "bools": "bool", "versions": "version"}


def _split_name(qualified: str, driver: str) -> tuple[str, str]:
    domain, sep, name = qualified.rpartition("/")
    return (domain, name) if sep else (driver, qualified)


def _scalar(kind: str, value: Any, where: str) -> Any:
    if kind == "version":
        try:
            return Semver.parse(str(value)).tagged()
        except CelFunctionError as error:
            raise DeviceDataError(f"{where}: {error}") from None
    if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        raise DeviceDataError(f"{where}: int attribute has value {value!r}")
    if kind == "bool" and not isinstance(value, bool):
        raise DeviceDataError(f"{where}: bool attribute has value {value!r}")
    if kind == "string" and not isinstance(value, str):
        raise DeviceDataError(f"{where}: string attribute has value {value!r}")
    return value


def _attribute_value(raw: Any, where: str) -> Any:
    if not isinstance(raw, Mapping):
        raise DeviceDataError(f"{where}: an attribute is a map with one of string/int/bool/version")
    kinds = [k for k in raw if k in _SCALAR_KINDS or k in _LIST_KINDS]
    if len(kinds) != 1:
        raise DeviceDataError(f"{where}: an attribute sets exactly one of "
                              f"{'/'.join(_SCALAR_KINDS)} (found {sorted(raw) or 'none'})")
    kind = kinds[0]
    if kind in _LIST_KINDS:
        values = checked(raw[kind], list, f"{where}: {kind}", DeviceDataError)
        return [_scalar(_LIST_KINDS[kind], v, where) for v in values]
    return _scalar(kind, raw[kind], where)


def _capacity_value(raw: Any, where: str) -> dict:
    value = raw.get("value") if isinstance(raw, Mapping) else raw
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    try:
        return Quantity.parse(value).tagged()
    except CelFunctionError as error:
        raise DeviceDataError(f"{where}: capacity {error}") from None


def device_variable(device: Mapping[str, Any], driver: str) -> dict:
    """The `device` map for a ResourceSlice device (v1/v1beta2 flat form or v1beta1 `basic`)."""
    body = device.get("basic") if isinstance(device.get("basic"), Mapping) else device
    name = device.get("name", "?")
    attributes: dict[str, dict[str, Any]] = {}
    for key, raw in sorted((body.get("attributes") or {}).items()):
        domain, attr = _split_name(str(key), driver)
        attributes.setdefault(domain, {})[attr] = _attribute_value(raw, f"device {name} attribute {key}")
    capacity: dict[str, dict[str, Any]] = {}
    for key, raw in sorted((body.get("capacity") or {}).items()):
        domain, cap = _split_name(str(key), driver)
        capacity.setdefault(domain, {})[cap] = _capacity_value(raw, f"device {name} capacity {key}")
    return {"driver": driver, "attributes": attributes, "capacity": capacity,
            "allowMultipleAllocations": bool(body.get("allowMultipleAllocations", False))}


def device_variable_for(device: Mapping[str, Any], program: Program) -> dict:
    """`device` with an empty map for every domain the expression may look up but the device
    lacks (Kubernetes: unknown domain -> empty map)."""
    attributes = dict(device["attributes"])
    capacity = dict(device["capacity"])
    for literal in program.string_literals:
        attributes.setdefault(literal, {})
        capacity.setdefault(literal, {})
    return {**device, "attributes": attributes, "capacity": capacity}
