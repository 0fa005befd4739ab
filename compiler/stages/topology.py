"""Pool and workload topology (Kueue's Topology Aware Scheduling), as resolve checks it.

A pool's topology becomes a Kueue Topology and its flavor's topologyName; its shape (regular, or
the real nodes of a `kubectl get nodes -o yaml` export) becomes a list of nodes with the domain
each sits in at every level, so later stages place pods on nodes. A declared workload's topology
becomes the pod-set annotations Kueue reads. Everything Kueue would refuse is reported here, at
the user's line: Kueue's API server only says so after the objects are applied.
"""

from __future__ import annotations

import json
import math
import posixpath
from dataclasses import dataclass
from typing import Any, Iterable

from compiler.core import codes
from compiler.core.errors import DiagnosticSink
from compiler.language.load import LoadedDocument
from compiler.language.policy import HOSTNAME_LABEL, MAX_TOPOLOGY_LEVELS, PoolTopology, WorkloadTopology
from compiler.core.resources import GPU_RESOURCE
from compiler.stages.resolved_model import NodeTaint, ResolvedPool, TopologyNode
from compiler.language.validate import Located

# Kueue v0.19 (pkg/features): TopologyAwareScheduling is beta and on by default from 0.14,
# TASMultiLayerTopology (the slice-constraints annotation) from 0.19.
TAS_SINCE = (0, 14)
MULTI_LAYER_SINCE = (0, 19)

# The pod-set annotations of Kueue's apis/kueue/v1beta2 (topology_types.go).
REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
SLICE_REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE_ANNOTATION = "kueue.x-k8s.io/podset-slice-size"
SLICE_CONSTRAINTS_ANNOTATION = "kueue.x-k8s.io/podset-slice-required-topology-constraints"


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


# --- node exports ----------------------------------------------------------------------------

def is_node_export(document: LoadedDocument) -> bool:
    """A `kubectl get nodes -o yaml` export (a v1 List of Nodes) or one Node."""
    data = document.data
    if not isinstance(data, dict) or data.get("apiVersion") != "v1":
        return False
    if data.get("kind") == "Node":
        return True
    items = data.get("items")
    return data.get("kind") == "List" and isinstance(items, list) and all(
        isinstance(item, dict) and item.get("kind") in ("Node", None) for item in items)


def split_node_exports(documents: list[LoadedDocument]) -> tuple[list[LoadedDocument], dict[str, list[LoadedDocument]]]:
    """(policy documents, node exports by display path). A node export in the policy folder is
    the shape of a pool's topology (topology.nodesFrom), not a policy document."""
    policy = [d for d in documents if not is_node_export(d)]
    exports: dict[str, list[LoadedDocument]] = {}
    for document in documents:
        if is_node_export(document):
            exports.setdefault(document.path, []).append(document)
    return policy, exports


@dataclass(frozen=True)
class _ExportedNode:
    document: LoadedDocument
    path: tuple  # node path of the Node inside its document
    data: dict


def _exported_nodes(documents: Iterable[LoadedDocument]) -> list[_ExportedNode]:
    found = []
    for document in documents:
        if document.data.get("kind") == "Node":
            found.append(_ExportedNode(document, (), document.data))
            continue
        for index, item in enumerate(document.data.get("items") or []):
            found.append(_ExportedNode(document, ("items", index), item))
    return found


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _node_record(exported: _ExportedNode, levels: tuple[str, ...], sink: DiagnosticSink) -> TopologyNode | None:
    data = exported.data
    metadata, spec, status = _mapping(data.get("metadata")), _mapping(data.get("spec")), _mapping(data.get("status"))
    name = str(metadata.get("name") or "")
    labels = {str(k): str(v) for k, v in _mapping(metadata.get("labels")).items()}
    missing = [level for level in levels if level not in labels]
    if missing:
        sink.error(codes.TOPOLOGY_NODE_LIST,
                   f"node '{name}' has no label {', '.join(missing)}: Kueue cannot tell which domain it is in, "
                   "so it never places a topology request there",
                   exported.document.position(exported.path + ("metadata", "labels")))
        return None
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions) or not conditions
    taints = tuple(NodeTaint(str(t.get("key", "")), str(t.get("value", "") or ""), str(t.get("effect", "")))
                   for t in spec.get("taints") or [] if isinstance(t, dict))
    allocatable = tuple(sorted((str(k), str(v)) for k, v in _mapping(status.get("allocatable")).items()))
    gpus = dict(allocatable).get(GPU_RESOURCE)
    if gpus is not None and not gpus.isdigit():
        sink.error(codes.TOPOLOGY_NODE_LIST,
                   f"node '{name}': allocatable {GPU_RESOURCE} is {gpus!r}, not a whole number of GPUs",
                   exported.document.position(exported.path + ("status", "allocatable", GPU_RESOURCE)))
        return None
    return TopologyNode(name, tuple(labels[level] for level in levels), allocatable, ready,
                        bool(spec.get("unschedulable")), taints)


