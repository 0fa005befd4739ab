"""How big a pool's nodes are, and whether one pod of a declared workload fits any of them.

Kueue admits by quota only: a pod asking 200 CPUs on a pool of 48-CPU nodes is admitted and then
waits forever for a node. A pool states its nodes' size as `allocatable` (cpu and memory, the
Node's `status.allocatable`), or names a `kubectl get nodes -o yaml` export (`allocatable.nodesFrom`);
a pool whose topology reads a node export gets the size of those nodes too. A pool with none of
these is checked on GPUs per node only, as before node sizes existed.
"""

from __future__ import annotations

from fractions import Fraction

from compiler.core import codes
from compiler.core.errors import DiagnosticSink
from compiler.core.quantity import QuantityError, format_quantity, parse_quantity
from compiler.core.resources import CPU, GPU_RESOURCE, MEMORY
from compiler.language.load import LoadedDocument
from compiler.language.validate import Located
from compiler.stages.resolved_model import NodeSize, ResolvedPool, TopologyNode
from compiler.stages.topology import nodes_from_export


def _node_size(pool: ResolvedPool, node: TopologyNode) -> NodeSize | None:
    offered = dict(node.allocatable)
    try:
        cpu = parse_quantity(offered[CPU]) if CPU in offered else None
        memory = parse_quantity(offered[MEMORY]) if MEMORY in offered else None
    except QuantityError:
        return None
    gpus = node.gpus if GPU_RESOURCE in offered and not pool.is_mig else pool.spec.gpusPerNode
    return NodeSize(node.name, gpus, cpu, memory)


def resolve_node_sizes(cluster: Located, pool: ResolvedPool, exports: dict[str, list[LoadedDocument]],
                       sink: DiagnosticSink) -> None:
    """Fill `pool.node_sizes` from the pool's `allocatable` or its topology's node export."""
    declared = pool.spec.allocatable
    nodes: list[TopologyNode] = []
    if declared is not None and declared.nodesFrom is None:
        pool.node_sizes = (NodeSize("declared", pool.spec.gpusPerNode,
                                    None if declared.cpu is None else parse_quantity(declared.cpu),
                                    None if declared.memory is None else parse_quantity(declared.memory)),)
    elif declared is not None:
        found = nodes_from_export(cluster, pool, declared.nodesFrom, "allocatable", (), exports, sink)
        nodes = found[1] if found is not None else []
    elif pool.topology is not None and pool.topology.source != "regular":
        nodes = list(pool.topology.nodes)
    if nodes:
        sizes = [size for size in (_node_size(pool, node) for node in nodes) if size is not None]
        # Nodes of one shape say the same: keep one of each (an export of 1000 nodes has a few).
        unique = {(s.gpus, s.cpu, s.memory): s for s in sizes}
        pool.node_sizes = tuple(sorted(unique.values(), key=lambda s: s.name))
    _warn_default_share(cluster, pool, sink)


def _warn_default_share(cluster: Located, pool: ResolvedPool, sink: DiagnosticSink) -> None:
    """The cpu/memory that come with a whole node's GPUs (resourcesPerGpu) must fit that node,
    or a full-node pod asking the default share never starts."""
    if not pool.node_sizes or pool.is_mig:
        return
    per_gpu = cluster.model.spec.resourcesPerGpu
    for resource, per in ((CPU, parse_quantity(per_gpu.cpu)), (MEMORY, parse_quantity(per_gpu.memory))):
        offered = [getattr(size, resource) for size in pool.node_sizes]
        if any(value is None for value in offered):
            continue
        largest = max(offered)
        if per * pool.spec.gpusPerNode > largest:
            sink.warning(codes.NODE_TOO_SMALL,
                         f"pool '{pool.name}': a pod asking all {pool.spec.gpusPerNode} GPUs of a node comes with "
                         f"{show(resource, per * pool.spec.gpusPerNode)} {resource} by default (resourcesPerGpu), "
                         f"more than its nodes' {show(resource, largest)}: such a pod fits no node unless its "
                         f"{resource} is set lower", cluster.position("spec", "resourcesPerGpu", resource))


def show(resource: str, value: Fraction) -> str:
    return format_quantity(value, binary=resource == MEMORY)


def misfit(pool: ResolvedPool, request: dict[str, Fraction]) -> str | None:
    """None when some node of `pool` holds one pod asking `request` (or the pool's nodes are not
    known); else why not, e.g. "a pod asks 200 cpu; pool l4's nodes have 48"."""
    if not pool.node_sizes:
        return None
    wanted = {GPU_RESOURCE: request.get(GPU_RESOURCE, Fraction(0)), CPU: request.get(CPU, Fraction(0)),
              MEMORY: request.get(MEMORY, Fraction(0))}

    def holds(size: NodeSize) -> bool:
        offered = {GPU_RESOURCE: size.gpus, CPU: size.cpu, MEMORY: size.memory}
        return all(offered[r] is None or offered[r] >= amount for r, amount in wanted.items())

    if any(holds(size) for size in pool.node_sizes):
        return None
    asks, offers, varied = [], [], False
    for resource, amount in wanted.items():
        offered = [v for v in ({GPU_RESOURCE: s.gpus, CPU: s.cpu, MEMORY: s.memory}[resource]
                               for s in pool.node_sizes) if v is not None]
        if offered and max(offered) < amount:
            unit = "GPUs" if resource == GPU_RESOURCE else resource
            asks.append(f"{show(resource, amount)} {unit}")
            offers.append(f"{show(resource, max(offered))} {unit}")
            varied = varied or len(set(offered)) > 1
    if asks:
        return (f"a pod asks {' and '.join(asks)}; pool {pool.name}'s nodes have "
                f"{'at most ' if varied else ''}{' and '.join(offers)}")
    asked = ", ".join(f"{show(r, a)} {'GPUs' if r == GPU_RESOURCE else r}" for r, a in wanted.items() if a)
    return f"a pod asks {asked}; no node of pool {pool.name} has all of it at once"
