"""Random Topology Aware Scheduling worlds: one TAS flavor on a random topology (regular or
irregular, tainted, not-Ready, unschedulable nodes, nodes the flavor does not select), and a few
Workloads, created in order, each with one pod set in one of every request form (required,
preferred, unconstrained, implied, slices of one or two layers, slices alone). The same world
is given as YAML (for kueue-oracle) and as the placement package's records; some worlds start with
running Workloads whose pods already sit on nodes (status.admission.topologyAssignment)."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone

from compiler.evaluator.topology import (
    DomainAssignment,
    Node,
    NodeSelectorRequirement,
    SliceLayer,
    Taint,
    Toleration,
    TopologyAssignment,
    TopologyFlavor,
    TopologyRequest,
)

HOST = "kubernetes.io/hostname"
LEVEL_POOL = ("example.com/zone", "example.com/block", "example.com/rack")
GPU = "nvidia.com/gpu"
CREATED = datetime(2026, 1, 1, tzinfo=timezone.utc)
MODEL = "example.com/gpu-model"
GENERATION = "example.com/generation"
# Required node affinity terms a pod set may carry (ORed when it carries two).
AFFINITY_TERMS = (
    (NodeSelectorRequirement(MODEL, "In", ("h100",)),),
    (NodeSelectorRequirement(MODEL, "NotIn", ("h100",)), NodeSelectorRequirement("pool", "Exists")),
    (NodeSelectorRequirement(GENERATION, "Gt", ("2",)),),
    (NodeSelectorRequirement(GENERATION, "Lt", ("2",)), NodeSelectorRequirement("example.com/none", "DoesNotExist")),
)
TAINT = Taint("example.com/maintenance", "true", "NoSchedule")


class TasWorkload:
    """A pending Workload: pod set `main`, for some a second pod set `aux`, and for some a
    `leader` of one pod grouped with `main` (podSetGroupName), before or after it."""

    __slots__ = ("name", "request", "aux", "leader", "leader_first")

    def __init__(self, name: str, request: TopologyRequest, aux: TopologyRequest | None = None,
                 leader: TopologyRequest | None = None, leader_first: bool = False) -> None:
        self.name, self.request, self.aux = name, request, aux
        self.leader, self.leader_first = leader, leader_first

    @property
    def pod_sets(self) -> dict[str, TopologyRequest]:
        sets = {"main": self.request} | ({"aux": self.aux} if self.aux else {})
        if self.leader is None:
            return sets
        return {"leader": self.leader} | sets if self.leader_first else sets | {"leader": self.leader}


class HeldWorkload:
    """A Workload already running when the world starts: its pods sit where `assignment` says
    (status.admission's topologyAssignment, as a cluster export carries it)."""

    __slots__ = ("name", "per_pod", "assignment")

    def __init__(self, name: str, per_pod: dict[str, int], assignment: TopologyAssignment) -> None:
        self.name, self.per_pod, self.assignment = name, per_pod, assignment

    @property
    def count(self) -> int:
        return sum(d.count for d in self.assignment.domains)


class TasWorld:
    __slots__ = ("flavor", "nodes", "workloads", "held")

    def __init__(self, flavor: TopologyFlavor, nodes: list[Node], workloads: list[TasWorkload],
                 held: list[HeldWorkload] = ()) -> None:
        self.flavor, self.nodes, self.workloads, self.held = flavor, nodes, workloads, list(held)


def tas_world(seed: int, index: int) -> TasWorld:
    rng = random.Random(f"tas-{seed}-{index}")
    upper = tuple(sorted(rng.sample(LEVEL_POOL, rng.randint(1, 2)), key=LEVEL_POOL.index))
    levels = upper + (HOST,) if rng.random() < 0.8 else upper
    flavor = TopologyFlavor("topo", levels, {"pool": "gpu"},
                            (Toleration(TAINT.key, "Exists"),) if rng.random() < 0.15 else ())
    nodes = _nodes(rng, levels)
    workloads = [TasWorkload(f"wl-{i}", random_request(rng, levels),
                             random_request(rng, levels) if rng.random() < 0.25 else None)
                 for i in range(rng.randint(1, 4))]
    world = TasWorld(flavor, nodes, workloads, random_held(rng, levels, nodes))
    add_groups(random.Random(f"tas-group-{seed}-{index}"), world)
    return world


def add_groups(rng: random.Random, world: TasWorld) -> None:
    """In about half the worlds, some Workloads become a leader and its workers (a pod-set
    group, as a LeaderWorkerSet or a JobSet with a driver makes): the workers ask for a
    required or preferred level (what Kueue's webhook allows a group), the leader of one pod
    asks for the same, with requests of its own. A stream of its own: the worlds' other draws
    are unchanged."""
    if rng.random() < 0.5:
        return
    levels = world.flavor.levels
    for workload in world.workloads:
        if rng.random() < 0.4:
            continue
        kind = rng.choice(("required", "preferred"))
        level = levels[rng.randrange(len(levels))]
        workers = random_request(rng, levels)
        workload.request = _grouped(workers, rng.choice((1, 1, 2, 3, 4, 6, 8)), kind, level)
        leader = random_request(rng, levels)
        workload.leader = _grouped(leader, 1, kind, level)
        workload.leader_first = rng.random() < 0.5


def _grouped(request: TopologyRequest, count: int, kind: str, level: str) -> TopologyRequest:
    """`request`'s pods and node constraints under a group's topology request."""
    return TopologyRequest(count, request.per_pod, tolerations=request.tolerations,
                           node_selector=request.node_selector, affinity=request.affinity,
                           group="lws", **{kind: level})


def random_held(rng: random.Random, levels: tuple[str, ...], nodes: list[Node]) -> list[HeldWorkload]:
    """Zero to two running Workloads with pods on random nodes (usable or not, as in a live
    cluster where a node went NotReady under running pods)."""
    held = []
    for i in range(rng.choice((0, 0, 1, 2))):
        per_pod = {GPU: rng.choice((1, 2, 4, 8)), "cpu": rng.choice((500, 1000, 4000))}
        counts: dict[tuple[str, ...], int] = {}
        for node in rng.sample(nodes, min(len(nodes), rng.randint(1, 3))):
            values = (node.name,) if levels[-1] == HOST else tuple(node.labels[level] for level in levels)
            counts[values] = counts.get(values, 0) + rng.randint(1, 2)
        shown = (HOST,) if levels[-1] == HOST else levels
        domains = tuple(DomainAssignment(values, counts[values]) for values in sorted(counts))
        held.append(HeldWorkload(f"held-{i}", per_pod, TopologyAssignment(shown, domains)))
    return held


def _nodes(rng: random.Random, levels: tuple[str, ...]) -> list[Node]:
    regular = rng.random() < 0.4
    fan_out = [rng.randint(1, 3) for _ in levels]
    nodes: list[Node] = []

    def grow(path: tuple[str, ...], depth: int) -> None:
        if depth == len(levels) - (1 if levels[-1] == HOST else 0):
            for host in range(fan_out[-1] + 1 if regular else rng.randint(1, 4)):
                nodes.append(random_node(rng, path, f"n-{'-'.join(path)}-{host}", levels))
            return
        for child in range(fan_out[depth] if regular else rng.randint(1, 3)):
            grow(path + (f"{levels[depth].rsplit('/', 1)[1][0]}{child}",), depth + 1)

    grow((), 0)
    return nodes


def random_node(rng: random.Random, path: tuple[str, ...], name: str, levels: tuple[str, ...]) -> Node:
    labels = {level: value for level, value in zip(levels, path)}
    labels[HOST] = name
    labels["pool"] = "gpu" if rng.random() < 0.95 else "cpu"
    labels[MODEL] = rng.choice(("h100", "h100", "a100"))
    labels[GENERATION] = str(rng.randint(1, 4))
    gpus = rng.choice((4, 8, 8))
    allocatable = {"cpu": rng.choice((16000, 32000)), GPU: gpus, "pods": rng.choice((110, 110, 110, 2))}
    taints = (TAINT,) if rng.random() < 0.1 else ()
    return Node(name, labels, allocatable, taints, ready=rng.random() > 0.08, unschedulable=rng.random() < 0.06)


# "slices" twice: one slice layer under a required or preferred level is the common form.
REQUEST_FORMS = ("required", "preferred", "unconstrained", "implied", "slices", "slices", "layers", "slices-only")


def random_request(rng: random.Random, levels: tuple[str, ...]) -> TopologyRequest:
    per_pod = {GPU: rng.choice((1, 2, 4, 8)), "cpu": rng.choice((500, 1000, 4000))}
    tolerations = (Toleration(TAINT.key, "Equal", "true", "NoSchedule"),) if rng.random() < 0.2 else ()
    pinned = {MODEL: "h100"} if rng.random() < 0.2 else {}
    affinity = tuple(rng.sample(AFFINITY_TERMS, rng.randint(1, 2))) if rng.random() < 0.2 else ()
    constraints = {"tolerations": tolerations, "node_selector": pinned, "affinity": affinity}
    form = rng.choice(REQUEST_FORMS)
    top = rng.randrange(len(levels))
    if form in ("required", "preferred"):
        return TopologyRequest(rng.randint(1, 8), per_pod, **constraints, **{form: levels[top]})
    if form in ("unconstrained", "implied"):
        return TopologyRequest(rng.randint(1, 8), per_pod, **constraints, **{form: True})
    size = rng.choice((2, 4)) if form == "layers" else rng.choice((1, 2, 3, 4))
    count = size * rng.randint(1, 4)
    slice_level = rng.randrange(top, len(levels))
    layers = (SliceLayer(levels[slice_level], size),)
    two_layers = form == "layers" or (form == "slices-only" and rng.random() < 0.5)
    if two_layers and slice_level + 1 < len(levels) and size % 2 == 0:
        layers += (SliceLayer(levels[rng.randrange(slice_level + 1, len(levels))], size // 2),)
    if form == "slices-only":
        return TopologyRequest(count, per_pod, slices=layers, **constraints)
    kind = rng.choice(("required", "preferred"))
    return TopologyRequest(count, per_pod, slices=layers, **constraints,
                           **{kind: levels[top]})


def dump_tas_world(world: TasWorld) -> str:
    """The world as kueue-oracle reads it: Topology, flavor, queues with ample quota, Nodes,
    Workloads one second apart (admitted in that order)."""
    docs = [_topology(world.flavor), _flavor(world.flavor), QUEUES]
    docs += [_node_yaml(node) for node in world.nodes]
    docs += [_held_yaml(h) for h in world.held]
    docs += [_workload_yaml(w, i) for i, w in enumerate(world.workloads)]
    return "\n---\n".join(docs) + "\n"


QUEUES = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: tas
      resources: [{name: cpu, nominalQuota: 100000}, {name: nvidia.com/gpu, nominalQuota: 100000}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: default}
spec: {clusterQueue: cq}"""


def _topology(flavor: TopologyFlavor) -> str:
    levels = "".join(f"\n  - nodeLabel: {level}" for level in flavor.levels)
    return (f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {{name: {flavor.topology_name}}}\n"
            f"spec:\n  levels:{levels}")


def _tolerations(tolerations: tuple[Toleration, ...]) -> str:
    items = ", ".join("{" + ", ".join(f"{k}: {v!r}" for k, v in (("key", t.key), ("operator", t.operator),
                                                                 ("value", t.value), ("effect", t.effect)) if v) + "}"
                      for t in tolerations)
    return f"[{items}]"


def _flavor(flavor: TopologyFlavor) -> str:
    return (f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {{name: tas}}\n"
            f"spec: {{nodeLabels: {{pool: gpu}}, topologyName: {flavor.topology_name}, "
            f"tolerations: {_tolerations(flavor.tolerations)}}}")


def _node_yaml(node: Node) -> str:
    labels = ", ".join(f"{k}: {json.dumps(v)}" for k, v in sorted(node.labels.items()))
    taints = ", ".join(f"{{key: {t.key}, value: {t.value!r}, effect: {t.effect}}}" for t in node.taints)
    alloc = node.allocatable
    return (f"apiVersion: v1\nkind: Node\nmetadata:\n  name: {node.name}\n  labels: {{{labels}}}\n"
            f"spec: {{unschedulable: {str(node.unschedulable).lower()}, taints: [{taints}]}}\n"
            f"status:\n  allocatable: {{cpu: {alloc['cpu']}m, nvidia.com/gpu: {alloc[GPU]!r}, "
            f"pods: {alloc['pods']!r}}}\n"
            f"  conditions: [{{type: Ready, status: \"{'True' if node.ready else 'False'}\"}}]")


def _topology_request(request: TopologyRequest) -> str:
    fields = []
    if request.required:
        fields.append(f"required: {request.required}")
    if request.preferred:
        fields.append(f"preferred: {request.preferred}")
    if request.unconstrained:
        fields.append("unconstrained: true")
    if len(request.slices) == 1:
        layer = request.slices[0]
        fields += [f"podSetSliceRequiredTopology: {layer.level}", f"podSetSliceSize: {layer.size}"]
    elif request.slices:
        layers = ", ".join(f"{{topology: {s.level}, size: {s.size}}}" for s in request.slices)
        fields.append(f"podsetSliceRequiredTopologyConstraints: [{layers}]")
    if request.group:
        fields.append(f"podSetGroupName: {request.group}")
    return "" if request.implied else f"\n    topologyRequest: {{{', '.join(fields)}}}"


def _affinity(request: TopologyRequest) -> str:
    if not request.affinity:
        return "{}"
    terms = ", ".join("{matchExpressions: [" + ", ".join(
        f"{{key: {r.key}, operator: {r.operator}, values: [{', '.join(repr(v) for v in r.values)}]}}"
        if r.values else f"{{key: {r.key}, operator: {r.operator}}}" for r in term) + "]}" for term in request.affinity)
    return f"{{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: [{terms}]}}}}}}"


def _created(order: int) -> str:
    """Workloads one second apart from 2026-01-01T00:00:00Z, in creation order."""
    return (CREATED + timedelta(seconds=order)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _workload_yaml(workload: TasWorkload, order: int) -> str:
    return (f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n  name: {workload.name}\n"
            f"  namespace: default\n  creationTimestamp: \"{_created(order)}\"\nspec:\n  queueName: lq\n"
            f"  podSets:" + "".join(_pod_set_yaml(name, request) for name, request in workload.pod_sets.items()))


def _pod_set_yaml(name: str, request: TopologyRequest) -> str:
    return (f"\n  - name: {name}\n    count: {request.count}{_topology_request(request)}\n"
            f"    template:\n      spec:\n        tolerations: {_tolerations(request.tolerations)}\n"
            f"        nodeSelector: {{{', '.join(f'{k}: {v}' for k, v in request.node_selector.items())}}}\n"
            f"        affinity: {_affinity(request)}\n"
            f"        containers:\n        - name: c\n          resources: {{requests: "
            f"{{cpu: {request.per_pod['cpu']}m, nvidia.com/gpu: {request.per_pod[GPU]}}}}}")


def _compact_assignment(assignment: TopologyAssignment) -> str:
    """Kueue v1beta2's slice encoding of a topologyAssignment: one slice, every value listed."""
    per_level = ", ".join("{individual: {roots: [" + ", ".join(d.values[i] for d in assignment.domains) + "]}}"
                          for i in range(len(assignment.levels)))
    counts = ", ".join(str(d.count) for d in assignment.domains)
    return (f"{{levels: [{', '.join(assignment.levels)}], slices: [{{domainCount: {len(assignment.domains)}, "
            f"valuesPerLevel: [{per_level}], podCounts: {{individual: [{counts}]}}}}]}}")


def _held_yaml(held: HeldWorkload) -> str:
    usage = f"{{cpu: {held.per_pod['cpu'] * held.count}m, nvidia.com/gpu: {held.per_pod[GPU] * held.count}}}"
    condition = "reason: QuotaReserved, message: held, lastTransitionTime: \"2025-12-31T23:00:00Z\""
    return (f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n  name: {held.name}\n"
            f"  namespace: default\n  creationTimestamp: \"2025-12-31T23:00:00Z\"\nspec:\n  queueName: lq\n"
            f"  podSets:\n  - name: main\n    count: {held.count}\n    topologyRequest: {{unconstrained: true}}\n"
            f"    template:\n      spec:\n        containers:\n        - name: c\n          resources: {{requests: "
            f"{{cpu: {held.per_pod['cpu']}m, nvidia.com/gpu: {held.per_pod[GPU]}}}}}\n"
            f"status:\n  admission:\n    clusterQueue: cq\n    podSetAssignments:\n    - name: main\n"
            f"      count: {held.count}\n      flavors: {{cpu: tas, nvidia.com/gpu: tas}}\n"
            f"      resourceUsage: {usage}\n      topologyAssignment: {_compact_assignment(held.assignment)}\n"
            f"  conditions:\n  - {{type: QuotaReserved, status: \"True\", {condition}}}\n"
            f"  - {{type: Admitted, status: \"True\", {condition.replace('QuotaReserved', 'Admitted')}}}")