def _check_node_gpus(pool: ResolvedPool, nodes: list[tuple[_ExportedNode, TopologyNode]], sink: DiagnosticSink) -> None:
    """Whole-GPU pools under the device plugin: a node's allocatable nvidia.com/gpu is its GPUs."""
    per_node = pool.spec.gpusPerNode
    for exported, node in nodes:
        if GPU_RESOURCE in dict(node.allocatable) and node.gpus > per_node:
            sink.error(codes.TOPOLOGY_NODE_LIST,
                       f"node '{node.name}' has {node.gpus} {GPU_RESOURCE} allocatable; pool '{pool.name}' declares "
                       f"gpusPerNode {per_node}",
                       exported.document.position(exported.path + ("status", "allocatable")))
    short = [node.name for _, node in nodes if GPU_RESOURCE in dict(node.allocatable) and node.gpus < per_node]
    if short:
        sink.warning(codes.TOPOLOGY_NODE_LIST,
                     f"pool '{pool.name}': {len(short)} node(s) have fewer than {per_node} GPUs allocatable "
                     f"({', '.join(short[:5])}{', ...' if len(short) > 5 else ''}); topology placement counts "
                     "what they have", nodes[0][0].document.position(nodes[0][0].path))


def _export_path(cluster: Located, nodes_from: str) -> str:
    """The display path `topology.nodesFrom` names (relative to the cluster file)."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(cluster.path), nodes_from))


def warn_unused_exports(clusters: list[Located], exports: dict[str, list[LoadedDocument]], sink: DiagnosticSink) -> None:
    """A node export no pool names is most likely a typo in nodesFrom: say it is ignored."""
    named = {_export_path(cluster, pool.topology.nodesFrom) for cluster in clusters for pool in cluster.model.spec.pools
             if pool.topology is not None and pool.topology.nodesFrom is not None}
    named |= {_export_path(cluster, pool.allocatable.nodesFrom) for cluster in clusters
              for pool in cluster.model.spec.pools if pool.allocatable is not None and pool.allocatable.nodesFrom}
    for path in sorted(set(exports) - named):
        sink.warning(codes.TOPOLOGY_NODE_LIST,
                     f"{path} is a node export no pool names in topology.nodesFrom or allocatable.nodesFrom; "
                     "it is ignored",
                     exports[path][0].position())


def nodes_from_export(cluster: Located, pool: ResolvedPool, nodes_from: str, field: str, levels: tuple[str, ...],
                      exports: dict[str, list[LoadedDocument]], sink: DiagnosticSink) -> tuple[str, list[TopologyNode]] | None:
    """The pool's nodes in the export `nodes_from` names (`field`: the pool's field that names it,
    `topology` or `allocatable`), each with a label for every level."""
    here = ("spec", "pools", pool.index, field, "nodesFrom")
    wanted = _export_path(cluster, nodes_from)
    documents = exports.get(wanted)
    if documents is None:
        known = ", ".join(sorted(exports)) or "none"
        sink.error(codes.TOPOLOGY_NODE_LIST,
                   f"{field}.nodesFrom: {wanted} is not a node export (`kubectl get nodes -o yaml`) in the policy "
                   f"folder (node exports found: {known})", cluster.position(*here))
        return None
    selector = dict(pool.spec.nodeLabels) or {"kueue-policy.io/pool": pool.name}
    matching = [n for n in _exported_nodes(documents)
                if all(_mapping(_mapping(n.data.get("metadata")).get("labels")).get(k) == v for k, v in selector.items())]
    if len(matching) != pool.spec.nodes:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))
        sink.error(codes.TOPOLOGY_NODE_LIST,
                   f"pool '{pool.name}' declares {pool.spec.nodes} nodes; {wanted} has {len(matching)} node(s) "
                   f"labelled {shown}", cluster.position("spec", "pools", pool.index, "nodes"))
    records = [(n, _node_record(n, levels, sink)) for n in matching]
    kept = [(n, r) for n, r in records if r is not None]
    if kept and not pool.is_mig and cluster.model.spec.gpuAccess == "device-plugin":
        _check_node_gpus(pool, kept, sink)
    return wanted, sorted((r for _, r in kept), key=lambda r: r.name)


def _regular_nodes(cluster: Located, pool: ResolvedPool, topology: PoolTopology, levels: tuple[str, ...],
                   sink: DiagnosticSink) -> list[TopologyNode] | None:
    """The nodes of a regular shape: every domain holds the same number of the level below."""
    holds = [level.holds or 1 for level in topology.levels]
    per_top = math.prod(holds)
    nodes = pool.spec.nodes
    if nodes % per_top:
        outer = topology.levels[0].nodeLabel
        sink.error(codes.TOPOLOGY_SHAPE,
                   f"pool '{pool.name}': one {outer} domain holds {per_top} nodes "
                   f"({' x '.join(str(h) for h in holds if h != 1) or '1'}), and {nodes} nodes is not a whole number "
                   f"of them", cluster.position("spec", "pools", pool.index, "nodes"))
        return None
    # Mixed-radix digits of a node's number: its domain at each level (top-level domains, then how
    # many of the next level each domain holds), then its place in the last domain.
    radices = [nodes // per_top] + holds[:-1] + ([holds[-1]] if levels[-1] != HOSTNAME_LABEL else [])
    allocatable = () if pool.is_mig else ((GPU_RESOURCE, str(pool.spec.gpusPerNode)),)
    built = []
    for number in range(nodes):
        digits, rest = [], number
        for radix in reversed(radices):
            digits.append(rest % radix)
            rest //= radix
        digits.reverse()
        name = f"{pool.name}-" + "-".join(str(d) for d in digits)
        domains = tuple(name if label == HOSTNAME_LABEL else f"{pool.name}-" + "-".join(str(d) for d in digits[:depth + 1])
                        for depth, label in enumerate(levels))
        built.append(TopologyNode(name, domains, allocatable))
    return built


# --- pools -----------------------------------------------------------------------------------

def _check_levels(cluster: Located, pool: ResolvedPool, levels: tuple[str, ...], sink: DiagnosticSink) -> bool:
    """What Kueue's Topology CRD refuses (1..16 levels, unique, hostname last)."""
    here = ("spec", "pools", pool.index, "topology", "levels")
    ok = True
    if len(levels) > MAX_TOPOLOGY_LEVELS:
        sink.error(codes.TOPOLOGY_LEVELS, f"pool '{pool.name}': {len(levels)} topology levels; a Kueue Topology "
                   f"has at most {MAX_TOPOLOGY_LEVELS}", cluster.position(*here))
        ok = False
    seen: set[str] = set()
    for index, label in enumerate(levels):
        if label in seen:
            sink.error(codes.TOPOLOGY_LEVELS, f"pool '{pool.name}': topology level {label} appears twice; Kueue's "
                       "Topology levels must be unique", cluster.position(*here, index, "nodeLabel"))
            ok = False
        seen.add(label)
        if label == HOSTNAME_LABEL and index != len(levels) - 1:
            sink.error(codes.TOPOLOGY_LEVELS, f"pool '{pool.name}': {HOSTNAME_LABEL} is topology level {index + 1} "
                       f"of {len(levels)}; Kueue accepts it only as the last (lowest) level",
                       cluster.position(*here, index, "nodeLabel"))
            ok = False
    return ok


