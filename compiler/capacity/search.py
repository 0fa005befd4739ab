"""The search: the cheapest candidate that meets every target, and what proves it.

For each way of cutting the pools (the MIG choices asked for, else the policy's own):

1. the largest candidate the bounds allow (every pool at its maximum), for each set of
   guarantees, starts a descent if it meets the targets. One that misses only targets that can
   grow with the pools (preemptions, jobs on nodes too small for their pods) has the descent run
   from it anyway, and a candidate found meeting them starts one. With no start at all, every
   candidate within the bounds is simulated if they are no more than the budget (a burst split
   over flavors by size can let a smaller pool meet a wait); otherwise the cut has no answer.
   When one set of guarantees starts a descent and the other's largest misses a wait, the
   other's candidates cheaper than the answer are simulated too, within the budget;
2. guarantees: with `demand`, each team's guarantee is its mean offered load of whole GPUs
   (and of each MIG profile) in the trace, rounded up (demand.py); the descent below runs from
   the policy's guarantees too, and the cheaper answer wins (ties: demand's); the report says
   which. Whole-GPU guarantees shrink with the pools (scaled down, never up, when
   the pools hold fewer GPUs than they add up to); MIG guarantees do not: the planner's exact
   layouts for them are the floor of a MIG pool;
3. descent: every round proposes, for each pool still free to shrink, the current candidate
   with 1, 2 and 3 x `step` granules fewer (a 4-ary search; `step` starts at a third of the
   pool's range; a granule is a node, or a top-level domain of a pool with a regular topology);
   the cheapest proposal that meets the targets is taken (ties: the candidate's order); a pool
   with a failing proposal has its step divided by four, and once every proposal of a pool at
   step 1 fails it stops;
4. proof: every candidate one granule smaller than the answer in one pool is simulated; if one
   meets the targets the descent goes on from it, so the answer is one no single granule less
   can give (each failure is shown with its misses);
5. proof across pools: the cheaper candidates that move nodes between pools and are not at or
   below a failure already seen (across_pools.py) are simulated if they are no more than the
   budget; past it, each pool's floor with the others at their maximum is probed first, and
   covers the candidates below it. One that meets the targets starts the descent again. When
   none is left the answer is the cheapest node counts within the bounds for its cut and
   guarantees.

Every step decides on whole batches of simulations, compared by (cost, candidate), so the answer
is the same whatever the worker count and whatever order the simulations finish in. Both proofs
take fewer nodes never to shorten a wait (a candidate at or below a failing one fails); the
report says which candidates it compared, how many, and what the budget left unproved.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from compiler.capacity.across_pools import every_cheaper, floor_probes, staircase
from compiler.capacity.candidate import Candidate, TeamQuota
from compiler.capacity.evaluate import Evaluation
from compiler.capacity.in_flight import Running
from compiler.capacity.space import Space, TeamBase
from compiler.capacity.targets import can_grow_with_pools
from compiler.capacity.workers import Executor
from compiler.stages.resolved_model import guarantee_capacity

# Candidates a round proposes per pool: `step`, 2 x `step` and 3 x `step` nodes fewer (a 4-ary
# search). A constant, not the worker count: the candidates simulated, so the answer, must not
# depend on where they run; three per pool and round keep two or more workers busy even when
# only one pool can change.
PROPOSALS = 3
# Unions of the teams' accepted pools checked by fit_to_pools: teams accept pools by model and
# capacity type, so a real cluster has a handful; the bound only stops a pathological one.
MAX_POOL_GROUPS = 4096
# Cheaper candidates the proof across pools simulates per descent (`--proof-budget`): with two
# movable pools the staircase it checks has about one candidate per node of the smaller range;
# a space of up to 64 candidates is searched whole.
PROOF_BUDGET = 64


def _burst(team: TeamBase, guaranteed: int) -> int | None:
    """Demand's burst: enough for the team's peak above its guarantee, never below the policy's;
    None (the policy's burst, unchanged) for the policy's reference, an unlimited burst, or a
    team that never borrows (its `peak` is None: its guarantee is its peak)."""
    if team.peak is None or team.burst is None:
        return None
    return max(team.burst, team.peak - guaranteed)


def fit_to_pools(guaranteed: dict[str, int], teams: list[TeamBase], room: dict[str, int]) -> None:
    """Scale whole-GPU guarantees down, in place, until every group of pools holds the teams that
    accept nothing else: for each union S of the teams' accepted pools, the guarantees of the
    teams accepting only pools of S may total at most S's room (Hall's condition, which is what
    `compile` needs to place every guarantee). A group that is short scales its teams down by the
    same factor; groups are taken smallest first, so a team is cut where it is short, not
    everywhere. Scaling only lowers totals, so a group that held still holds."""
    accepts = {t.team: frozenset(p for p in t.pools if p in room) for t in teams if guaranteed.get(t.team, 0) > 0}
    if not accepts:
        return
    singles = set(accepts.values())
    groups, frontier = set(singles), set(singles)
    while frontier and len(groups) < MAX_POOL_GROUPS:
        grown = {a | b for a in frontier for b in singles} - groups
        groups |= grown
        frontier = grown
    for group in sorted(groups, key=lambda g: (len(g), sorted(g))):
        members = sorted(team for team, pools in accepts.items() if pools <= group)
        wanted = sum(guaranteed[team] for team in members)
        have = sum(room[p] for p in group)
        if wanted > have:
            for team in members:
                guaranteed[team] = guaranteed[team] * have // wanted


@dataclass(frozen=True)
class AcrossPools:
    """What the proof across pools showed for an answer (across_pools.py)."""

    checked: int         # cheaper candidates simulated for it, over every step of the descent
    left: int | None     # cheaper candidates it did not simulate (0: proved; None: too many to list)
    # Every cheaper candidate within the bounds was simulated (they were no more than the budget):
    # a proof that needs no assumption on how waits follow the pools.
    every_cheaper: bool = False

    @property
    def proved(self) -> bool:
        return self.left == 0


@dataclass
class CutResult:
    cut: tuple[tuple[str, str], ...]
    answer: Evaluation | None
    largest: Evaluation
    guarantees_note: str = ""
    neighbours: list[Evaluation] = field(default_factory=list)
    # With no answer: every largest candidate of the cut (the policy's guarantees, demand's), each
    # of whose misses the report gives.
    tops: list[Evaluation] = field(default_factory=list)
    across: AcrossPools | None = None
    # With no answer: every candidate within the bounds was simulated (no more than the budget).
    every_candidate: bool = False


class _Start(NamedTuple):
    """Where a cut's descent starts: a candidate meeting the targets, the guarantees it scales,
    what the report says of them, and the largest candidate it came from."""

    top: Evaluation
    reference: list[TeamBase]
    note: str
    largest: Evaluation


@dataclass
class Answer:
    baseline: Evaluation
    best: CutResult | None
    cuts: list[CutResult]
    evaluations: list[Evaluation]   # every candidate simulated, in the order the search asked for them
    # The most candidates simulated to assume nothing of how waits follow the pools (Search.grid_budget)
    grid_budget: int | None = None


class Search:
    def __init__(self, space: Space, executor: Executor, on_done: Callable[[Evaluation, Evaluation | None], None],
                 on_running: Running | None = None, proof_budget: int = PROOF_BUDGET):
        self.space = space
        self.executor = executor
        self.on_done = on_done
        self.on_running = on_running  # told how far the simulations under way have got (in_flight.py)
        self.proof_budget = proof_budget
        self.cache: dict[Candidate, Evaluation] = {}
        # (cut, "policy" or "demand": the guarantees scaled) -> nodes -> the candidate built for
        # them: the failures the proof across pools may count are those of its own cut and guarantees.
        self.built: dict[tuple, dict[tuple[tuple[str, int], ...], Candidate]] = {}
        self.order: list[Evaluation] = []
        self.best: Evaluation | None = None

    # -- evaluations ---------------------------------------------------------------------------------
    def _done(self, evaluation: Evaluation) -> None:
        if evaluation.meets and (self.best is None or evaluation.cost < self.best.cost):
            self.best = evaluation
        self.on_done(evaluation, self.best)

    def batch(self, candidates: list[Candidate], full: bool = False) -> list[Evaluation]:
        """The candidates' evaluations, each simulated once. `full`: the ones whose misses the
        report prints (the policy as it is, the largest candidates, the proof) run to the end of
        the trace, so their misses are figures; one stopped earlier is simulated again in full
        and takes its place in the order."""
        wanted = [c for c in dict.fromkeys(candidates)
                  if c not in self.cache or (full and self.cache[c].stopped_at is not None)]
        for evaluation in self.executor.evaluate(wanted, self._done, full, self.on_running) if wanted else []:
            stopped = self.cache.get(evaluation.candidate)
            self.cache[evaluation.candidate] = evaluation
            if stopped is None:
                self.order.append(evaluation)
            else:
                self.order[next(i for i, e in enumerate(self.order) if e is stopped)] = evaluation
        return [self.cache[c] for c in candidates]

    # -- guarantees ----------------------------------------------------------------------------------
    def _scaled(self, nodes: tuple[tuple[str, int], ...], cut, reference: list[TeamBase]) -> tuple[TeamQuota, ...]:
        probe = Candidate(nodes, cut)
        room = math.floor(self.space.whole_gpus(probe) * self.space.overcommit)
        total = sum(t.guaranteed for t in reference)
        factor = min(1.0, room / total) if total else 1.0
        guaranteed = {t.team: math.floor(t.guaranteed * factor + 1e-9) for t in reference}
        fit_to_pools(guaranteed, reference, self._guarantee_room(nodes, cut))
        keep_mig = self.space.any_mig(cut)
        mig = {t.team: t.mig if keep_mig else () for t in reference}
        if keep_mig and reference is not self.space.teams:
            mig = dict(self._fill_mig(nodes, cut, reference))
        return tuple(TeamQuota(t.team, guaranteed[t.team], mig[t.team], _burst(t, guaranteed[t.team]))
                     for t in sorted(reference, key=lambda t: t.team))

    def _guarantee_room(self, nodes, cut) -> dict[str, int]:
        """Whole-GPU pool -> the GPUs guarantees may take there in this candidate (as `compile`
        counts them: GPUs x overcommit, rounded down); pools cut with MIG hold none."""
        chosen, count = dict(cut), dict(nodes)
        return {p.name: guarantee_capacity(count[p.name] * p.gpus_per_node, self.space.overcommit)
                for p in self.space.pools if p.cut_in(chosen) == "none"}

    def _fill_mig(self, nodes, cut, reference: list[TeamBase]):
        """Demand guarantees on the first pool cut with MIG, scaled to fill it (mig_cut.py)."""
        from compiler.capacity.mig_cut import fill_pool

        chosen, count = dict(cut), dict(nodes)
        pool = next(p for p in self.space.pools if p.cut_in(chosen) != "none")
        demand = tuple((t.team, t.mig) for t in sorted(reference, key=lambda t: t.team))
        layout = pool.layout if pool.cut_in(chosen) == "layout" else ()
        filled = fill_pool(pool.gpu, count[pool.name] * pool.gpus_per_node, demand, layout)
        return [(team, tuple((p, n) for p, n in profiles if n > 0)) for team, profiles in filled]

    def _guarantees_name(self, reference: list[TeamBase]) -> str:
        return "policy" if reference is self.space.teams else "demand"

    def candidate(self, nodes, cut, reference: list[TeamBase]) -> Candidate:
        """The candidate of these node counts and cut, with `reference`'s guarantees (the policy's,
        or demand's for the cut) scaled to them: built once, as every step of the search sees it."""
        nodes = tuple(nodes)
        built = self.built.setdefault((cut, self._guarantees_name(reference)), {})
        if nodes not in built:
            built[nodes] = Candidate(nodes, cut, self._scaled(nodes, cut, reference))
        return built[nodes]

    # -- the search ------------------------------------------------------------------------------------
    def run(self) -> Answer:
        pools = self.space.pools
        baseline_candidate = Candidate(tuple((p.name, p.current) for p in pools))
        largest_nodes = tuple((p.name, p.maximum) for p in pools)
        demand = self.space.guarantees == "demand"
        first = [baseline_candidate]
        for cut in self.space.cuts:
            first.append(self.candidate(largest_nodes, cut, self.space.teams))
            if demand:
                first.append(self.candidate(largest_nodes, cut, self.space.demand[cut]))
        evaluated = self.batch(first, full=True)
        baseline, rest = evaluated[0], evaluated[1:]
        per_cut = 2 if demand else 1
        results = [self._descend_cut(cut, rest[i * per_cut:(i + 1) * per_cut]) for i, cut in enumerate(self.space.cuts)]
        found = [r for r in results if r.answer is not None]
        best = min(found, key=lambda r: (r.answer.cost, r.answer.candidate)) if found else None
        if self._baseline_competes(baseline, best):
            # The descents start from the largest candidates, and moving nodes between pools is
            # not searched: they can end above a policy that already meets every target. The
            # policy as it is then competes, with its own descent and proof (ties: no change).
            kept = self._descent(baseline, (), self.space.teams, "the policy's own guarantees: the policy as it is "
                                 "meets every target, and the descent from it costs no more than those from the largest")
            if best is None or kept.answer.cost <= best.answer.cost:
                best = kept
                # (the policy's own cut answers with it: the report's cuts and answer agree)
                results = [dataclasses.replace(kept, largest=r.largest) if r.cut == () else r for r in results]
        return Answer(baseline, best, results, list(self.order), self.grid_budget)

    def _baseline_competes(self, baseline: Evaluation, best: CutResult | None) -> bool:
        """Whether the policy as it is meets the targets within the bounds and the cuts asked for
        (the policy's own cut, no `--mig`), at no more than the best answer's cost."""
        within = all(p.minimum <= p.current <= p.maximum for p in self.space.pools)
        return (baseline.meets and within and () in self.space.cuts
                and (best is None or baseline.cost <= best.answer.cost))

    def _descend_cut(self, cut, largest: list[Evaluation]) -> CutResult:
        """The cut's answer: the descent from each largest candidate (demand guarantees first,
        then the policy's) that meets the targets, or from below one that misses only targets
        that can grow with the pools; the cheaper answer wins (ties: demand's). With none, every
        candidate within the bounds if they are no more than the budget; with one, every candidate
        cheaper than its answer of a set of guarantees whose largest misses a wait (the same)."""
        starts, pending, exhausted = [], [], []
        for top, reference, note in self._tops(cut, largest):
            if top.meets:
                starts.append(_Start(top, reference, note, top))
            elif top.misses and all(can_grow_with_pools(miss) for miss in top.misses):
                found, simulated_all = self._grown_below(top, cut, reference)
                exhausted.append(simulated_all)
                if found is not None:
                    starts.append(_Start(found, reference, note + " (found below a largest candidate that misses "
                                                                  "only targets that can grow with the pools)", top))
            else:
                pending.append((top, reference, note))
        if not starts:
            # Waits grow as pools shrink, but for one thing: the compiler splits a team's guarantee
            # and burst over its flavors by their size, so a smaller pool can, rarely, leave
            # another flavor room for a job that fits one flavor only.
            for top, reference, note in pending:
                found, simulated_all = self._whole_grid(cut, reference, top.cost + 1e-6)
                exhausted.append(simulated_all)
                if found is not None:
                    starts.append(_Start(found, reference, note + " (found by simulating every candidate within "
                                                                  "the bounds: the largest misses a target)", top))
            pending = []   # (their whole grids are simulated, or more than the budget)
        if not starts:
            return CutResult(cut, None, largest[-1], tops=list(largest), every_candidate=all(exhausted))
        results = [self._descent_from(start, cut) for start in starts]
        # A set of guarantees whose largest misses a wait while the other's meets: the same
        # split over flavors can let it meet lower, so its candidates cheaper than the answer
        # are simulated too, within the budget.
        below = min(r.answer.cost for r in results)
        for top, reference, note in pending:
            found, _ = self._whole_grid(cut, reference, below)
            if found is not None:
                results.append(self._descent_from(_Start(found, reference, note + " (found by simulating every "
                                                         "cheaper candidate: the largest misses a target)", top), cut))
        return min(results, key=lambda r: r.answer.cost)   # (min keeps the first of equals: demand's)

    def _descent_from(self, start: _Start, cut) -> CutResult:
        result = self._descent(start.top, cut, start.reference, start.note)
        result.largest = start.largest
        if start.reference is self.space.teams:
            result.guarantees_note = self._policy_guarantees(result.answer) + start.note
        return result

    def _tops(self, cut, largest: list[Evaluation]) -> list[tuple[Evaluation, list[TeamBase], str]]:
        """Each largest candidate with the guarantees it scales and what the report says of them:
        demand's first (when compared), then the policy's."""
        if len(largest) == 1:
            return [(largest[0], self.space.teams, "")]
        why = (" (cheaper than guarantees from demand)" if largest[1].meets else
               " (guarantees from demand miss the targets at the largest candidate: "
               + "; ".join(largest[1].misses[:3]) + ")")
        return [(largest[1], self.space.demand[cut], "guarantees from each team's mean offered load in the trace"),
                (largest[0], self.space.teams, why)]

    def _grown_below(self, top: Evaluation, cut, reference) -> tuple[Evaluation | None, bool]:
        """Below a largest candidate that misses only targets that can grow with the pools
        (preemptions, jobs on nodes too small for their pods): the descent from it, run anyway,
        then the cheaper candidates no missed wait covers, if no more than the budget. The
        cheapest found meeting the targets (or None), and whether every cheaper one was simulated."""
        found = self._descend(top, cut, reference)
        if found.meets:
            return found, False
        across, met = self._across_pools(top, cut, reference)
        return (min(met, key=lambda e: (e.cost, e.candidate)) if met else None), across.every_cheaper

    @property
    def grid_budget(self) -> int | None:
        """The most candidates simulated to show, assuming nothing of how waits follow the pools,
        that none cheaper (or none at all) meets the targets; None with a single pool, where a
        team's guarantee and burst cannot be split over several flavors, so its waits do follow
        its nodes and the descent's proof is exact."""
        return self.proof_budget if len(self.space.pools) > 1 else None

    def _every_cheaper(self, below: float):
        """Every candidate within the bounds cheaper than `below`, if they are no more than the
        grid budget; else None."""
        if self.grid_budget is None:
            return None
        return every_cheaper(self.space.pools, below, self.grid_budget)

    def _whole_grid(self, cut, reference, below: float) -> tuple[Evaluation | None, bool]:
        """The cheapest candidate within the bounds cheaper than `below` that meets the targets,
        every one simulated, and True; (None, False) if they are more than the budget."""
        grid = self._every_cheaper(below)
        if grid is None:
            return None, False
        met = [e for e in self.batch([self.candidate(nodes, cut, reference) for nodes in grid]) if e.meets]
        return (min(met, key=lambda e: (e.cost, e.candidate)) if met else None), True

    def _policy_guarantees(self, answer: Evaluation) -> str:
        """What the answer did to the policy's own guarantees: kept, or scaled down with the pools."""
        before = {t.team: t.guaranteed for t in self.space.teams}
        scaled = any(q.guaranteed < before.get(q.team, 0) for q in answer.candidate.quotas or ())
        return "the policy's guarantees" + (", scaled down with the pools" if scaled else "")

    def _descent(self, top: Evaluation, cut, reference, note: str) -> CutResult:
        """From `top` (meeting the targets): the descent, then the proof; a neighbour that meets
        the targets starts the descent again."""
        current, checked = top, 0
        while True:
            current = self._descend(current, cut, reference)
            neighbours = self._neighbours(current, cut, reference)
            better = [n for n in neighbours if n.meets]
            if not better:
                across, better = self._across_pools(current, cut, reference)
                checked += across.checked
                if not better:
                    break
            current = min(better, key=lambda e: (e.cost, e.candidate))
        return CutResult(cut, current, top, note, neighbours,
                         across=dataclasses.replace(across, checked=checked))

    def _descend(self, current: Evaluation, cut, reference) -> Evaluation:
        by_name = {p.name: p for p in self.space.pools}
        # (steps in granules: a pool with a topology moves whole top-level domains)
        steps = {p.name: max(1, math.ceil((p.maximum - p.minimum) / p.granule / PROPOSALS))
                 for p in self.space.pools if p.movable}
        stuck: set[str] = set()
        while True:
            nodes = dict(current.candidate.nodes)
            proposals: list[tuple[str, Candidate]] = []
            for name, step in steps.items():
                if name in stuck or nodes[name] <= by_name[name].minimum:
                    continue
                unit = by_name[name].granule
                counts = sorted({max(by_name[name].minimum, nodes[name] - step * unit * j)
                                 for j in range(1, PROPOSALS + 1)}, reverse=True)
                for count in counts:
                    fewer = dict(nodes)
                    fewer[name] = count
                    proposals.append((name, self.candidate(tuple(fewer.items()), cut, reference)))
            if not proposals:
                return current
            evaluations = self.batch([candidate for _, candidate in proposals])
            failed = {name for (name, _), e in zip(proposals, evaluations) if not e.meets}
            for name in failed:
                if steps[name] == 1 and not any(e.meets for (n, _), e in zip(proposals, evaluations) if n == name):
                    stuck.add(name)
                steps[name] = max(1, steps[name] // (PROPOSALS + 1))
            met = [e for e in evaluations if e.meets]
            if met:
                current = min(met, key=lambda e: (e.cost, e.candidate))

    def _across_pools(self, answer: Evaluation, cut, reference) -> tuple[AcrossPools, list[Evaluation]]:
        """The cheaper candidates to simulate (across_pools.py): what they showed, and those
        that meet the targets. When they are no more than the budget, every cheaper candidate
        is simulated: the compiler splits a team's guarantee and burst over its flavors by their
        size, so even a wait a larger pool misses can, rarely, be met by a smaller one.
        Otherwise those no failure seen so far covers, if they are no more than the budget;
        past it, the pools' floors are probed first, and what they spent counts against it. A
        failure covers the candidates below it only by a wait it misses (a preemption or node-fit
        miss can vanish with fewer nodes, and a candidate that does not compile says nothing of
        smaller ones); once such a miss has been seen, every cheaper candidate not covered is
        left, not only the maximal ones."""
        every_cheaper = self._every_cheaper(answer.cost)
        if every_cheaper is not None:   # (few enough to simulate them all, assuming nothing)
            evaluations = self.batch([self.candidate(nodes, cut, reference) for nodes in every_cheaper])
            return AcrossPools(len(evaluations), 0, True), [e for e in evaluations if e.meets]
        seen = [self.cache[c] for c in self.built.get((cut, self._guarantees_name(reference)), {}).values()
                if c in self.cache]
        failures = [dict(e.candidate.nodes) for e in seen if _fails_on_waits(e)]
        every = any(can_grow_with_pools(miss) for e in seen for miss in e.misses)
        stairs = staircase(self.space.pools, answer.cost, failures, every, keep=self.proof_budget)
        probes: list[Evaluation] = []
        if not stairs.within(self.proof_budget) and not every:
            # Too many: the floor each pool needs with every other at its maximum covers those below
            # it. (Not once a target that grows with the pools was missed: a probe with every other
            # pool at its maximum then tends to miss that target, not a wait, and covers nothing.)
            def misses_waits(nodes_list) -> list[bool]:
                evaluations = self.batch([self.candidate(nodes, cut, reference) for nodes in nodes_list])
                probes.extend(evaluations)
                return [_fails_on_waits(e) for e in evaluations]

            found = floor_probes(self.space.pools, dict(answer.candidate.nodes), failures, misses_waits,
                                    self.proof_budget)
            stairs = staircase(self.space.pools, answer.cost, failures + found, every,
                               keep=self.proof_budget - len(probes))
        cheaper_probes = [e for e in probes if e.meets and e.cost < answer.cost]
        if not stairs.within(self.proof_budget - len(probes)):   # (a proof it cannot finish is not begun)
            return AcrossPools(len(probes), stairs.count), cheaper_probes
        evaluations = self.batch([self.candidate(nodes, cut, reference) for nodes in stairs.open])
        return AcrossPools(len(probes) + len(evaluations), 0), cheaper_probes + [e for e in evaluations if e.meets]

    def _neighbours(self, answer: Evaluation, cut, reference) -> list[Evaluation]:
        nodes = dict(answer.candidate.nodes)
        proposals = []
        for pool in self.space.pools:
            if pool.movable and nodes[pool.name] > pool.minimum:
                fewer = dict(nodes)
                fewer[pool.name] -= pool.granule
                proposals.append(self.candidate(tuple(fewer.items()), cut, reference))
        return self.batch(proposals, full=True)


def _fails_on_waits(evaluation: Evaluation) -> bool:
    """Whether a candidate misses a target that only fewer nodes can make worse (a wait)."""
    return (not evaluation.meets and evaluation.error is None
            and any(not can_grow_with_pools(miss) for miss in evaluation.misses))


def estimated_total(space: Space) -> int:
    """A rough count of the simulations the search will run, for the progress bar's time estimate."""
    movable = [p for p in space.pools if p.movable]
    rounds = sum(PROPOSALS * (math.ceil(math.log(max(2, (p.maximum - p.minimum) // p.granule + 1), PROPOSALS + 1)) + 1)
                 for p in movable)
    per_cut = (2 if space.guarantees == "demand" else 1) * (1 + rounds + len(movable))
    return 1 + per_cut * len(space.cuts)
