"""Kueue's utilpod.SpecShape: the admission-relevant fields of a pod spec, written as Go's
encoding/json writes the API types, so that two specs Kueue tells apart are told apart here.

Kueue hashes this shape twice: a pod group's role hash (utilpod.GenerateRoleHash) and a
Workload's scheduling equivalence class (workload.computeSchedulingHash), which decides which
pending Workloads are set aside untried when one of their class fails.

Go's JSON of the API structs, as the API server stored them: map keys sorted, struct fields in
declaration order, empty `omitempty` fields left out (so `tolerations: []` and `nodeSelector: {}`
are the same as no field), but an empty struct behind a pointer written as `{}` (so
`affinity: {}` is not the same as no affinity), nil as null, quantities in their canonical form,
requests defaulted from limits and a port's protocol from TCP."""

from __future__ import annotations

import json

from compiler.core.quantity import canonical_quantity

_PORT_FIELDS = (("name", True), ("hostPort", True), ("containerPort", False), ("protocol", True), ("hostIP", True))
_TOLERATION_FIELDS = (("key", True), ("operator", True), ("value", True), ("effect", True),
                      ("tolerationSeconds", True))


def spec_shape(spec: object) -> dict[str, object]:
    """SpecShape of a pod template's `spec` (anything not a mapping reads as an empty spec)."""
    spec = spec if isinstance(spec, dict) else {}
    shape: dict[str, object] = {
        "initContainers": _containers(spec.get("initContainers")),
        "containers": _containers(spec.get("containers")),
        "nodeSelector": _map(spec.get("nodeSelector")),
        "affinity": spec.get("affinity"),  # written as given: key order may differ from Go's
        "tolerations": _structs(spec.get("tolerations"), _TOLERATION_FIELDS),
        "runtimeClassName": spec.get("runtimeClassName"),
        "priority": spec.get("priority"),
        "topologySpreadConstraints": spec.get("topologySpreadConstraints"),
        "overhead": _resources(spec.get("overhead")),
        "resourceClaims": spec.get("resourceClaims"),
    }
    if isinstance(spec.get("resources"), dict):
        shape["resources"] = _resources(spec["resources"].get("requests"))
    return _sorted_map(shape)


def go_json(value: object) -> str:
    """Go's json.Marshal text of a value built of the shapes above (HTML characters escaped)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    for char, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def _sorted_map(value: dict) -> dict:
    return {key: value[key] for key in sorted(value)}


def _map(value: object) -> object:
    return _sorted_map({str(k): v for k, v in value.items()}) if isinstance(value, dict) and value else None


def _structs(value: object, fields: tuple[tuple[str, bool], ...]) -> object:
    if not isinstance(value, list) or not value:
        return None
    return [{name: item.get(name) for name, omit in fields if not (omit and not item.get(name))}
            for item in value if isinstance(item, dict)]


def _containers(value: object) -> object:
    if not isinstance(value, list) or not value:
        return None
    out = []
    for container in value:
        container = container if isinstance(container, dict) else {}
        resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
        requests = dict(resources.get("limits") or {})  # the API server defaults requests to limits
        requests.update(resources.get("requests") or {})
        ports = [dict(port, protocol=port.get("protocol") or "TCP") for port in container.get("ports") or []
                 if isinstance(port, dict)]
        out.append({"ports": _structs(ports, _PORT_FIELDS), "resources": {"requests": _resources(requests)}})
    return out


def _resources(value: object) -> object:
    if not isinstance(value, dict) or not value:
        return None
    return _sorted_map({str(name): canonical_quantity(amount) for name, amount in value.items()})
