"""Topology Aware Scheduling placement, as Kueue v0.19.2's TAS places a pod set.

Pure functions on typed records, no Kubernetes client: `build_domain_tree` turns Nodes and a
Topology's levels into the domain tree Kueue's TAS flavor snapshot holds (free capacity per
leaf = allocatable minus the usage of pods already placed), and `find_topology_assignment`
answers one pod-set request with the assignment Kueue would write (levels, domain values, pod
counts) or a `PlacementRefusal` saying why not in words a user reads;
`find_topology_assignments` places a Workload's pod sets together, all or none, a pod-set
group's leader and workers (podset-group-name) in one search.
"""

from compiler.evaluator.topology.placement import find_topology_assignment, find_topology_assignments
from compiler.evaluator.topology.records import (
    DomainAssignment,
    Node,
    NodeSelectorRequirement,
    PlacementRefusal,
    SliceLayer,
    Taint,
    Toleration,
    TopologyAssignment,
    TopologyFlavor,
    TopologyRequest,
)
from compiler.evaluator.topology.tree import DomainTree, build_domain_tree

__all__ = [
    "DomainAssignment", "DomainTree", "Node", "NodeSelectorRequirement", "PlacementRefusal",
    "SliceLayer", "Taint", "Toleration", "TopologyAssignment", "TopologyFlavor", "TopologyRequest",
    "build_domain_tree", "find_topology_assignment", "find_topology_assignments",
]