def resolve_pool_topology(cluster: Located, pool: ResolvedPool, exports: dict[str, list[LoadedDocument]],
                          sink: DiagnosticSink) -> tuple[tuple[str, ...], str, list[TopologyNode]] | None:
    """(levels, shape source, nodes) of a pool with topology, None when it has none or errors."""
    topology = pool.spec.topology
    if topology is None:
        return None
    spec = cluster.model.spec
    here = ("spec", "pools", pool.index, "topology")
    levels = topology.level_labels
    fine = _check_levels(cluster, pool, levels, sink)
    if _minor(spec.kueueVersion) < TAS_SINCE:
        sink.error(codes.VERSION_GATE, f"pool '{pool.name}': topology needs Kueue's TopologyAwareScheduling (beta, "
                   f"on by default from Kueue 0.14); the cluster runs Kueue {spec.kueueVersion}",
                   cluster.position(*here))
    if spec.gpuAccess == "dra-claims":
        sink.error(codes.TOPOLOGY_DRA_CLAIMS,
                   f"pool '{pool.name}' has a topology but the cluster's gpuAccess is dra-claims: Kueue v0.19's "
                   "topology-aware scheduling does not count ResourceClaim devices, so it would place pods by "
                   "cpu and memory alone and could put more GPU pods in a domain than it has GPUs",
                   cluster.position(*here))
    if spec.gpuAccess == "dra-extended-resource":
        sink.warning(codes.TOPOLOGY_DRA_CLAIMS,
                     f"pool '{pool.name}' has a topology and the cluster's gpuAccess is dra-extended-resource: Kueue "
                     "v0.19's topology-aware scheduling counts node allocatable, where nodes do not list a GPU "
                     "resource a DRA driver provides; unless your nodes also advertise nvidia.com/gpu there, Kueue "
                     "finds no GPUs in any domain and admits no GPU job on this flavor",
                     cluster.position(*here))
    if not fine:
        return None
    if topology.nodesFrom is not None:
        found = nodes_from_export(cluster, pool, topology.nodesFrom, "topology", levels, exports, sink)
        return None if found is None else (levels, found[0], found[1])
    nodes = _regular_nodes(cluster, pool, topology, levels, sink)
    return None if nodes is None else (levels, "regular", nodes)


