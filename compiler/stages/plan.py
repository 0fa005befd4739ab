"""Stage 4, plan: where each team's guarantee lives.

Whole-GPU guarantees are placed on the pools a team accepts. The goals, in order:
  1. never past a pool's capacity (nodes x gpusPerNode x overcommit);
  2. a team's guarantee on as few flavors as possible, preferably one: Kueue assigns one flavor
     per pod set, so a 16-GPU guarantee split 8+8 over two flavors cannot admit a 16-GPU job;
  3. the team's preference order; among identical pools (same model, capacity, node shape and
     price), the team's own order up to each pool's share, so guarantees spread instead of
     packing the first, and one team more or less moves few others.
Greedy placement (most constrained teams first) achieves this in the common case; when greedy
fails, a max-flow over teams -> pools decides exactly whether *any* placement exists, uses it if
so, and otherwise names the pools that are short and by how much (from the minimum cut).

MIG guarantees are placed on the first MIG pool a team accepts whose model has the profiles; each
pool's demand is planned with the exact MIG planner.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from fractions import Fraction

from compiler.core import codes
from compiler.core.errors import DiagnosticSink
from compiler.mig.placement import check_layout
from compiler.mig.planner import LayoutCount, PlanResult, plan_mig
from compiler.stages.resolved_model import ResolvedCluster, ResolvedPool, ResolvedTeam, reordered_among_identical


@dataclass
class MigPoolPlan:
    pool: ResolvedPool
    # Per-GPU layouts with how many GPUs get each; covers every GPU of the pool.
    layouts: list[LayoutCount]
    demand: dict[str, int]
    planned_gpus: int  # GPUs the demand needs (the rest get the model's balanced layout)
    lower_bound: int
    fixed: bool

    def instances(self) -> dict[str, int]:
        total: dict[str, int] = defaultdict(int)
        for layout in self.layouts:
            for profile, count in layout.profiles.items():
                total[profile] += count * layout.count
        return dict(sorted(total.items()))


@dataclass
class Placement:
    # team -> pool -> guaranteed whole GPUs (only pools with a non-zero guarantee)
    gpus: dict[str, dict[str, int]] = field(default_factory=dict)
    # team -> pool -> profile -> guaranteed instances
    mig: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    mig_plans: dict[str, MigPoolPlan] = field(default_factory=dict)

    def guaranteed_on(self, pool: str) -> int:
        return sum(per_pool.get(pool, 0) for per_pool in self.gpus.values())

    def mig_guaranteed_on(self, pool: str) -> dict[str, int]:
        total: dict[str, int] = defaultdict(int)
        for per_pool in self.mig.values():
            for profile, count in per_pool.get(pool, {}).items():
                total[profile] += count
        return dict(total)


# How far past its share of the guarantees an identical pool may fill before a team goes to the
# next pool of its own order: small, so the spread stays even; not zero, so that one team more
# or less moves few others (a pool at its cap sends on the teams that come after).
SPREAD_SLACK = Fraction(1, 50)


def _spread_caps(teams: list[ResolvedTeam], free: dict[str, int]) -> dict[str, Fraction]:
    """pool -> the guarantees it takes before a team tries the next identical pool: its share
    (in proportion to its size) of the guarantees of the teams whose first pool is one of its
    set of identical pools, plus SPREAD_SLACK. It depends on the teams, not on their order."""
    peers: dict[tuple, set[str]] = defaultdict(set)
    for team in teams:
        for pool in team.gpu_pools:
            peers[pool.interchangeable_key].add(pool.name)
    demand: dict[tuple, int] = defaultdict(int)
    for team in teams:
        if team.gpu_pools:
            demand[team.gpu_pools[0].interchangeable_key] += team.spec.gpus.guaranteed
    caps: dict[str, Fraction] = {}
    for key, names in peers.items():
        capacity = sum(free[name] for name in names)
        share = min(Fraction(1), Fraction(demand[key], capacity)) if capacity else Fraction(0)
        for name in names:
            caps[name] = free[name] * share * (1 + SPREAD_SLACK)
    return caps


def _greedy(teams: list[ResolvedTeam], free: dict[str, int]) -> dict[str, dict[str, int]] | None:
    remaining = dict(free)
    result: dict[str, dict[str, int]] = {}
    order = sorted((t for t in teams if t.spec.gpus.guaranteed > 0),
                   key=lambda t: (len(t.gpu_pools), -t.spec.gpus.guaranteed, t.name))
    caps = _spread_caps(order, free)
    for team in order:
        need = team.spec.gpus.guaranteed
        pools = [p.name for p in team.gpu_pools]
        whole = _whole_fit(team.gpu_pools, need, remaining, free, caps)
        if whole is not None:
            remaining[whole] -= need
            result[team.name] = {whole: need}
            continue
        # Split over as few pools as possible: largest free capacity first, preference breaks ties.
        taken: dict[str, int] = {}
        for pool in sorted(pools, key=lambda p: (-remaining[p], pools.index(p))):
            if need == 0:
                break
            take = min(need, remaining[pool])
            if take > 0:
                taken[pool] = take
                remaining[pool] -= take
                need -= take
        if need > 0:
            return None
        result[team.name] = taken
    return result


def _whole_fit(pools: list[ResolvedPool], need: int, remaining: dict[str, int], free: dict[str, int],
               caps: dict[str, Fraction]) -> str | None:
    """The pool that takes a team's whole guarantee: among the first pool in the team's order
    with room and the pools interchangeable with it (same model, capacity, node shape, price),
    the first in the team's own order (resolve.py) still under its cap (`_spread_caps`), else
    the least full in proportion to its size. Packing identical pools in declaration order
    would fill the first ones with guarantees and leave the last with GPUs no team's burst can
    reach; spreading them keeps every pool's spare GPUs next to the teams that borrow them."""
    first = next((p for p in pools if remaining[p.name] >= need), None)
    if first is None:
        return None
    peers = [p for p in pools if p.interchangeable_key == first.interchangeable_key and remaining[p.name] >= need]
    under = next((p for p in peers if free[p.name] - remaining[p.name] + need <= caps[p.name]), None)
    if under is not None:
        return under.name
    return min(peers, key=lambda p: (Fraction(free[p.name] - remaining[p.name] + need, free[p.name]),
                                     pools.index(p))).name


