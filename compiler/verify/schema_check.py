"""JSON Schema validation that reports the way the Kubernetes API server does.

Used for both Kueue kinds (our own spec, kueue_spec.py) and built-in kinds (kubernetes-validate's
bundled schemas). Validators are built once per schema and reused: building one is the slow part.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator, ValidationError


@dataclass(frozen=True)
class SchemaViolation:
    field_path: str
    message: str
    unknown_field: bool  # the object carries a field the schema does not know
    rule: str


def _list_map_keys(validator, keys, instance, schema) -> Iterator[ValidationError]:
    """CRD `x-kubernetes-list-type: map`: items are unique by their key fields."""
    if not validator.is_type(instance, "array"):
        return
    seen: set[str] = set()
    for i, item in enumerate(instance):
        if not isinstance(item, dict):
            continue
        ident = {k: item.get(k) for k in keys}
        token = json.dumps(ident, sort_keys=True)
        if token in seen:
            yield ValidationError(f"Duplicate value: {token}", path=(i,))
        seen.add(token)


def _list_set(validator, enabled, instance, schema) -> Iterator[ValidationError]:
    """CRD `x-kubernetes-list-type: set`: scalar items are unique."""
    if not enabled or not validator.is_type(instance, "array"):
        return
    seen: set[str] = set()
    for i, item in enumerate(instance):
        token = json.dumps(item, sort_keys=True)
        if token in seen:
            yield ValidationError(f"Duplicate value: {token}", path=(i,))
        seen.add(token)


KubernetesValidator = jsonschema.validators.extend(
    Draft202012Validator,
    {"x-list-map-keys": _list_map_keys, "x-list-set": _list_set},
)


def format_path(parts: Sequence[Any]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _leaf(parts: Sequence[Any]) -> str:
    """The last named field with its indices: `flavors[1]`, `lendingLimit`; "" for the root."""
    leaf = ""
    for part in reversed(parts):
        if isinstance(part, int):
            leaf = f"[{part}]" + leaf
        else:
            return str(part) + leaf
    return leaf


_K8S_TYPE_NAMES = {"object": "object", "array": "array", "string": "string", "integer": "integer",
                   "number": "number", "boolean": "boolean", "null": "null"}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _show(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(value, sort_keys=True, default=str)


def _violations(error: ValidationError) -> list[SchemaViolation]:
    parts = list(error.absolute_path)
    path = format_path(parts)
    where = path or "<root>"
    kind = error.validator
    value = error.instance
    limit = error.validator_value

    def one(message: str, rule: str, at: list[Any] | None = None) -> SchemaViolation:
        p = parts if at is None else at
        leaf = _leaf(p)
        return SchemaViolation(format_path(p), f"{leaf}: {message}" if leaf else message, False, rule)

    if kind == "additionalProperties":
        props = error.schema.get("properties", {})
        extras = sorted(k for k in value if k not in props) if isinstance(value, dict) else []
        return [SchemaViolation(format_path(parts + [k]), f'unknown field "{format_path(parts + [k])}"',
                                True, "schema.unknownField") for k in extras]
    if kind == "required":
        missing = [k for k in limit if isinstance(value, dict) and k not in value]
        return [one("Required value", "schema.required", parts + [k]) for k in missing]
    if kind == "type":
        expected = limit if isinstance(limit, list) else [limit]
        names = " or ".join(_K8S_TYPE_NAMES.get(t, t) for t in expected)
        actual = _json_type(value)
        return [one(f'Invalid value: "{actual}": {where} in body must be of type {names}: "{actual}"',
                    "schema.type")]
    if kind == "enum":
        allowed = ", ".join(json.dumps(v) for v in limit)
        return [one(f"Unsupported value: {_show(value)}: supported values: {allowed}", "schema.enum")]
    if kind in ("maxItems", "maxProperties"):
        return [one(f"Too many: {len(value)}: must have at most {limit} items", f"schema.{kind}")]
    if kind in ("minItems", "minProperties"):
        return [one(f"Invalid value: {len(value)}: {where} in body should have at least {limit} items",
                    f"schema.{kind}")]
    if kind == "maxLength":
        return [one(f"Too long: may not be more than {limit} bytes", "schema.maxLength")]
    if kind == "minLength":
        return [one(f"Invalid value: {_show(value)}: {where} in body should be at least {limit} chars long",
                    "schema.minLength")]
    if kind == "pattern":
        return [one(f"Invalid value: {_show(value)}: {where} in body should match '{limit}'", "schema.pattern")]
    if kind == "minimum":
        return [one(f"Invalid value: {value}: {where} in body should be greater than or equal to {limit}",
                    "schema.minimum")]
    if kind == "maximum":
        return [one(f"Invalid value: {value}: {where} in body should be less than or equal to {limit}",
                    "schema.maximum")]
    if kind in ("x-list-map-keys", "x-list-set"):
        return [one(error.message, "schema.duplicateListKey")]
    if kind == "const":
        return [one(f"Unsupported value: {_show(value)}: supported values: {_show(limit)}", "schema.enum")]
    if kind in ("anyOf", "oneOf"):
        # The bundled Kubernetes schemas use these for int-or-string and nullable fields; report the
        # most relevant branch's complaints instead of "not valid under any of the given schemas".
        best = jsonschema.exceptions.best_match(error.context) if error.context else None
        if best is not None:
            return _violations(best)
    return [one(error.message, f"schema.{kind}")]


def check(validator: Draft202012Validator, instance: Any) -> list[SchemaViolation]:
    """Every schema violation of `instance`, sorted by path then message (deterministic)."""
    found: list[SchemaViolation] = []
    for error in validator.iter_errors(instance):
        found.extend(_violations(error))
    return sorted(set(found), key=lambda v: (v.field_path, v.message))