def topology_names(cluster: Located, pools: list[ResolvedPool], sink: DiagnosticSink) -> dict[str, str]:
    """pool -> its Kueue Topology's name: one Topology per distinct level list, named as a pool
    with those levels says, else after the first such pool."""
    by_levels: dict[tuple[str, ...], tuple[str, int]] = {}  # levels -> (name, index of the pool that named it)
    for pool in pools:
        topology = pool.spec.topology
        levels = topology.level_labels
        known = by_levels.get(levels)
        if topology.name is not None and known is not None and known[0] != topology.name \
                and pools[known[1]].spec.topology.name is not None:
            sink.error(codes.TOPOLOGY_NAME,
                       f"pool '{pool.name}' names Topology '{topology.name}', but pool '{pools[known[1]].name}' "
                       f"has the same levels and names it '{known[0]}'; pools with the same levels share one Topology",
                       cluster.position("spec", "pools", pool.index, "topology", "name"))
        elif known is None or (topology.name is not None and pools[known[1]].spec.topology.name is None):
            by_levels[levels] = (topology.name or pool.name, pools.index(pool))
    owners: dict[str, tuple[str, ...]] = {}
    for levels, (name, index) in by_levels.items():
        if name in owners:
            pool = pools[index]
            sink.error(codes.TOPOLOGY_NAME,
                       f"Topology '{name}' would have two level lists ({', '.join(owners[name])} and "
                       f"{', '.join(levels)}); give pool '{pool.name}' a topology.name of its own",
                       cluster.position("spec", "pools", pool.index, "topology"))
        owners.setdefault(name, levels)
    return {pool.name: by_levels[pool.spec.topology.level_labels][0] for pool in pools}


