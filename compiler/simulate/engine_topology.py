"""What Kueue's Topology Aware Scheduling reads, built for the simulation's engine: the Nodes of
every pool with a topology (its regular shape or its node list, as `evaluate`'s verdicts build
them), the Topology objects their ResourceFlavors name (topologyName), and a trace job's pod-set
topology request (the `kueue.x-k8s.io/podset-*` annotations a job would carry)."""

from __future__ import annotations

from compiler.evaluator.models import ClusterState, PodSetTopologyRequest
from compiler.stages.resolved_model import ResolvedCluster
from compiler.stages.topology_verdicts import pool_nodes


def add_nodes_and_topologies(state: ClusterState, cluster: ResolvedCluster) -> None:
    for pool in cluster.pools:
        if pool.topology is None:
            continue
        state.topologies[pool.topology.name] = tuple(pool.topology.levels)
        state.nodes.extend(pool_nodes(cluster, pool))


def podset_request(topology) -> PodSetTopologyRequest | None:
    """The trace job's `topology` as the engine's request (None: Kueue's implied TAS)."""
    if topology is None:
        return None
    return PodSetTopologyRequest(required=topology.required, preferred=topology.preferred,
                                 slices=tuple((s.level, s.size) for s in topology.slices))
