"""JSON Schema validation that reports the way the Kubernetes API server does.

Used for both Kueue kinds (our own spec, kueue_spec.py) and built-in kinds (kubernetes-validate's
bundled schemas). Validators are built once per schema and reused: building one is the slow part.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator, ValidationError

from .k8s_names import DNS1123_SUBDOMAIN_PATTERN
from compiler.core.quantity import QUANTITY_PATTERN


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


def go_regex(pattern: str) -> re.Pattern[str]:
    """The pattern as the API server (Go, RE2) reads it: a final `$` is the end of the text, where
    Python's would also match before a trailing newline ("team-a\\n")."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return _compiled(pattern)


_REGEX_CACHE: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    if pattern not in _REGEX_CACHE:
        _REGEX_CACHE[pattern] = re.compile(pattern)
    return _REGEX_CACHE[pattern]


def _pattern(validator, pattern, instance, schema) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not go_regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


KubernetesValidator = jsonschema.validators.extend(
    Draft202012Validator,
    {"x-list-map-keys": _list_map_keys, "x-list-set": _list_set, "pattern": _pattern},
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


# The API server quotes the regular expression only; say in words what it means.
_PATTERN_HINTS = {
    QUANTITY_PATTERN: " (a Kubernetes quantity such as 16, 500m or 128Gi)",
    DNS1123_SUBDOMAIN_PATTERN: " (a lowercase RFC 1123 subdomain such as team-a or h100.example.com)",
}


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
        hint = _PATTERN_HINTS.get(limit, "")
        return [one(f"Invalid value: {_show(value)}: {where} in body should match '{limit}'{hint}", "schema.pattern")]
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


# --- fast path --------------------------------------------------------------------------------
# jsonschema walks a schema generically and is the verifier's main cost (about 0.4 ms per
# ClusterQueue). Nearly every emitted object is valid, so each schema is also compiled once into
# nested closures that only answer "valid or not" for the keywords our schemas use; jsonschema
# runs only on objects the fast path refuses, to explain why. A test checks both always agree.

Check = Callable[[Any], bool]


def _is_type(value: Any, name: str) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float))
    raise ValueError(f"unsupported type {name!r} in a fast-path schema")


_FAST_KEYWORDS = {"type", "properties", "additionalProperties", "required", "enum", "pattern", "maxLength",
                  "minLength", "maxItems", "minItems", "maxProperties", "minimum", "maximum", "items",
                  "x-list-map-keys", "x-list-set", "default", "format", "description"}


def compile_fast(schema: dict[str, Any]) -> Check:
    """A predicate equivalent to `validator.is_valid` for the subset of JSON Schema kueue_spec uses."""
    unsupported = set(schema) - _FAST_KEYWORDS
    if unsupported:
        raise ValueError(f"fast path does not support {sorted(unsupported)}")
    checks: list[Check] = []
    types = schema.get("type")
    if types is not None:
        checks.append(_type_check(tuple(types) if isinstance(types, list) else (types,)))
    checks += _value_checks(schema)
    if "properties" in schema or "additionalProperties" in schema:
        checks.append(_properties_check(schema))
    checks += _array_checks(schema)
    if len(checks) == 1:
        combined = checks[0]
    else:
        def combined(v: Any) -> bool:
            for c in checks:
                if not c(v):
                    return False
            return True
    return _by_value(combined) if "items" in schema else combined


_MEMO_LIMIT = 4096  # distinct lists remembered per array schema


def _by_value(check: Check) -> Check:
    """`check`, answered once per distinct list. The checks are pure functions of the value, and
    `repr` of data made of dicts, lists, strings, numbers, booleans and None is a different text
    for different values (1, 1.0, True and '1' included): a policy's many ClusterQueues repeat the
    same few resource groups, so most of them are a lookup."""
    memo: dict[str, bool] = {}

    def check_by_value(v: Any) -> bool:
        if type(v) is not list or not v:
            return check(v)
        key = repr(v)
        answer = memo.get(key)
        if answer is None:
            answer = check(v)
            if len(memo) < _MEMO_LIMIT:
                memo[key] = answer
        return answer
    return check_by_value


