"""The typed records placement reads and returns. Quantities are Kueue's int64 units
(`compiler.core.quantity.to_units`: milli-units for cpu, whole units otherwise)."""

from __future__ import annotations

from collections.abc import Mapping

HOSTNAME_LABEL = "kubernetes.io/hostname"
PODS_RESOURCE = "pods"


class Taint:
    __slots__ = ("key", "value", "effect")

    def __init__(self, key: str, value: str = "", effect: str = "NoSchedule") -> None:
        self.key, self.value, self.effect = key, value, effect

    def describe(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


class Toleration:
    __slots__ = ("key", "operator", "value", "effect")

    def __init__(self, key: str = "", operator: str = "Equal", value: str = "", effect: str = "") -> None:
        self.key, self.operator, self.value, self.effect = key, operator, value, effect

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' Toleration.ToleratesTaint (k8s.io/api core/v1 toleration.go)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator in ("Equal", "") and self.value == taint.value


class Node:
    """What Kueue's TAS nodes cache keeps of a Node (copyAndStripNode) plus its readiness."""

    __slots__ = ("name", "labels", "allocatable", "taints", "ready", "unschedulable")

    def __init__(self, name: str, labels: Mapping[str, str], allocatable: Mapping[str, int],
                 taints: tuple[Taint, ...] = (), ready: bool = True, unschedulable: bool = False) -> None:
        self.name = name
        self.labels = dict(labels)
        self.allocatable = dict(allocatable)
        self.taints = tuple(taints)
        self.ready = ready
        self.unschedulable = unschedulable


class TopologyFlavor:
    """A ResourceFlavor with spec.topologyName, joined with its Topology's levels."""

    __slots__ = ("topology_name", "levels", "node_labels", "tolerations")

    def __init__(self, topology_name: str, levels: tuple[str, ...], node_labels: Mapping[str, str] | None = None,
                 tolerations: tuple[Toleration, ...] = ()) -> None:
        self.topology_name = topology_name
        self.levels = tuple(levels)
        self.node_labels = dict(node_labels or {})
        self.tolerations = tuple(tolerations)


class SliceLayer:
    """One entry of podsetSliceRequiredTopologyConstraints: `size` pods per domain of `level`."""

    __slots__ = ("level", "size")

    def __init__(self, level: str, size: int) -> None:
        self.level, self.size = level, size


class NodeSelectorRequirement:
    """One matchExpressions entry of a required node affinity term."""

    __slots__ = ("key", "operator", "values")

    def __init__(self, key: str, operator: str, values: tuple[str, ...] = ()) -> None:
        self.key, self.operator, self.values = key, operator, tuple(values)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """k8s.io/component-helpers nodeaffinity: a label selector requirement on node labels."""
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.operator == "In":
            return present and value in self.values
        if self.operator == "NotIn":
            return not present or value not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator in ("Gt", "Lt") and present and len(self.values) == 1:
            try:
                have, bound = int(value), int(self.values[0])
            except ValueError:
                return False
            return have > bound if self.operator == "Gt" else have < bound
        return False


class TopologyRequest:
    """A pod set asking for placement: Kueue's PodSetTopologyRequest plus what the pod needs.

    `implied` is Kueue's implied TAS (a pod set without a topology request on a TAS flavor);
    `affinity` is requiredDuringSchedulingIgnoredDuringExecution: terms ORed, each term's
    requirements ANDed (empty: no affinity). `group` is the pod set's
    `kueue.x-k8s.io/podset-group-name`: the two pod sets of a group (a leader of one pod and its
    workers) are placed together, in one search (Kueue's leader-worker placement)."""

    __slots__ = ("count", "per_pod", "required", "preferred", "unconstrained", "slices", "implied",
                 "tolerations", "node_selector", "affinity", "group")

    def __init__(self, count: int, per_pod: Mapping[str, int], *, required: str | None = None,
                 preferred: str | None = None, unconstrained: bool = False,
                 slices: tuple[SliceLayer, ...] = (), implied: bool = False,
                 tolerations: tuple[Toleration, ...] = (), node_selector: Mapping[str, str] | None = None,
                 affinity: tuple[tuple[NodeSelectorRequirement, ...], ...] = (),
                 group: str | None = None) -> None:
        self.count = count
        self.per_pod = dict(per_pod)
        self.required, self.preferred, self.unconstrained = required, preferred, unconstrained
        self.slices = tuple(slices)
        self.implied = implied
        self.tolerations = tuple(tolerations)
        self.node_selector = dict(node_selector or {})
        self.affinity = tuple(tuple(term) for term in affinity)
        self.group = group

    def signature(self) -> tuple:
        """Everything placement reads of the request, as a hashable value: two requests with one
        signature get one answer from one tree (the key of the engine's placement answers)."""
        return (self.count, tuple(sorted(self.per_pod.items())), self.required, self.preferred,
                self.unconstrained, tuple((s.level, s.size) for s in self.slices), self.implied,
                tuple((t.key, t.operator, t.value, t.effect) for t in self.tolerations),
                tuple(sorted(self.node_selector.items())),
                tuple(tuple((r.key, r.operator, r.values) for r in term) for term in self.affinity), self.group)


class DomainAssignment:
    __slots__ = ("values", "count")

    def __init__(self, values: tuple[str, ...], count: int) -> None:
        self.values, self.count = tuple(values), count

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DomainAssignment) and (self.values, self.count) == (other.values, other.count)

    def __repr__(self) -> str:
        return f"DomainAssignment({'/'.join(self.values)}={self.count})"


class TopologyAssignment:
    """status.admission.podSetAssignments[].topologyAssignment, expanded: levels and domains."""

    __slots__ = ("levels", "domains")

    def __init__(self, levels: tuple[str, ...], domains: tuple[DomainAssignment, ...]) -> None:
        self.levels, self.domains = tuple(levels), tuple(domains)

    def as_json(self) -> dict:
        return {"levels": list(self.levels),
                "domains": [{"values": list(d.values), "count": d.count} for d in self.domains]}

    def __repr__(self) -> str:
        return f"TopologyAssignment({list(self.levels)}, {list(self.domains)})"


class PlacementRefusal:
    """Kueue cannot place the pod set: `reason` in a user's words, `kueue_reason` in Kueue's
    own (the message its scheduler writes in the Workload's status, byte for byte)."""

    __slots__ = ("reason", "kueue_reason")

    def __init__(self, reason: str, kueue_reason: str | None = None) -> None:
        self.reason = reason
        self.kueue_reason = reason if kueue_reason is None else kueue_reason

    def __repr__(self) -> str:
        return f"PlacementRefusal({self.reason!r})"
