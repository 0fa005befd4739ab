"""Node objects on a sandbox, for Kueue's Topology Aware Scheduling: no kubelet runs there.

A Node is created through the API (labels, taints), its status written through the status
subresource (capacity = allocatable, a Ready condition), and the `node.kubernetes.io/not-ready`
taint the API server puts on every new Node removed again: the node lifecycle controller that
would lift it (kube-controller-manager) does not run in the sandbox, and with it Kueue's TAS
leaves every node out. Nothing renews the Ready condition's heartbeat either, and nothing needs
to: only the node lifecycle controller would mark a silent node NotReady.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import yaml

from kp_testing.sandbox import LiveCluster, wait_until

NOT_READY_TAINT = "node.kubernetes.io/not-ready"


@dataclass(frozen=True)
class LiveNode:
    name: str
    labels: dict[str, str]
    allocatable: dict[str, str]
    taints: list[dict] = field(default_factory=list)

    def manifest(self) -> dict:
        """The Node as `kubectl get nodes -o yaml` shows it once Ready (also a policy's nodesFrom)."""
        spec = {"taints": [dict(taint) for taint in self.taints]} if self.taints else {}
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.name, "labels": dict(self.labels)},
                "spec": spec, "status": self._status()}

    def _status(self) -> dict:
        return {"capacity": dict(self.allocatable), "allocatable": dict(self.allocatable),
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "message": "kueue-policy end-to-end tier: no kubelet runs"}]}


def node_export(nodes: list[LiveNode]) -> str:
    """A `kubectl get nodes -o yaml` export of these nodes."""
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                           "items": [node.manifest() for node in nodes]}, sort_keys=False)


def create_nodes(cluster: LiveCluster, nodes: list[LiveNode]) -> None:
    """Create the nodes, write their status, lift the API server's not-ready taint, and wait until
    every node reads back Ready with exactly its own taints."""
    cluster.create([{key: value for key, value in node.manifest().items() if key != "status"} for node in nodes])
    for node in nodes:
        cluster.kubectl("patch", "node", node.name, "--subresource=status", "--type=merge",
                        "-p", json.dumps({"status": node._status()}))
        # A JSON merge patch replaces the whole list: the node keeps only its own taints.
        cluster.kubectl("patch", "node", node.name, "--type=merge",
                        "-p", json.dumps({"spec": {"taints": node.taints or None}}))

    def settled() -> bool:
        live = {n["metadata"]["name"]: n for n in cluster.get("/api/v1/nodes")["items"]}
        for node in nodes:
            got = live.get(node.name)
            if got is None or any(t["key"] == NOT_READY_TAINT for t in got["spec"].get("taints") or []):
                return False
            if not any(c["type"] == "Ready" and c["status"] == "True" for c in got["status"].get("conditions") or []):
                return False
        return True

    wait_until("the nodes to be Ready without the not-ready taint", settled)


def expanded_assignment(assignment: dict) -> dict:
    """A live `topologyAssignment` as `evaluate` writes it ({levels, domains: [{values, count}]}):
    v1beta2's compact slices expanded as Kueue's utiltas.InternalFrom does (v1beta1's `domains`
    taken as they are)."""
    if "domains" in assignment:
        return {"levels": list(assignment["levels"]),
                "domains": [{"values": list(d["values"]), "count": d["count"]} for d in assignment["domains"]]}
    domains = []
    for piece in assignment.get("slices") or []:
        count = piece["domainCount"]
        per_level = []
        for values in piece["valuesPerLevel"]:
            if "universal" in values:
                per_level.append([values["universal"]] * count)
            else:
                individual = values["individual"]
                prefix, suffix = individual.get("prefix") or "", individual.get("suffix") or ""
                per_level.append([prefix + root + suffix for root in individual["roots"]])
        pods = piece["podCounts"]
        counts = [pods["universal"]] * count if "universal" in pods else list(pods["individual"])
        domains += [{"values": [level[index] for level in per_level], "count": counts[index]} for index in range(count)]
    return {"levels": list(assignment["levels"]), "domains": domains}
