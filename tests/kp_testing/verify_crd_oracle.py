"""An independent oracle built, in the test, from Kueue's real CRDs (the `kueue_crd_dir` fixture):
the structural openAPIV3Schema converted to JSON Schema, the CRD defaults applied the way the API
server applies them, and the CRDs' x-kubernetes-validations evaluated with the `cel` library.

It shares no code with compiler/verify: it is what the verifier is checked against.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cel
import jsonschema
import yaml

PLURALS = {
    "ResourceFlavor": "resourceflavors",
    "Cohort": "cohorts",
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
    "WorkloadPriorityClass": "workloadpriorityclasses",
    "Topology": "topologies",
}
FORMAT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
COPIED = ("enum", "pattern", "maxLength", "minLength", "maxItems", "minItems", "maxProperties",
          "minProperties", "minimum", "maximum", "required")


def _unique_by_keys(validator, keys, instance, schema):
    if not isinstance(instance, list):
        return
    seen = []
    for i, item in enumerate(instance):
        if isinstance(item, dict):
            ident = [item.get(k) for k in keys]
            if ident in seen:
                yield jsonschema.ValidationError(f"Duplicate value: {ident}", path=(i,))
            seen.append(ident)


def _unique_set(validator, enabled, instance, schema):
    if not isinstance(instance, list):
        return
    seen = []
    for i, item in enumerate(instance):
        if item in seen:
            yield jsonschema.ValidationError(f"Duplicate value: {item!r}", path=(i,))
        seen.append(item)


OracleValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"oracle-list-map-keys": _unique_by_keys, "oracle-list-set": _unique_set})


def convert(node: dict[str, Any], *, top: bool = False) -> dict[str, Any]:
    """Structural schema (OpenAPI v3 + Kubernetes extensions) -> strict JSON Schema."""
    out: dict[str, Any] = {}
    if node.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    elif "type" in node:
        out["type"] = [node["type"], "null"] if node.get("nullable") else node["type"]
    for key in COPIED:
        if key in node:
            out[key] = node[key]
    if node.get("nullable") and "enum" in out:
        out["enum"] = out["enum"] + [None]
    if node.get("format") in FORMAT_RANGES and node.get("type") == "integer":
        out["minimum"], out["maximum"] = FORMAT_RANGES[node["format"]]
    if node.get("x-kubernetes-list-type") == "map":
        out["oracle-list-map-keys"] = node["x-kubernetes-list-map-keys"]
    elif node.get("x-kubernetes-list-type") == "set":
        out["oracle-list-set"] = True
    if "properties" in node:
        out["properties"] = {k: convert(v) for k, v in node["properties"].items()}
    if "items" in node:
        out["items"] = convert(node["items"])
    if node.get("type") == "object" and not node.get("x-kubernetes-preserve-unknown-fields"):
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            out["additionalProperties"] = convert(extra)
        elif extra is not None:
            out["additionalProperties"] = extra
        elif "properties" in node:
            out["additionalProperties"] = False  # the API server prunes / refuses unknown fields
    if top:
        out["properties"].pop("status", None)  # emitted objects never carry status
    return out


@dataclass
class CelRule:
    location: tuple[str, ...]
    rule: str
    message: str
    program: Any


@dataclass
class VersionOracle:
    schema: dict[str, Any]          # the CRD's openAPIV3Schema, as published
    validator: Any
    rules: list[CelRule] = field(default_factory=list)
    transition_rules: int = 0


def _collect_rules(node: dict[str, Any], location: tuple[str, ...], oracle: VersionOracle) -> None:
    for rule in node.get("x-kubernetes-validations", []):
        if "oldSelf" in rule["rule"]:
            oracle.transition_rules += 1  # update-only rules do not run on create
            continue
        oracle.rules.append(CelRule(location, rule["rule"], rule.get("message", rule["rule"]),
                                    cel.compile(rule["rule"])))
    for key, sub in node.get("properties", {}).items():
        if location == () and key == "status":
            continue
        _collect_rules(sub, location + (key,), oracle)
    if "items" in node:
        _collect_rules(node["items"], location + ("*",), oracle)
    if isinstance(node.get("additionalProperties"), dict):
        _collect_rules(node["additionalProperties"], location + ("{}",), oracle)


def default(value: Any, node: dict[str, Any]) -> Any:
    """Structural defaulting: fill `default`s of absent properties of present objects."""
    if isinstance(value, dict):
        props = node.get("properties", {})
        out = {}
        for k, v in value.items():
            sub = props.get(k) or (node.get("additionalProperties") if isinstance(node.get("additionalProperties"), dict) else None)
            out[k] = default(v, sub) if sub else v
        for k, sub in props.items():
            if k not in out and "default" in sub:
                out[k] = default(json.loads(json.dumps(sub["default"])), sub)
        return out
    if isinstance(value, list) and "items" in node:
        return [default(v, node["items"]) for v in value]
    return value


def _nodes(value: Any, location: tuple[str, ...], path: str):
    if not location:
        yield path, value
        return
    head, rest = location[0], location[1:]
    if head == "*" and isinstance(value, list):
        for i, item in enumerate(value):
            yield from _nodes(item, rest, f"{path}[{i}]")
    elif head == "{}" and isinstance(value, dict):
        for k, item in value.items():
            yield from _nodes(item, rest, f"{path}.{k}")
    elif isinstance(value, dict) and head in value:
        yield from _nodes(value[head], rest, f"{path}.{head}" if path else head)


def _path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


@dataclass
class Verdict:
    schema_paths: set[str]      # where the structural schema refuses (incl. unknown fields)
    unknown_paths: set[str]     # of which: unknown fields
    cel: set[tuple[str, str]]   # (path, message) of failing CEL rules

    @property
    def valid(self) -> bool:
        return not self.schema_paths and not self.cel


class CrdOracle:
    def __init__(self, crd_dir: Path):
        self.versions: dict[tuple[str, str], VersionOracle] = {}
        for kind, plural in PLURALS.items():
            crd = yaml.safe_load((crd_dir / f"kueue.x-k8s.io_{plural}.yaml").read_text())
            group = crd["spec"]["group"]
            for version in crd["spec"]["versions"]:
                if not version.get("served"):
                    continue
                raw = version["schema"]["openAPIV3Schema"]
                schema = convert(raw, top=True)
                oracle = VersionOracle(raw, OracleValidator(schema))
                _collect_rules(raw, (), oracle)
                self.versions[(f"{group}/{version['name']}", kind)] = oracle

    def check(self, obj: dict[str, Any]) -> Verdict:
        oracle = self.versions[(obj["apiVersion"], obj["kind"])]
        paths, unknown = set(), set()
        for err in oracle.validator.iter_errors(obj):
            parts = list(err.absolute_path)
            if err.validator == "additionalProperties":
                for key in err.instance:
                    if key not in err.schema.get("properties", {}):
                        paths.add(_path(parts + [key]))
                        unknown.add(_path(parts + [key]))
            elif err.validator == "required":
                paths.update(_path(parts + [k]) for k in err.validator_value if k not in err.instance)
            else:
                paths.add(_path(parts))
        failures: set[tuple[str, str]] = set()
        defaulted = default(obj, oracle.schema)
        for rule in oracle.rules:
            for path, node in _nodes(defaulted, rule.location, ""):
                try:
                    ok = rule.program.execute({"self": node}) is True
                except (KeyError, ValueError, TypeError, RuntimeError):
                    ok = False  # an evaluation error fails the request on a real server too
                if not ok:
                    failures.add((path, rule.message))
        return Verdict(paths, unknown, failures)