def _guarantees_first(cluster: ResolvedCluster, placed: dict[str, dict[str, int]]) -> None:
    """Among each team's interchangeable pools, those holding its guarantee come first in its
    flavor order, so Kueue tries the team's jobs there before borrowing on an identical pool."""
    for team in cluster.teams:
        held = placed.get(team.name, {})
        team.gpu_pools = reordered_among_identical(team.gpu_pools, lambda pool: held.get(pool.name, 0) == 0)


class _FlowNetwork:
    """A small max-flow (Edmonds-Karp); teams x pools is at most a few thousand edges per pool."""

    def __init__(self) -> None:
        self.capacity: dict[str, dict[str, int]] = defaultdict(dict)

    def add(self, source: str, target: str, capacity: int) -> None:
        self.capacity[source][target] = self.capacity[source].get(target, 0) + capacity
        self.capacity[target].setdefault(source, 0)

    def max_flow(self, source: str, sink: str) -> int:
        flow = 0
        while True:
            parent: dict[str, str | None] = {source: None}
            queue = deque([source])
            while queue and sink not in parent:
                node = queue.popleft()
                for target, cap in self.capacity[node].items():
                    if cap > 0 and target not in parent:
                        parent[target] = node
                        queue.append(target)
            if sink not in parent:
                return flow
            bottleneck, node = None, sink
            while parent[node] is not None:
                prev = parent[node]
                cap = self.capacity[prev][node]
                bottleneck = cap if bottleneck is None else min(bottleneck, cap)
                node = prev
            node = sink
            while parent[node] is not None:
                prev = parent[node]
                self.capacity[prev][node] -= bottleneck
                self.capacity[node][prev] += bottleneck
                node = prev
            flow += bottleneck

    def reachable(self, source: str) -> set[str]:
        seen, queue = {source}, deque([source])
        while queue:
            node = queue.popleft()
            for target, cap in self.capacity[node].items():
                if cap > 0 and target not in seen:
                    seen.add(target)
                    queue.append(target)
        return seen


def _place_gpus(cluster: ResolvedCluster, sink: DiagnosticSink) -> dict[str, dict[str, int]]:
    pools = [p for p in cluster.pools if not p.is_mig]
    free = {p.name: p.guarantee_capacity for p in pools}
    teams = [t for t in cluster.teams if t.spec.gpus.guaranteed > 0]
    for team in teams:
        if not team.gpu_pools:
            sink.error(codes.OVER_CAPACITY,
                       f"team '{team.name}' is guaranteed {team.spec.gpus.guaranteed} GPUs but accepts no "
                       f"whole-GPU pool (capacity '{team.spec.capacity}'"
                       + (f", models {', '.join(team.spec.models)}" if team.spec.models else "") + ")",
                       team.located.position("spec", "gpus", "guaranteed"))
    teams = [t for t in teams if t.gpu_pools]
    placed = _greedy(teams, free)
    if placed is not None:
        return placed
    network = _FlowNetwork()
    for team in teams:
        network.add("source", f"team:{team.name}", team.spec.gpus.guaranteed)
        for pool in team.gpu_pools:
            network.add(f"team:{team.name}", f"pool:{pool.name}", team.spec.gpus.guaranteed)
    for name, capacity in free.items():
        network.add(f"pool:{name}", "sink", capacity)
    demand = sum(t.spec.gpus.guaranteed for t in teams)
    flow = network.max_flow("source", "sink")
    if flow == demand:
        result: dict[str, dict[str, int]] = {}
        for team in teams:
            used = {}
            for pool in team.gpu_pools:
                # Flow on team->pool equals the reverse edge's residual capacity.
                amount = network.capacity[f"pool:{pool.name}"].get(f"team:{team.name}", 0)
                if amount:
                    used[pool.name] = amount
            result[team.name] = used
        return result
    # Infeasible: the teams reachable from the source in the residual graph all compete for the
    # saturated pools reachable with them; together they are short by exactly demand - flow.
    reachable = network.reachable("source")
    short_teams = [t for t in teams if f"team:{t.name}" in reachable]
    short_pools = [p for p in pools if f"pool:{p.name}" in reachable]
    wanted = sum(t.spec.gpus.guaranteed for t in short_teams)
    have = sum(free[p.name] for p in short_pools)
    pool_text = ", ".join(
        f"{p.name} ({p.spec.nodes} nodes x {p.spec.gpusPerNode} GPUs"
        + (f" x overcommit {p.overcommit:g}" if p.overcommit != 1 else "") + f" = {free[p.name]})"
        for p in short_pools)
    team_text = ", ".join(f"{t.name} ({t.spec.gpus.guaranteed})" for t in short_teams)
    single = short_pools[0].name if len(short_pools) == 1 else None
    headline = (f"pool {single} is short by {wanted - have} GPUs" if single
                else f"pools {', '.join(p.name for p in short_pools)} are short by {wanted - have} GPUs")
    for team in short_teams:
        sink.error(codes.OVER_CAPACITY,
                   f"{headline}: guarantees of teams {team_text} total {wanted} GPUs, but the pools they "
                   f"accept hold {have}: {pool_text}",
                   team.located.position("spec", "gpus", "guaranteed"))
    return {}