def _type_check(names: tuple[str, ...]) -> Check:
    if names == ("string",):
        return lambda v: isinstance(v, str)
    if names == ("object",):
        return lambda v: isinstance(v, dict)
    if names == ("array",):
        return lambda v: isinstance(v, list)
    return lambda v: any(_is_type(v, n) for n in names)


def _value_checks(schema: dict[str, Any]) -> list[Check]:
    """enum, pattern, the length/size/number bounds and required keys (each holds for values of
    the types it does not constrain)."""
    checks: list[Check] = []
    if "enum" in schema:
        allowed = schema["enum"]
        checks.append(lambda v: any(type(v) is type(a) and v == a for a in allowed))
    if "pattern" in schema:
        search = go_regex(schema["pattern"]).search
        checks.append(lambda v: not isinstance(v, str) or search(v) is not None)
    if "maxLength" in schema:
        checks.append(lambda v, n=schema["maxLength"]: not isinstance(v, str) or len(v) <= n)
    if "minLength" in schema:
        checks.append(lambda v, n=schema["minLength"]: not isinstance(v, str) or len(v) >= n)
    if "maxItems" in schema:
        checks.append(lambda v, n=schema["maxItems"]: not isinstance(v, list) or len(v) <= n)
    if "minItems" in schema:
        checks.append(lambda v, n=schema["minItems"]: not isinstance(v, list) or len(v) >= n)
    if "maxProperties" in schema:
        checks.append(lambda v, n=schema["maxProperties"]: not isinstance(v, dict) or len(v) <= n)
    if "minimum" in schema:
        checks.append(lambda v, n=schema["minimum"]: not _is_type(v, "number") or v >= n)
    if "maximum" in schema:
        checks.append(lambda v, n=schema["maximum"]: not _is_type(v, "number") or v <= n)
    if "required" in schema:
        required = tuple(schema["required"])
        checks.append(lambda v: not isinstance(v, dict) or all(k in v for k in required))
    return checks


def _properties_check(schema: dict[str, Any]) -> Check:
    props = {k: compile_fast(sub) for k, sub in schema.get("properties", {}).items()}
    extra = schema.get("additionalProperties", True)
    extra_check: Check | None = compile_fast(extra) if isinstance(extra, dict) else None

    def check_props(v: Any) -> bool:
        if not isinstance(v, dict):
            return True
        for key, item in v.items():
            sub = props.get(key)
            if sub is not None:
                if not sub(item):
                    return False
            elif extra is False:
                return False
            elif extra_check is not None and not extra_check(item):
                return False
        return True
    return check_props


def _array_checks(schema: dict[str, Any]) -> list[Check]:
    """items, and the CRD list types (map keys unique, set items unique)."""
    checks: list[Check] = []
    if "items" in schema:
        item_check = compile_fast(schema["items"])

        def check_items(v: Any) -> bool:
            if isinstance(v, list):
                for item in v:
                    if not item_check(item):
                        return False
            return True
        checks.append(check_items)
    if "x-list-map-keys" in schema:
        keys = tuple(schema["x-list-map-keys"])

        def unique_keys(v: Any) -> bool:
            if not isinstance(v, list):
                return True
            idents = [json.dumps({k: i.get(k) for k in keys}, sort_keys=True) for i in v if isinstance(i, dict)]
            return len(idents) == len(set(idents))
        checks.append(unique_keys)
    if schema.get("x-list-set"):
        checks.append(lambda v: not isinstance(v, list) or
                      len({json.dumps(i, sort_keys=True) for i in v}) == len(v))
    return checks


def check(validator: Draft202012Validator, instance: Any, fast: Check | None = None) -> list[SchemaViolation]:
    """Every schema violation of `instance`, sorted by path then message (deterministic).
    `fast`, when given, is compile_fast(validator.schema): a quick answer for valid objects."""
    if fast is not None and fast(instance):
        return []
    found: list[SchemaViolation] = []
    for error in validator.iter_errors(instance):
        found.extend(_violations(error))
    return sorted(set(found), key=lambda v: (v.field_path, v.message))
