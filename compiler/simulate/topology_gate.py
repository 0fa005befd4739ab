"""Jobs placed on nodes when the policy has topology: the admission engine decides quota, this
gate then places each job admitted on a topology pool's flavor on the pool's nodes, as Kueue's
Topology Aware Scheduling does after its flavor assignment (compiler.evaluator.topology).

A job that cannot be placed does not start: its quota goes back (Kueue keeps a workload whose
placement fails pending, with the placement's reason) and it waits, held by topology, until a
job on the same pool ends or is preempted, when it is submitted again with its original arrival
time. So fragmentation shows where it costs: jobs that wait although the pool has the GPUs in
total, and GPUs idle meanwhile. The gate also records the free GPUs of every domain over time.

Approximations, said in docs/how-to/simulate.md: Kueue may preempt to make room for a placement
(TAS with preemption) and keeps the held job at the head of a StrictFIFO queue; the gate does
neither (the held job leaves its queue until the pool changes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.core.resources import GPU_RESOURCE
from compiler.evaluator.topology import PlacementRefusal, TopologyAssignment, find_topology_assignment
from compiler.evaluator.topology.tree import DomainTree
from compiler.stages.resolved_model import ResolvedCluster
from compiler.stages.topology_verdicts import PoolTrees, topology_request

HOUR = 3600.0


@dataclass
class Placed:
    pool: str
    assignment: TopologyAssignment
    per_pod: dict[str, int]


@dataclass
class PoolRecord:
    """One pool's placement history: free GPUs per domain of every level, over time."""

    levels: tuple[str, ...]
    capacity: int
    times: list[int] = field(default_factory=list)
    free: list[dict[str, int]] = field(default_factory=list)   # per sample: domain id -> free GPUs
    held_since: dict[str, int] = field(default_factory=dict)   # job key -> when placement first failed
    held_jobs: set[str] = field(default_factory=set)
    held_seconds: int = 0
    idle_while_held: float = 0.0   # GPU-seconds free on the pool while a job was held by topology
    held_before: bool = False      # a job was held at the last sample (the span since counts as held)


class TopologyGate:
    def __init__(self, cluster: ResolvedCluster) -> None:
        self.cluster = cluster
        self.pools = {pool.name: pool for pool in cluster.pools if pool.topology is not None}
        trees = PoolTrees(cluster)
        self.trees: dict[str, DomainTree] = {name: trees.fresh(pool) for name, pool in self.pools.items()}
        self.placed: dict[str, Placed] = {}
        self.held: dict[str, tuple[str, str]] = {}   # job key -> (pool, why)
        self.records = {name: PoolRecord(pool.topology.levels, pool.gpus) for name, pool in self.pools.items()}
        self._last = 0

    def place(self, key: str, flavor: str, topology, count: int, per_pod: dict[str, int], now: int) -> str | None:
        """Place an admitted job on `flavor`'s pool: None when placed (or no topology there), else why not."""
        pool = self.pools.get(flavor)
        if pool is None:
            return None
        tree = self.trees[flavor]
        result = find_topology_assignment(tree, topology_request(pool, topology, count, per_pod))
        record = self.records[flavor]
        if isinstance(result, PlacementRefusal):
            self.held[key] = (flavor, result.reason)
            record.held_since.setdefault(key, now)
            record.held_jobs.add(key)
            return result.reason
        tree.add_usage(result, per_pod)
        self.placed[key] = Placed(flavor, result, per_pod)
        since = record.held_since.pop(key, None)
        if since is not None:
            record.held_seconds += now - since
        self.held.pop(key, None)
        return None

    def release(self, key: str) -> str | None:
        """A placed job ended or was preempted: its nodes are free again; its pool's name."""
        placed = self.placed.pop(key, None)
        if placed is None:
            return None
        self.trees[placed.pool].add_usage(placed.assignment, placed.per_pod, sign=-1)
        return placed.pool

    def held_on(self, pool: str) -> list[str]:
        """The jobs held by topology on this pool (to submit again now that it changed)."""
        return sorted(key for key, (where, _) in self.held.items() if where == pool)

    def sample(self, now: int) -> None:
        """Free GPUs per domain at `now` (one sample per moment that changed them)."""
        span = now - self._last
        for name, record in self.records.items():
            if record.times and record.held_before:
                record.idle_while_held += span * sum(record.free[-1].get(root, 0) for root in self.trees[name].roots)
            free = _free_per_domain(self.trees[name])
            if not record.free or record.free[-1] != free:
                record.times.append(now)
                record.free.append(free)
            record.held_before = bool(record.held_since)
        self._last = now

    def summary(self, end: int) -> list[dict]:
        """Per pool: jobs held by topology, how long, GPUs idle meanwhile, and per level the
        time-weighted mean of free GPUs in all domains and in the roomiest one (the gap is
        fragmentation)."""
        self.sample(end)
        rows = []
        for name, record in sorted(self.records.items()):
            held = record.held_seconds + sum(end - since for since in record.held_since.values())
            tree = self.trees[name]
            levels = []
            for depth, level in enumerate(record.levels):
                ids = list(tree.domains_per_level[depth])
                total = roomiest = 0.0
                for index, time in enumerate(record.times):
                    span = (record.times[index + 1] if index + 1 < len(record.times) else end) - time
                    values = [record.free[index].get(i, 0) for i in ids]
                    total += span * sum(values)
                    roomiest += span * max(values, default=0)
                length = max(end - (record.times[0] if record.times else 0), 1)
                levels.append({"level": level, "domains": len(ids), "meanFreeGpus": round(total / length, 2),
                               "meanFreeGpusInRoomiestDomain": round(roomiest / length, 2)})
            rows.append({"pool": name, "levels": levels, "jobsHeldByTopology": len(record.held_jobs),
                         "heldSeconds": held, "idleGpuHoursWhileHeld": round(record.idle_while_held / HOUR, 3)})
        return rows

    def series(self, end: int) -> list[dict]:
        """Free GPUs per top-level domain over time, per pool (the HTML page's chart)."""
        out = []
        for name, record in sorted(self.records.items()):
            roots = sorted(self.trees[name].roots)
            out.append({"pool": name, "level": record.levels[0], "end": end, "times": list(record.times),
                        "series": [{"team": root, "values": [free.get(root, 0) for free in record.free]}
                                   for root in roots]})
        return out


def _free_per_domain(tree: DomainTree) -> dict[str, int]:
    free: dict[str, int] = {}
    for leaf in tree.leaves.values():
        amount = max(leaf.free.get(GPU_RESOURCE, 0), 0)
        domain = leaf
        while domain is not None:
            free[domain.id] = free.get(domain.id, 0) + amount
            domain = domain.parent
    return free
