"""Circles of preemptions: a run to quiescence whose scheduling state comes back.

Kueue's preemption can go round in a circle: A preempts B, B's queue reclaims from C, C's
preempts A, and the cluster is where it was a few cycles before. The engine is deterministic,
so from the first time its whole state repeats it repeats forever with the same period, and
`evaluate` would run on to its cycle cap (8 x workloads + 100 cycles, Kueue's oracle runs the
same) to report the state there. That state is known as soon as the period is: it is the state
`(cap - now) mod period` cycles on. `CircleFinder` finds the period, and the engine runs only
those few cycles more (see `Engine.run`): the answer at the cap, in a handful of cycles.

"Whole state" means everything a later cycle reads or the result reports: every workload's
queue, quota, flavors, counts, status and reason, preemptor, scan position and stickiness, the
order in which the holders reserved quota (candidates are ordered by it, never by its absolute
value), and every queue's heap, inadmissible set, sticky head and failed classes. Caches (reused
nominations, search answers, shares) are functions of that state and are left out.
"""

from __future__ import annotations

from typing import Protocol

from compiler.evaluator.info import WorkloadInfo


class Engine(Protocol):
    """What of the engine (engine.Engine) a circle is found in."""

    infos: dict[str, WorkloadInfo]
    queues: dict
    holders_print: int
    cycle: int
    decisions: int

    def waiting_queues(self) -> set[str]: ...


class CircleFinder:
    """Watches a run cycle by cycle; `period()` after a cycle answers the length of the circle
    the run is in (0: none found yet).

    The state of base cycles is kept, and every later state is compared with the bases whose
    quota holders and flavor-scan positions it has (cheap necessary conditions for the same
    state). Bases are spaced geometrically (each `SPACING` times as far from the start as the
    one before), at least `MIN_GAP` cycles and half the cluster's size in decisions apart, so a
    circle of period P entered at cycle M is found P cycles after the first base at or after M:
    about max(SPACING x M, M + MIN_GAP) + P for a cluster that makes decisions at each cycle
    for a fair share of its workloads. (Brent's single moving base finds it only by about
    2 x max(M, P) + P, and every cycle run past the circle is a cycle of the whole cluster.)
    The run then goes on to the first cycle with the cap's phase in the circle, so finding the
    circle early saves up to a period of cycles as well.

    Stored states share what did not change between bases: a workload's or queue's part equal
    to the one last fingerprinted is that same object (see `fingerprint`), so dozens of bases
    of a large cluster cost little more memory than one, and compare at the speed of pointers
    where they agree."""

    SPACING = 1.15
    # Between two bases at least this many cycles, and decisions for at least half as many
    # workloads as the cluster has: a fingerprint reads every workload, and costs about as much
    # as a few hundred decisions at 40,000 workloads. A run that ends by itself (most do) then
    # spends a few per cent of its time on fingerprints, not a tenth.
    MIN_GAP = 8
    DECISIONS_PER_WORKLOAD = 0.5

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # holders print -> [(cycle, scan positions, state)]
        self._bases: dict[int, list[tuple[int, tuple, tuple]]] = {}
        self._memo: dict = {}
        self._seen = 0
        self._next_base = self.MIN_GAP
        self._decisions_gap = int(len(engine.infos) * self.DECISIONS_PER_WORKLOAD)
        self._next_decisions = self._decisions_gap
        self.base_cycles: list[int] = []  # the cycles whose states were kept, in order

    def period(self) -> int:
        engine = self.engine
        holders = engine.holders_print
        bases = self._bases.get(holders, ())
        scans = _scan_positions(engine) if bases else None
        state = None
        for cycle, base_scans, base in bases:
            # Where every flavor scan stands is a second cheap necessary condition: inside a
            # circle the same holders come back at other scan positions, cycle after cycle.
            if scans != base_scans:
                continue
            if state is None:
                state = fingerprint(engine, self._memo)
            # Two bases never hold one state (the later would have matched the earlier), so
            # at most one matches, at the first return of its state: one period on.
            if state == base:
                return engine.cycle - cycle
        self._seen += 1
        if self._seen >= self._next_base and engine.decisions >= self._next_decisions:
            if state is None:
                state = fingerprint(engine, self._memo)
            if scans is None:
                scans = _scan_positions(engine)
            self._bases.setdefault(holders, []).append((engine.cycle, scans, state))
            self.base_cycles.append(engine.cycle)
            self._next_base = max(self._seen + self.MIN_GAP, int(self._seen * self.SPACING))
            self._next_decisions = engine.decisions + self._decisions_gap
        return 0


def fingerprint(engine: Engine, memo: dict | None = None) -> tuple:
    """The engine's scheduling state as one comparable value (see the module docstring).
    With `memo` (kept by the caller across calls), a workload's or queue's part equal to its
    part in the last call is that call's object: equal states then share their parts.

    Dicts are read in their own order and sets as frozensets: equal values always mean equal
    states; the same state reached by another insertion order may read as another value,
    which only delays finding a circle. (Sorting every dict of a 20,000-workload cluster
    would cost more than the cycle it fingerprints.)"""
    workloads = []
    holders = []
    for key, info in engine.infos.items():
        held = info.holds_quota
        last_tried = info.last_tried
        if held:
            holders.append(info)
            placed = (tuple(info.usage.items()),
                      tuple((ps, tuple(flavors.items())) for ps, flavors in info.flavors.items()),
                      tuple(info.counts.items()),
                      # Where its pods sit (TAS): the same quota held on other domains is another state.
                      tuple((ps, placed_set.flavor, tuple((d.values, d.count) for d in placed_set.assignment.domains))
                            for ps, placed_set in info.placements.items()) if info.placements else None)
        else:
            placed = None
        # A scan position also carries whether the next nomination would still resume from it
        # (Engine._scan_outdated): its age capped at 2 cycles, and whether its queue's
        # generation moved on since.
        scan = None
        if last_tried:
            cycle, generation = info.tried_at
            scan = (tuple(last_tried.items()), min(engine.scheduling_cycle - cycle, 2),
                    engine.generations.get(info.cluster_queue, 0) > generation)
        part = (key, info.cluster_queue, held, info.status, info.reason_code, info.reason,
                info.preempted_by, info.borrowing, scan, info.sticky, tuple(info.pending_victims), placed)
        workloads.append(_shared(memo, key, part) if memo is not None else part)
    # Reservation order among holders, ties kept: each holder's rank among the distinct values.
    distinct = sorted({info.reserved_rank for info in holders})
    rank_of = {rank: index for index, rank in enumerate(distinct)}
    order = tuple(rank_of[info.reserved_rank] for info in holders)
    queues = []
    for name, queue in engine.queues.items():
        part = (name, frozenset(queue.members), frozenset(queue.inadmissible),
                queue.sticky.key if queue.sticky is not None else None,
                frozenset(failed.key for failed in queue.bulk_moved.values()))
        queues.append(_shared(memo, ("queue", name), part) if memo is not None else part)
    return (tuple(workloads), order, tuple(queues), frozenset(engine.waiting_queues()))


def _scan_positions(engine: Engine) -> tuple:
    """Every workload's flavor-scan position, in the engine's order of workloads (a scan
    position is replaced when it moves, never edited in place)."""
    return tuple([info.last_tried for info in engine.infos.values()])


def _shared(memo: dict, key, part: tuple) -> tuple:
    last = memo.get(key)
    if last == part:
        return last
    memo[key] = part
    return part