def _place_mig(cluster: ResolvedCluster, placement: Placement, sink: DiagnosticSink) -> None:
    demand_by_pool: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for team in cluster.teams:
        wanted = {p: n for p, n in team.mig.items() if n > 0}
        if not wanted:
            continue
        pool = next((p for p in team.mig_pools
                     if p.gpu_model is not None and all(p.gpu_model.profile_named(profile) for profile in wanted)), None)
        if pool is None:
            continue  # resolve already reported the unknown profile
        placement.mig.setdefault(team.name, {})[pool.name] = dict(sorted(wanted.items()))
        for profile, count in wanted.items():
            demand_by_pool[pool.name][profile] += count
    cspec = cluster.located
    for pool in (p for p in cluster.pools if p.is_mig):
        gpu = pool.gpu_model
        if gpu is None:
            continue  # reported by resolve
        demand = dict(sorted(demand_by_pool.get(pool.name, {}).items()))
        position = cspec.position("spec", "pools", pool.index, "mig")
        if isinstance(pool.spec.mig, str):  # planned
            result: PlanResult = plan_mig(gpu, demand, gpus_available=pool.gpus)
            if not result.feasible:
                sink.error(codes.MIG_DEMAND_TOO_BIG,
                           f"MIG guarantees on pool '{pool.name}' ({_demand_text(demand)}) need "
                           f"{result.gpus} {pool.spec.gpu} GPUs but the pool has {pool.gpus}", position)
                continue
            layouts = [LayoutCount(l.count, dict(l.profiles)) for l in result.layouts]
            leftover = pool.gpus - result.gpus
            if leftover:
                # GPUs no guarantee needs still serve shared quota, cut the way NVIDIA ships as default.
                balanced = dict(gpu.balanced_layout)
                same = next((l for l in layouts if l.profiles == balanced), None)
                if same is not None:
                    layouts[layouts.index(same)] = LayoutCount(same.count + leftover, balanced)
                else:
                    layouts.append(LayoutCount(leftover, balanced))
            placement.mig_plans[pool.name] = MigPoolPlan(pool, layouts, demand, result.gpus,
                                                         result.lower_bound, fixed=False)
        else:
            layout = dict(sorted(pool.spec.mig.layout.items()))
            problems = check_layout(gpu, layout)
            if problems:
                for problem in problems:
                    sink.error(codes.MIG_UNPLACEABLE,
                               f"pool '{pool.name}': fixed MIG layout {_demand_text(layout)} cannot be placed on "
                               f"one {pool.spec.gpu}: {problem}", position)
                continue
            plan = MigPoolPlan(pool, [LayoutCount(pool.gpus, layout)], demand, pool.gpus, pool.gpus, fixed=True)
            have = plan.instances()
            for profile, count in demand.items():
                if count > have.get(profile, 0):
                    sink.error(codes.MIG_DEMAND_TOO_BIG,
                               f"MIG guarantees on pool '{pool.name}' ask for {count} x {profile} but its fixed "
                               f"layout gives {have.get(profile, 0)} ({pool.gpus} GPUs x {_demand_text(layout)})",
                               position)
            placement.mig_plans[pool.name] = plan


def _demand_text(demand: dict[str, int]) -> str:
    return ", ".join(f"{count} x {profile}" for profile, count in sorted(demand.items())) or "nothing"


def plan(cluster: ResolvedCluster, sink: DiagnosticSink) -> Placement:
    placement = Placement()
    placement.gpus = _place_gpus(cluster, sink)
    # The planner settles each team's order among identical pools: resolve could only guess it.
    _guarantees_first(cluster, placement.gpus)
    _place_mig(cluster, placement, sink)
    return placement
