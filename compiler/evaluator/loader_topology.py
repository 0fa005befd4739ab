"""Readers of what Topology Aware Scheduling reads: Nodes (`kubectl get nodes -o yaml`), Topology
objects, a pod set's topology request (a Workload's spec.podSets[].topologyRequest, or the pod
template's `kueue.x-k8s.io/podset-*` annotations a job carries) and a running Workload's
status.admission topologyAssignment (v1beta2's compact slices or v1beta1's domain list)."""

from __future__ import annotations

import json

from compiler.core.errors import SourcePosition
from compiler.core.quantity import to_units
from compiler.evaluator.loader_fields import _Skip
from compiler.evaluator.models import PodSetTopologyRequest
from compiler.evaluator.topology import DomainAssignment, Node, Taint, TopologyAssignment

# The pod-set annotations Kueue's jobframework turns into a topologyRequest (NewPodSetTopologyRequest).
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_LEVEL = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
SLICE_CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
GROUP = "kueue.x-k8s.io/podset-group-name"
# Kueue v0.19 limits a Topology to 16 levels (the CRD's maxItems).
MAX_LEVELS = 16


def _mapping(value: object, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Skip(f"{what} must be a mapping")
    return value


class TopologyReaders:
    """Mixin of the loader (`self.state`): the Node and Topology readers."""

    def node(self, doc: dict, where: SourcePosition | None) -> None:
        meta, spec = doc["metadata"], _mapping(doc.get("spec"), "spec")
        status = _mapping(doc.get("status"), "status")
        allocatable = {str(res): to_units(str(res), qty)
                       for res, qty in _mapping(status.get("allocatable"), "status.allocatable").items()}
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        # nodesCache.sync keeps a node whose Ready condition is True (a node without conditions
        # is not Ready to Kueue either: it has no Ready condition at all).
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        taints = tuple(Taint(str(t.get("key", "")), str(t.get("value", "") or ""), str(t.get("effect", "")))
                       for t in spec.get("taints") or [] if isinstance(t, dict))
        self.state.nodes.append(Node(meta["name"], dict(meta.get("labels") or {}), allocatable, taints, ready,
                                     spec.get("unschedulable") is True))

    def topology(self, doc: dict, where: SourcePosition | None) -> None:
        spec = _mapping(doc.get("spec"), "spec")
        levels = spec.get("levels")
        if not isinstance(levels, list) or not levels:
            raise _Skip("spec.levels must be a non-empty list")
        labels = tuple(str(_mapping(level, "spec.levels[]").get("nodeLabel") or "") for level in levels)
        if "" in labels:
            raise _Skip("every spec.levels entry needs a nodeLabel")
        if len(labels) > MAX_LEVELS:
            raise _Skip(f"spec.levels has {len(labels)} levels; Kueue allows at most {MAX_LEVELS}")
        self.state.topologies[doc["metadata"]["name"]] = labels


def topology_request(raw: object, where: str) -> PodSetTopologyRequest | None:
    """spec.podSets[].topologyRequest, or None when it asks nothing of TAS
    (workload.IsExplicitlyRequestingTAS)."""
    if raw is None:
        return None
    tr = _mapping(raw, where)
    slices: tuple[tuple[str, int], ...] = ()
    constraints = tr.get("podsetSliceRequiredTopologyConstraints")
    if constraints:
        slices = tuple((str(c.get("topology")), _size(c.get("size"), where)) for c in constraints)
    elif tr.get("podSetSliceRequiredTopology") is not None:
        slices = ((str(tr["podSetSliceRequiredTopology"]), _size(tr.get("podSetSliceSize"), where)),)
    request = PodSetTopologyRequest(
        required=_optional_text(tr.get("required")), preferred=_optional_text(tr.get("preferred")),
        unconstrained=tr.get("unconstrained") is not None and tr.get("unconstrained") is not False,
        slices=slices, group=_optional_text(tr.get("podSetGroupName")))
    explicit = (request.required is not None or request.preferred is not None or request.slices
                or tr.get("unconstrained") is not None or tr.get("podSetSliceSize") is not None
                or request.group is not None)
    return request if explicit else None


def annotations_request(annotations: dict, where: str) -> PodSetTopologyRequest | None:
    """The pod template's annotations as Kueue's PodSetTopologyRequest builder reads them:
    required, else preferred, else unconstrained; slices from the constraints annotation or the
    level + size pair."""
    required, preferred = annotations.get(REQUIRED), annotations.get(PREFERRED)
    unconstrained = annotations.get(UNCONSTRAINED)
    group = _group_name(annotations, where)
    slices: tuple[tuple[str, int], ...] = ()
    if SLICE_CONSTRAINTS in annotations:
        try:
            layers = json.loads(annotations[SLICE_CONSTRAINTS])
        except ValueError as error:
            raise _Skip(f"{where}: annotation {SLICE_CONSTRAINTS} is not JSON ({error})") from None
        if not isinstance(layers, list) or not 1 <= len(layers) <= 3:
            raise _Skip(f"{where}: annotation {SLICE_CONSTRAINTS} must list 1 to 3 layers")
        slices = tuple((str(layer.get("topology")), _size(layer.get("size"), where)) for layer in layers)
    elif SLICE_LEVEL in annotations and SLICE_SIZE in annotations:
        slices = ((annotations[SLICE_LEVEL], _size(annotations[SLICE_SIZE], where)),)
    if required is not None:
        return PodSetTopologyRequest(required=required, slices=slices, group=group)
    if preferred is not None:
        return PodSetTopologyRequest(preferred=preferred, slices=slices, group=group)
    if unconstrained is not None:
        if unconstrained.lower() not in ("true", "false", "1", "0", "t", "f"):
            raise _Skip(f"{where}: annotation {UNCONSTRAINED} must be true or false")
        return PodSetTopologyRequest(unconstrained=unconstrained.lower() in ("true", "1", "t"), slices=slices)
    return PodSetTopologyRequest(slices=slices) if slices else None


def _group_name(annotations: dict, where: str) -> str | None:
    """The podset-group-name annotation, with the checks Kueue's job webhooks make on one pod
    set (jobframework ValidateTASPodSetRequest): not a number, only beside a required or
    preferred topology, never with slices."""
    if GROUP not in annotations:
        return None
    name = str(annotations[GROUP])
    if name.isdigit():
        raise _Skip(f"{where}: annotation {GROUP} {name!r} must not be a number")
    for other in (SLICE_SIZE, SLICE_LEVEL, SLICE_CONSTRAINTS):
        if other in annotations:
            raise _Skip(f"{where}: annotation {GROUP} may not be set when {other} is specified")
    if REQUIRED not in annotations and PREFERRED not in annotations:
        raise _Skip(f"{where}: annotation {GROUP} may not be set when neither {PREFERRED} nor {REQUIRED} "
                    "is specified")
    return name


def check_pod_set_groups(podsets: list, where: str) -> None:
    """ValidatePodSetGroupingTopology, what Kueue's job webhooks refuse across a job's pod
    sets: a group of other than two pod sets, a group where neither has one pod, a pair
    whose required / preferred topology differs."""
    groups: dict[str, list] = {}
    for podset in podsets:
        if podset.topology is not None and podset.topology.group is not None:
            groups.setdefault(podset.topology.group, []).append(podset)
    for name, members in groups.items():
        listed = ", ".join(m.name for m in members)
        if len(members) != 2:
            raise _Skip(f"{where}: {GROUP} {name!r} groups {len(members)} pod set(s) ({listed}); Kueue "
                        "allows groups of exactly 2 pod sets")
        first, second = members
        if first.count != 1 and second.count != 1:
            raise _Skip(f"{where}: {GROUP} {name!r}: one pod set of a group must have 1 replica (the leader); "
                        f"{first.name} has {first.count}, {second.name} has {second.count}")
        a, b = first.topology, second.topology
        if (a.required, a.preferred) != (b.required, b.preferred):
            raise _Skip(f"{where}: {GROUP} {name!r}: pod sets {first.name} and {second.name} must ask for the "
                        f"same {REQUIRED} or {PREFERRED} topology")


MAX_SLICE_DOMAINS = 100_000


def topology_assignment(raw: object, where: str) -> TopologyAssignment | None:
    """status.admission.podSetAssignments[].topologyAssignment, expanded (utiltas.InternalFrom)."""
    if raw is None:
        return None
    ta = _mapping(raw, where)
    levels = tuple(str(level) for level in ta.get("levels") or [])
    domains: list[DomainAssignment] = []
    for item in ta.get("domains") or []:  # v1beta1
        domains.append(DomainAssignment(tuple(str(v) for v in item.get("values") or []), int(item.get("count", 0))))
    for piece in ta.get("slices") or []:  # v1beta2: compact slices
        n = int(piece.get("domainCount", 0))
        if not 0 <= n <= MAX_SLICE_DOMAINS:  # (a slice lists its domains: a count beyond any cluster is a typo)
            raise ValueError(f"topologyAssignment domainCount {n} is not between 0 and {MAX_SLICE_DOMAINS}")
        columns = [_values(level, n) for level in piece.get("valuesPerLevel") or []]
        counts = _mapping(piece.get("podCounts"), where)
        per_domain = ([int(counts["universal"])] * n if counts.get("universal") is not None
                      else [int(c) for c in counts.get("individual") or []])
        for index in range(n):
            domains.append(DomainAssignment(tuple(column[index] for column in columns), per_domain[index]))
    return TopologyAssignment(levels, tuple(domains))


def _values(level: dict, n: int) -> list[str]:
    if level.get("universal") is not None:
        return [str(level["universal"])] * n
    individual = level.get("individual") or {}
    prefix, suffix = str(individual.get("prefix") or ""), str(individual.get("suffix") or "")
    return [f"{prefix}{root}{suffix}" for root in individual.get("roots") or []]


def _optional_text(value: object) -> str | None:
    return None if value is None else str(value)


def _size(value: object, where: str) -> int:
    try:
        size = int(str(value))
    except ValueError:
        raise _Skip(f"{where}: slice size {value!r} is not a whole number") from None
    if size < 1:
        raise _Skip(f"{where}: slice size must be at least 1")
    return size
