"""Field-by-field comparison of what the policy compiles to with what the cluster holds.

Only what an object's owner declares is compared: metadata.labels and metadata.annotations by
the keys the compiled object carries (other tools add their own), and every other top-level
field but `metadata` and `status` in full. A field the live object has and the compiled one does
not is drift, unless it holds the value the API server or Kueue's webhook fills in when the
field is left out (`DEFAULTS`): a `kubectl edit` that adds a borrowingLimit is drift, the
`stopPolicy: None` Kueue writes on every ClusterQueue is not. Quantities compare by value
(`'2'`, `2` and `2000m` are one quantity), lists of named items by name, so a reordered list of
flavors reads as the reorder it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from compiler.core.quantity import QuantityError, parse_quantity

# Fields the API server writes on every object (never declared by a manifest).
SERVER_SET_TOP_LEVEL = ("metadata", "status")

# What Kubernetes or Kueue v0.19's defaulting fills in for a field a manifest leaves out, by
# kind and path ("*" stands for any list item). A live value equal to these is not drift.
DEFAULTS: dict[str, dict[str, Any]] = {
    "ClusterQueue": {
        "spec.queueingStrategy": "BestEffortFIFO",
        "spec.stopPolicy": "None",
        "spec.namespaceSelector": {},
        "spec.flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "spec.flavorFungibility.whenCanBorrow": "MayStopSearch",
        "spec.flavorFungibility.whenCanPreempt": "TryNextFlavor",
        "spec.preemption": {"borrowWithinCohort": {"policy": "Never"}, "reclaimWithinCohort": "Never",
                            "withinClusterQueue": "Never"},
        "spec.preemption.borrowWithinCohort": {"policy": "Never"},
        "spec.preemption.borrowWithinCohort.policy": "Never",
        "spec.preemption.reclaimWithinCohort": "Never",
        "spec.preemption.withinClusterQueue": "Never",
    },
    "LocalQueue": {"spec.stopPolicy": "None"},
    "Namespace": {"spec": {"finalizers": ["kubernetes"]}, "spec.finalizers": ["kubernetes"]},
    "ResourceClaimTemplate": {
        "spec.metadata": {},
        "spec.spec.devices.requests.*.exactly.allocationMode": "ExactCount",
        "spec.spec.devices.requests.*.exactly.count": 1,
    },
    "MutatingAdmissionPolicy": {
        "spec.failurePolicy": "Fail",
        "spec.matchConstraints.matchPolicy": "Equivalent",
        "spec.matchConstraints.namespaceSelector": {},
        "spec.matchConstraints.objectSelector": {},
        "spec.matchConstraints.resourceRules.*.scope": "*",
    },
    "MutatingAdmissionPolicyBinding": {},
}


@dataclass(frozen=True)
class FieldChange:
    """One field whose live value is not the compiled one (None: the field is absent there)."""

    path: str
    desired: Any
    live: Any

    def to_dict(self) -> dict:
        return {"path": self.path, "desired": self.desired, "live": self.live}


def _quantity(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        return parse_quantity(value)
    except (QuantityError, ValueError, TypeError):
        return None


def same_value(desired: Any, live: Any) -> bool:
    if desired == live:
        return True
    left, right = _quantity(desired), _quantity(live)
    return left is not None and left == right


def _pattern(path: list[str]) -> str:
    return ".".join(path)


def _is_default(kind: str, pattern: str, value: Any) -> bool:
    defaults = DEFAULTS.get(kind, {})
    return pattern in defaults and same_value_deep(defaults[pattern], value)


def same_value_deep(left: Any, right: Any) -> bool:
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same_value_deep(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(same_value_deep(a, b) for a, b in zip(left, right))
    return same_value(left, right)


def _named(items: list) -> dict[str, Any] | None:
    """A list whose items are mappings each with a distinct `name`, keyed by it; else None."""
    if not items or not all(isinstance(item, dict) and isinstance(item.get("name"), str) for item in items):
        return None
    names = [item["name"] for item in items]
    return dict(zip(names, items)) if len(set(names)) == len(names) else None


class _Walk:
    """One object's comparison: `shown` is the path as a person reads it (named items by name),
    `pattern` the path the defaults table speaks (any list item is `*`)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def diff(self, desired: Any, live: Any, shown: str, pattern: list[str]) -> Iterator[FieldChange]:
        if isinstance(desired, dict) and isinstance(live, dict):
            yield from self._mapping(desired, live, shown, pattern)
        elif isinstance(desired, list) and isinstance(live, list):
            yield from self._list(desired, live, shown, pattern)
        elif not same_value_deep(desired, live):
            yield FieldChange(shown, desired, live)

    def _mapping(self, desired: dict, live: dict, shown: str, pattern: list[str]) -> Iterator[FieldChange]:
        for key in sorted(set(desired) | set(live), key=str):
            path, sub = f"{shown}.{key}" if shown else str(key), pattern + [str(key)]
            if key not in live:
                yield FieldChange(path, desired[key], None)
            elif key not in desired:
                if not _is_default(self.kind, _pattern(sub), live[key]):
                    yield from self._live_only(live[key], path, sub)
            else:
                yield from self.diff(desired[key], live[key], path, sub)

    def _live_only(self, live: Any, shown: str, pattern: list[str]) -> Iterator[FieldChange]:
        """A field only the live object has: drift, but a mapping of defaults only is not (the
        server filled a whole block in), so look inside it before calling it drift."""
        if isinstance(live, dict) and live:
            extra = {key: value for key, value in live.items()
                     if not _is_default(self.kind, _pattern(pattern + [str(key)]), value)}
            if not extra:
                return
            for key in sorted(extra, key=str):
                yield from self._live_only(extra[key], f"{shown}.{key}", pattern + [str(key)])
            return
        yield FieldChange(shown, None, live)

    def _list(self, desired: list, live: list, shown: str, pattern: list[str]) -> Iterator[FieldChange]:
        named_desired, named_live = _named(desired), _named(live)
        sub = pattern + ["*"]
        if named_desired is not None and named_live is not None:
            for name in named_desired:
                if name not in named_live:
                    yield FieldChange(f"{shown}[{name}]", named_desired[name], None)
                else:
                    yield from self.diff(named_desired[name], named_live[name], f"{shown}[{name}]", sub)
            for name in named_live:
                if name not in named_desired:
                    yield FieldChange(f"{shown}[{name}]", None, named_live[name])
            if [n for n in named_desired if n in named_live] != [n for n in named_live if n in named_desired]:
                yield FieldChange(f"{shown} (order)", list(named_desired), list(named_live))
            return
        if len(desired) != len(live):
            yield FieldChange(shown, desired, live)
            return
        for index, (left, right) in enumerate(zip(desired, live)):
            yield from self.diff(left, right, f"{shown}[{index}]", sub)


def object_changes(desired: dict, live: dict) -> list[FieldChange]:
    """Every field of `live` that differs from `desired`, in a stable order."""
    walk = _Walk(str(desired.get("kind")))
    changes: list[FieldChange] = []
    for part in ("labels", "annotations"):
        wanted = (desired.get("metadata") or {}).get(part) or {}
        held = (live.get("metadata") or {}).get(part) or {}
        for key in sorted(wanted):
            if key not in held or str(held[key]) != str(wanted[key]):
                changes.append(FieldChange(f"metadata.{part}.{key}", wanted[key], held.get(key)))
    body_desired = {k: v for k, v in desired.items() if k not in SERVER_SET_TOP_LEVEL + ("apiVersion", "kind")}
    body_live = {k: v for k, v in live.items() if k not in SERVER_SET_TOP_LEVEL + ("apiVersion", "kind")}
    changes.extend(walk.diff(body_desired, body_live, "", []))
    return changes


def configuration_changes(desired: dict, live: dict) -> list[FieldChange]:
    """The Kueue manager Configuration, compared in full (no defaults: Kueue reads the file as
    written, and the emitted one spells every field the policy depends on)."""
    return list(_Walk("Configuration").diff(desired, live, "", []))
