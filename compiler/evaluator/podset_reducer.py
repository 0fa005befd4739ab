"""Kueue's PodSetReducer (pkg/scheduler/flavorassigner/podset_reducer.go): partial admission's
search for the largest pod counts, between each pod set's count and its minCount, that fit."""

from __future__ import annotations

from typing import Callable, TypeVar

from compiler.evaluator.models import PodSet

R = TypeVar("R")


class PodSetReducer:
    """The pod sets of a workload and how far each may be reduced (count - minCount; 0 without
    a minCount). A reduction step s in 0..total takes s/total of each pod set's reducible
    count off it, rounded down, as Kueue's does."""

    __slots__ = ("podsets", "reducible", "total")

    def __init__(self, podsets: list[PodSet]) -> None:
        self.podsets = podsets
        self.reducible = [(ps.count - ps.min_count) if ps.min_count is not None else 0 for ps in podsets]
        self.total = sum(self.reducible)

    def counts(self, step: int) -> list[int]:
        """The pod counts after reduction step `step`."""
        total = self.total
        return [ps.count - (d * step // total) for ps, d in zip(self.podsets, self.reducible)]

    def search(self, fits: Callable[[list[int]], R | None]) -> R | None:
        """`fits`'s answer for the smallest reduction it accepts (its answer not None), by a
        binary search over the steps, or None when no reduction fits (or nothing is reducible)."""
        if self.total <= 0:
            return None
        last_good, last = 0, None
        lo, hi = 0, self.total + 1
        while lo < hi:
            mid = (lo + hi) // 2
            result = fits(self.counts(mid))
            if result is not None:
                last_good, last = mid, result
                hi = mid
            else:
                lo = mid + 1
        if last is not None and lo == last_good:
            return last
        return None
