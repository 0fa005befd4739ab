"""Kueue objects compared by what they mean to Kueue, not by how they are written.

Ignored: what the API server sets (metadata other than name and namespace, status), labels and
annotations (no Kueue scheduling decision reads them), key order, and the Kueue API version
(v1beta1 `cohort` is v1beta2 `cohortName`). Filled in: the defaults Kueue's CRDs and webhooks
apply (queueingStrategy, preemption, flavorFungibility, stopPolicy, fair-sharing weight 1).
Quantities compare as quantities (`1.5` = `1500m`, `1Gi` = `1024Mi`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from compiler.core.quantity import QuantityError, parse_quantity

COMPARED_KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass", "Topology")
_QUANTITY_KEYS = {"nominalQuota", "borrowingLimit", "lendingLimit", "weight"}
# What the API server writes into a ClusterQueue that states none (kubectl prints it back).
QUEUE_DEFAULTS = {
    "v1beta1": {"flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "TryNextFlavor"},
                "stopPolicy": "None"},
    "v1beta2": {"flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
                "stopPolicy": "None"},
}


@dataclass(frozen=True)
class Difference:
    """One place two objects disagree: the object, the field path and both values."""

    kind: str
    name: str  # namespace/name for namespaced objects
    path: str
    original: Any
    compiled: Any

    def describe(self) -> str:
        return f"{self.kind} {self.name}: {self.path}: export has {self.original!r}, the policy compiles to " \
               f"{self.compiled!r}"


def object_key(doc: dict[str, Any]) -> tuple[str, str]:
    meta = doc.get("metadata") or {}
    name = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta.get("name"))
    return str(doc.get("kind")), name


def _quantities(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: _quantities(v, k) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_quantities(item) for item in value]
    if key in _QUANTITY_KEYS and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        try:
            return str(parse_quantity(value))
        except QuantityError:
            return value
    return value


def _defaulted_queue(spec: dict[str, Any], version: str) -> dict[str, Any]:
    if "cohort" in spec:
        spec["cohortName"] = spec.pop("cohort")
    spec.setdefault("queueingStrategy", "BestEffortFIFO")
    preemption = spec.setdefault("preemption", {})
    preemption.setdefault("withinClusterQueue", "Never")
    preemption.setdefault("reclaimWithinCohort", "Never")
    preemption.setdefault("borrowWithinCohort", {}).setdefault("policy", "Never")
    fungibility = spec.setdefault("flavorFungibility", {})
    for field, default in QUEUE_DEFAULTS.get(version, QUEUE_DEFAULTS["v1beta2"])["flavorFungibility"].items():
        fungibility.setdefault(field, default)
    spec.setdefault("stopPolicy", "None")
    spec.setdefault("resourceGroups", [])
    return spec


def normalized(doc: dict[str, Any]) -> dict[str, Any]:
    """What of `doc` Kueue acts on, with defaults filled in and quantities canonical."""
    kind = doc.get("kind")
    version = str(doc.get("apiVersion", "")).rsplit("/", 1)[-1]
    body = {k: copy.deepcopy(v) for k, v in doc.items() if k not in ("apiVersion", "kind", "metadata", "status")}
    spec = body.setdefault("spec", {}) if kind != "WorkloadPriorityClass" else body.pop("spec", None) or {}
    if kind == "ClusterQueue":
        _defaulted_queue(spec, version)
    if kind in ("ClusterQueue", "Cohort", "LocalQueue"):
        spec.setdefault("fairSharing", {}).setdefault("weight", "1")
    if kind == "LocalQueue":
        spec.setdefault("stopPolicy", "None")
    if kind == "WorkloadPriorityClass":
        body.setdefault("description", "")
    return _quantities(body)


def _walk(original: Any, compiled: Any, path: str, out: list[tuple[str, Any, Any]]) -> None:
    if isinstance(original, dict) and isinstance(compiled, dict):
        for key in sorted(set(original) | set(compiled)):
            _walk(original.get(key), compiled.get(key), f"{path}.{key}" if path else key, out)
        return
    if isinstance(original, list) and isinstance(compiled, list) and len(original) == len(compiled):
        for index, (left, right) in enumerate(zip(original, compiled)):
            _walk(left, right, f"{path}[{index}]", out)
        return
    if original != compiled:
        out.append((path, original, compiled))


def mapping_differences(kind: str, name: str, original: dict[str, Any], compiled: dict[str, Any]) -> list[Difference]:
    """Every path where two plain mappings (a Kueue Configuration) disagree, quantities as quantities."""
    paths: list[tuple[str, Any, Any]] = []
    _walk(_quantities(original), _quantities(compiled), "", paths)
    return [Difference(kind, name, path, was, now) for path, was, now in paths]


def _sorted_selector_values(spec: dict[str, Any]) -> None:
    """An `In` list is a set to Kubernetes: its order means nothing."""
    selector = spec.get("namespaceSelector")
    for expression in (selector or {}).get("matchExpressions") or [] if isinstance(selector, dict) else []:
        if isinstance(expression, dict) and isinstance(expression.get("values"), list):
            expression["values"] = sorted(expression["values"], key=str)


def differences(original: list[dict[str, Any]], compiled: list[dict[str, Any]]) -> list[Difference]:
    """Every difference between two sets of Kueue objects; objects of other kinds are left out.

    A Cohort the export only names (a ClusterQueue's cohort with no Cohort object) is, to Kueue,
    a cohort with an empty spec: the compile's empty Cohort of that name is the same thing."""
    def by_key(docs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
        return {object_key(d): d for d in docs if d.get("kind") in COMPARED_KINDS}

    left, right = by_key(original), by_key(compiled)
    found: list[Difference] = []
    empty_cohort = normalized({"kind": "Cohort", "spec": {}})
    for key in sorted(set(left) | set(right)):
        kind, name = key
        if key not in right:
            found.append(Difference(kind, name, "(object)", "present", "missing"))
            continue
        if key not in left:
            if kind == "Cohort" and normalized(right[key]) == empty_cohort:
                continue
            found.append(Difference(kind, name, "(object)", "missing", "present"))
            continue
        a, b = normalized(left[key]), normalized(right[key])
        for spec in (a.get("spec"), b.get("spec")):
            if isinstance(spec, dict):
                _sorted_selector_values(spec)
        paths: list[tuple[str, Any, Any]] = []
        _walk(a, b, "", paths)
        found.extend(Difference(kind, name, path, was, now) for path, was, now in paths)
    return found
