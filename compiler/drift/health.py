"""Live health the GitOps tool does not see: Argo CD reports Synced/Healthy while Kueue has left
a ClusterQueue inactive, a LocalQueue points at nothing, or a pool's nodes were drained."""

from __future__ import annotations

from dataclasses import dataclass

from compiler.drift.live import LiveCluster

POOL_LABEL = "kueue-policy.io/pool"


@dataclass(frozen=True)
class HealthProblem:
    kind: str           # the kind of the object the problem is on
    name: str           # namespace/name or name
    problem: str        # a short key: inactive, dangling-localqueue, fewer-nodes
    detail: str         # one line a person reads

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "problem": self.problem, "detail": self.detail}


def _condition(obj: dict, kind: str) -> dict | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition
    return None


def inactive_queues(live: LiveCluster) -> list[HealthProblem]:
    """ClusterQueues (and Cohorts, where Kueue reports it) whose Active condition is not True."""
    found = []
    for kind in ("ClusterQueue", "Cohort"):
        for obj in live.of_kind(kind):
            active = _condition(obj, "Active")
            if active is None and kind == "Cohort":
                continue          # Kueue v0.19 sets no Active condition on Cohorts
            if active is not None and active.get("status") == "True":
                continue
            why = "no Active condition yet" if active is None else \
                f"{active.get('reason') or 'not Active'}: {active.get('message') or ''}".rstrip(": ")
            found.append(HealthProblem(kind, obj["metadata"]["name"], "inactive", f"{kind} {obj['metadata']['name']} "
                                       f"is not Active ({why})"))
    return found


def dangling_local_queues(live: LiveCluster) -> list[HealthProblem]:
    if not live.has_kind("ClusterQueue") and not live.has_kind("LocalQueue"):
        return []
    queues = {obj["metadata"]["name"] for obj in live.of_kind("ClusterQueue")}
    found = []
    for obj in live.of_kind("LocalQueue"):
        target = (obj.get("spec") or {}).get("clusterQueue")
        if target not in queues:
            name = f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
            found.append(HealthProblem("LocalQueue", name, "dangling-localqueue",
                                       f"LocalQueue {name} points at ClusterQueue {target}, which does not exist: "
                                       "its jobs wait forever"))
    return found


def _ready(node: dict) -> bool:
    ready = _condition(node, "Ready")
    return bool(ready and ready.get("status") == "True") and not (node.get("spec") or {}).get("unschedulable")


def short_pools(live: LiveCluster, flavors: list[dict], pools: dict[str, dict]) -> list[HealthProblem]:
    """Flavors whose Ready, schedulable nodes (those carrying every one of the flavor's
    nodeLabels) are fewer than the pool declares. Needs the Nodes: without them, nothing."""
    if not live.has_kind("Node"):
        return []
    nodes = live.of_kind("Node")
    found = []
    for flavor in flavors:
        pool = pools.get(((flavor.get("metadata") or {}).get("labels") or {}).get(POOL_LABEL, ""))
        if pool is None or not isinstance(pool.get("nodes"), int):
            continue
        wanted = (flavor.get("spec") or {}).get("nodeLabels") or {}
        matching = [n for n in nodes
                    if all(((n.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in wanted.items())]
        ready = [n for n in matching if _ready(n)]
        if len(ready) < pool["nodes"]:
            name = flavor["metadata"]["name"]
            not_ready = len(matching) - len(ready)
            tail = f" ({not_ready} more not Ready or cordoned)" if not_ready else ""
            found.append(HealthProblem("ResourceFlavor", name, "fewer-nodes",
                                       f"ResourceFlavor {name}: {len(ready)} Ready node(s) carry its nodeLabels"
                                       f"{tail}; pool {pool['name']} declares {pool['nodes']}"))
    return found
