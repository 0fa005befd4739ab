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
    """What of the engine (scheduler.Engine) a circle is found in."""

    infos: dict[str, WorkloadInfo]
    queues: dict
    holders_print: int
    cycle: int

    def waiting_queues(self) -> set[str]: ...


class CircleFinder:
    """Watches a run cycle by cycle; `period()` after a cycle answers the length of the circle
    the run is in (0: none found yet).

    Brent's cycle finding, with one stored state: the state of a base cycle is kept and every
    later state is compared with it; the base moves to the current cycle after 1, 2, 4, 8, ...
    cycles, so a circle of period P entered at cycle M is found by about cycle 2 x max(M, P) + P
    (a base inside the circle, kept at least P cycles). A state as large as the cluster is
    fingerprinted only at those base cycles and at cycles whose quota holders are the base's
    (a cheap necessary condition for the same state): a few per circle, not one per cycle."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._base: tuple[int, tuple, int] | None = None  # (holders print, state, cycle)
        self._power = 1
        self._distance = 0

    def period(self) -> int:
        engine = self.engine
        holders = engine.holders_print
        base = self._base
        state = None
        if base is not None and holders == base[0]:
            state = fingerprint(engine)
            if state == base[1]:
                return engine.cycle - base[2]
        self._distance += 1
        if base is None or self._distance >= self._power:
            self._base = (holders, state if state is not None else fingerprint(engine), engine.cycle)
            self._power *= 2
            self._distance = 0
        return 0


def fingerprint(engine: Engine) -> tuple:
    """The engine's scheduling state as one comparable value (see the module docstring).

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
                      tuple(info.counts.items()))
        else:
            placed = None
        workloads.append((key, info.cluster_queue, held, info.status, info.reason_code, info.reason,
                          info.preempted_by, info.borrowing, tuple(last_tried.items()) if last_tried else None,
                          info.sticky, tuple(info.pending_victims), placed))
    # Reservation order among holders, ties kept: each holder's rank among the distinct values.
    distinct = sorted({info.reserved_rank for info in holders})
    rank_of = {rank: index for index, rank in enumerate(distinct)}
    order = tuple(rank_of[info.reserved_rank] for info in holders)
    queues = tuple((name, frozenset(queue.members), frozenset(queue.inadmissible),
                    queue.sticky.key if queue.sticky is not None else None,
                    frozenset(failed.key for failed in queue.bulk_moved.values()))
                   for name, queue in engine.queues.items())
    return (tuple(workloads), order, queues, frozenset(engine.waiting_queues()))
