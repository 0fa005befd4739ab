"""Which leaves a pod set may use: Kueue's default feasibility checker
(pkg/cache/scheduler scheduling_simulator_default.go, FindFeasibleNodes), run only when the
lowest level is kubernetes.io/hostname (a leaf is then one node)."""

from __future__ import annotations

from compiler.evaluator.topology.records import Node, Toleration, TopologyRequest

# utiltaints.IsSchedulingTaint: the effects that keep a pod off a node.
SCHEDULING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def node_infeasibility(node: Node, request: TopologyRequest, flavor_tolerations: tuple[Toleration, ...]) -> str | None:
    """Why the pod set cannot use the node, or None: an untolerated scheduling taint (the pod
    set's tolerations and the flavor's), a node selector label that does not match, then a
    required node affinity no term of which matches (a term without requirements matches
    nothing, as in Kubernetes)."""
    tolerations = request.tolerations + flavor_tolerations
    for taint in node.taints:
        if taint.effect in SCHEDULING_EFFECTS and not any(t.tolerates(taint) for t in tolerations):
            return f'taint "{taint.describe()}"'
    for key, value in sorted(request.node_selector.items()):
        if node.labels.get(key) != value:
            return "nodeSelector"
    if request.affinity and not any(term and all(r.matches(node.labels) for r in term) for term in request.affinity):
        return "node affinity"
    return None
