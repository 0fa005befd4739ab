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
from compiler.evaluator.topology import TopologyAssignment
from compiler.evaluator.topology.refusals import names_placement_refusal
from compiler.evaluator.topology.tree import DomainTree
from compiler.stages.resolved_model import ResolvedCluster
from compiler.stages.topology_verdicts import PoolTrees

HOUR = 3600.0


@dataclass
class Placed:
    pool: str
    assignment: TopologyAssignment
    per_pod: dict[str, int]


@dataclass
class PoolRecord:
    """One pool's placement history: free GPUs per domain of every level, over time."""

    level_labels: tuple[str, ...]
    capacity: int
    times: list[int] = field(default_factory=list)
    roots: list[dict[str, int]] = field(default_factory=list)  # per sample: top-level domain -> free GPUs
    levels: list[list[tuple[int, int]]] = field(default_factory=list)  # per sample, per level: (sum, roomiest)
    held_since: dict[str, int] = field(default_factory=dict)   # job key -> when placement first failed
    held_jobs: set[str] = field(default_factory=set)
    held_seconds: int = 0
    idle_while_held: float = 0.0   # GPU-seconds free on the pool while a job was held by topology
    held_before: bool = False      # a job was held at the last sample (the span since counts as held)


class TopologyGate:
    """An observer of the engine's placements (info.placements): it does not place, it records."""

    def __init__(self, cluster: ResolvedCluster) -> None:
        self.cluster = cluster
        self.pools = {pool.name: pool for pool in cluster.pools if pool.topology is not None}
        self.by_topology = {pool.topology.name: pool.name for pool in self.pools.values()}
        trees = PoolTrees(cluster)
        self.trees: dict[str, DomainTree] = {name: trees.fresh(pool) for name, pool in self.pools.items()}
        self.placed: dict[str, list[Placed]] = {}
        self.records = {name: PoolRecord(pool.topology.levels, pool.gpus) for name, pool in self.pools.items()}
        self._last = 0
        self._dirty: set[str] = set(self.pools)   # pools whose free GPUs changed since the last sample

    def admitted(self, key: str, placements: dict | None, now: int) -> None:
        """The engine admitted the job with these placements (pod set -> PodSetPlacement)."""
        for placement in (placements or {}).values():
            if placement.flavor not in self.trees:
                continue
            self.trees[placement.flavor].add_usage(placement.assignment, placement.per_pod)
            self._changed(placement.flavor)
            self.placed.setdefault(key, []).append(Placed(placement.flavor, placement.assignment,
                                                          dict(placement.per_pod)))
        for record in self.records.values():
            since = record.held_since.pop(key, None)
            if since is not None:
                record.held_seconds += now - since

    def pending(self, key: str, reason: str, now: int) -> None:
        """A job still pending after the moment: held by topology when the engine's reason is a
        placement refusal on a topology pool (Kueue's 'topology "T" allows to fit only ...' or
        'doesn't allow to fit ...')."""
        for topology, pool in self.by_topology.items():
            if reason and names_placement_refusal(reason, topology):
                record = self.records[pool]
                record.held_since.setdefault(key, now)
                record.held_jobs.add(key)
                return

    def release(self, key: str) -> str | None:
        """A placed job ended or was preempted: its nodes are free again; its pool's name."""
        placed = self.placed.pop(key, None)
        if not placed:
            return None
        for one in placed:
            self.trees[one.pool].add_usage(one.assignment, one.per_pod, sign=-1)
            self._changed(one.pool)
        return placed[0].pool

    def _changed(self, pool: str) -> None:
        self._dirty.add(pool)

    def sample(self, now: int) -> None:
        """Free GPUs per domain at `now`, for the pools whose nodes changed since the last
        sample (a moment that changed nothing costs nothing: a pool of thousands of nodes is
        summed only when a job on it starts or ends)."""
        span = now - self._last
        for name, record in self.records.items():
            if record.times and record.held_before:
                record.idle_while_held += span * sum(record.roots[-1].values())
            if name in self._dirty:
                tree = self.trees[name]
                free = _free_per_domain(tree)
                roots = {root: free.get(root, 0) for root in tree.roots}
                levels = [(sum(free.get(d, 0) for d in per_level), max((free.get(d, 0) for d in per_level), default=0))
                          for per_level in tree.domains_per_level]
                if not record.roots or record.roots[-1] != roots or record.levels[-1] != levels:
                    record.times.append(now)
                    record.roots.append(roots)
                    record.levels.append(levels)
            record.held_before = bool(record.held_since)
        self._dirty.clear()
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
            length = max(end - (record.times[0] if record.times else 0), 1)
            spans = [(record.times[i + 1] if i + 1 < len(record.times) else end) - time
                     for i, time in enumerate(record.times)]
            levels = []
            for depth, level in enumerate(record.level_labels):
                total = sum(span * stats[depth][0] for span, stats in zip(spans, record.levels))
                roomiest = sum(span * stats[depth][1] for span, stats in zip(spans, record.levels))
                levels.append({"level": level, "domains": len(tree.domains_per_level[depth]),
                               "meanFreeGpus": round(total / length, 2),
                               "meanFreeGpusInRoomiestDomain": round(roomiest / length, 2)})
            rows.append({"pool": name, "levels": levels, "jobsHeldByTopology": len(record.held_jobs),
                         "heldSeconds": held, "idleGpuHoursWhileHeld": round(record.idle_while_held / HOUR, 3)})
        return rows

    def series(self, end: int) -> list[dict]:
        """Free GPUs per top-level domain over time, per pool (the HTML page's chart)."""
        out = []
        for name, record in sorted(self.records.items()):
            roots = sorted(self.trees[name].roots)
            out.append({"pool": name, "level": record.level_labels[0], "end": end, "times": list(record.times),
                        "series": [{"team": root, "values": [free.get(root, 0) for free in record.roots]}
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
