"""Dominant resource share (DRS) with weights: how much of what its parent can lend a node
borrows, the measure fair sharing compares (Kueue's dominantResourceShare in
pkg/cache/scheduler/fair_sharing.go)."""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping

from compiler.evaluator.models import FlavorResource
from compiler.evaluator.tree import QuotaNode

INF = float("inf")


class Share:
    """A dominant resource share: `rank` is Kueue's CompareDRS order as one tuple (a queue of
    weight 0 that borrows ranks above every other, those among themselves by ratio; the others
    by ratio over weight), computed once since shares are compared far more often than made."""

    __slots__ = ("weight", "ratio", "borrowing", "borrowed_frs", "excess", "rank")

    def __init__(self, weight: float, ratio: float, borrowing: bool = False,
                 excess: Mapping[FlavorResource, int] | None = None) -> None:
        self.weight = weight
        self.ratio = ratio                 # unweighted dominant ratio (per mille of what the parent can lend)
        self.borrowing = borrowing
        # What each borrowed pair uses above the node's quota: the share after an eviction
        # is computed from it (`without`) instead of from the node's whole usage.
        self.excess = excess or {}
        self.borrowed_frs = frozenset(self.excess)
        zero_weight_borrows = weight == 0 and ratio != 0
        self.rank = (zero_weight_borrows, ratio if zero_weight_borrows else self.precise())

    def precise(self) -> float:
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return INF
        return self.ratio / self.weight

    def borrowing_on(self, requested: dict) -> bool:
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed_frs)


NEGATIVE = Share(1.0, -1.0)


def compare(a: Share, b: Share) -> int:
    x, y = a.rank, b.rank
    return (x > y) - (x < y)


def share_of(node: QuotaNode, extra: Mapping[FlavorResource, int] | None = None) -> Share:
    """The node's dominant resource share, with `extra` usage on top of its own if given.
    Without `extra` it is kept on the node per version: a preemption search removes and puts
    back workloads, and the node's version (hence its share) comes back with its usage."""
    if not extra:
        cache = node.share
        share = cache.get(node.version)
        if share is None:
            if len(cache) >= 8:
                cache.clear()
            share = cache[node.version] = _share(node, None)
        return share
    if node.parent is None:
        return _not_borrowing(node.weight)
    # From the node's own share, kept: only the pairs in `extra` borrow otherwise (the
    # tournament asks this for every head's keys, on usage dicts of a dozen pairs)
    usage, subtree = node.usage, node.subtree
    excess = dict(share_of(node).excess)
    for fr, value in extra.items():
        quota = subtree.get(fr)
        if quota is not None:
            used = usage.get(fr, 0) + value
            if used > quota:
                excess[fr] = used - quota
            else:
                excess.pop(fr, None)
    return _from_excess(node, excess)


def _share(node: QuotaNode, extra: Mapping[FlavorResource, int] | None) -> Share:
    """share_of computed afresh from the node's whole usage (with `extra` on top)."""
    if node.parent is None:
        return _not_borrowing(node.weight)
    usage = node.usage
    if extra:
        usage = dict(usage)
        for fr, value in extra.items():
            usage[fr] = usage.get(fr, 0) + value
    subtree = node.subtree
    excess: dict[FlavorResource, int] = {}
    for fr, used in usage.items():  # only a pair in use can be borrowed
        quota = subtree.get(fr)
        if quota is not None and used > quota:
            excess[fr] = used - quota
    return _from_excess(node, excess)


def _from_excess(node: QuotaNode, excess: dict[FlavorResource, int]) -> Share:
    """The share of `node` (not a root) borrowing `excess` above its quota per pair."""
    if not excess:
        return _not_borrowing(node.weight)
    borrowed: dict[str, int] = {}
    for fr, amount in excess.items():
        borrowed[fr[1]] = borrowed.get(fr[1], 0) + amount
    lendable = node.lendable
    if lendable is None:  # what the parent could lend per resource depends on quotas only
        lendable = node.lendable = {}
        for fr in node.root().subtree:
            lendable[fr[1]] = lendable.get(fr[1], 0) + node.parent.max_capacity(fr)
    ratio = 0.0
    for res, amount in borrowed.items():
        total = lendable.get(res, 0)
        if total > 0:
            ratio = max(ratio, amount * 1000.0 / total)
    return Share(node.weight, ratio, True, excess)


def share_without(node: QuotaNode, share: Share, removal: Mapping[FlavorResource, int]) -> Share:
    """share_of(node, {fr: -value for fr, value in removal.items()}) where `share` is
    share_of(node): taking usage off can only lower the excess of the pairs already borrowed
    (a pair within its quota stays within it), so only those are computed again."""
    excess = {}
    for fr, amount in share.excess.items():
        amount -= removal.get(fr, 0)
        if amount > 0:
            excess[fr] = amount
    return _from_excess(node, excess)


@lru_cache(maxsize=None)
def _not_borrowing(weight: float) -> Share:
    return Share(weight, 0.0)  # (a share of 0 ranks the same whatever the weight)