# --- workloads -------------------------------------------------------------------------------

def check_workload_topology(team: Located, index: int, replicas: int, topology: WorkloadTopology,
                            pool_levels: dict[str, tuple[str, ...]], kueue_version: str,
                            sink: DiagnosticSink) -> None:
    """A declared workload's topology request against the topologies of the pools it may use
    (`pool_levels`: accepted pool -> its levels; pools without topology are absent)."""
    here = ("spec", "workloads", index, "topology")
    name = team.model.spec.workloads[index].name
    if not pool_levels:
        sink.error(codes.WORKLOAD_TOPOLOGY_LEVEL,
                   f"workload '{name}' asks for a topology but no pool its team accepts has one",
                   team.position(*here))
        return
    anchor = topology.required or topology.preferred
    field = "required" if topology.required is not None else "preferred"
    candidates = {pool: levels for pool, levels in pool_levels.items() if anchor is None or anchor in levels}
    if anchor is not None and not candidates:
        sink.error(codes.WORKLOAD_TOPOLOGY_LEVEL, _unknown_level(name, anchor, pool_levels), team.position(*here, field))
        return
    for layer, piece in enumerate(topology.slices):
        fits = {pool: levels for pool, levels in candidates.items() if piece.level in levels
                and (anchor is None or levels.index(piece.level) >= levels.index(anchor))
                and (layer == 0 or levels.index(piece.level) > levels.index(topology.slices[layer - 1].level))}
        if not fits:
            rules = ([f"at or below {field} level {anchor}"] if anchor is not None else []) + (
                [f"below slice level {topology.slices[layer - 1].level}"] if layer else [])
            sink.error(codes.WORKLOAD_TOPOLOGY_LEVEL,
                       _unknown_level(name, piece.level, candidates)
                       + (f"; a slice level goes {' and '.join(rules)}" if rules else ""),
                       team.position(*here, "slices", layer, "level"))
            return
        candidates = fits
        above = replicas if layer == 0 else topology.slices[layer - 1].size
        if above % piece.size:
            what = (f"replicas ({above}); Kueue places the pods as whole slices" if layer == 0 else
                    f"the size of the slice layer above ({above}); Kueue cuts each slice of {above} pods into slices")
            sink.error(codes.WORKLOAD_SLICE_SIZE,
                       f"workload '{name}': slice size {piece.size} does not divide {what} of {piece.size}",
                       team.position(*here, "slices", layer, "size"))
    if len(topology.slices) > 1 and _minor(kueue_version) < MULTI_LAYER_SINCE:
        sink.error(codes.VERSION_GATE,
                   f"workload '{name}': {len(topology.slices)} slice layers need Kueue's TASMultiLayerTopology (beta, "
                   f"on by default from Kueue 0.19); the cluster runs Kueue {kueue_version}",
                   team.position(*here, "slices"))


def _unknown_level(workload: str, level: str, pool_levels: dict[str, tuple[str, ...]]) -> str:
    known = "; ".join(f"{pool}: {', '.join(levels)}" for pool, levels in sorted(pool_levels.items()))
    return (f"workload '{workload}' asks for topology level {level}, which no pool its team accepts has "
            f"(their levels: {known})")


def podset_annotations(topology: WorkloadTopology | None) -> dict[str, str]:
    """The annotations the job's pod template carries for Kueue to place it as declared."""
    if topology is None:
        return {}
    found: dict[str, str] = {}
    if topology.required is not None:
        found[REQUIRED_ANNOTATION] = topology.required
    if topology.preferred is not None:
        found[PREFERRED_ANNOTATION] = topology.preferred
    if len(topology.slices) == 1:
        found[SLICE_REQUIRED_ANNOTATION] = topology.slices[0].level
        found[SLICE_SIZE_ANNOTATION] = str(topology.slices[0].size)
    elif topology.slices:
        found[SLICE_CONSTRAINTS_ANNOTATION] = json.dumps(
            [{"topology": s.level, "size": s.size} for s in topology.slices], separators=(",", ":"))
    return dict(sorted(found.items()))
