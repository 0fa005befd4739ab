"""How far the quota tree may move before a set-aside head's answer can change (this engine's
own; Kueue re-nominates every head it requeues).

A failed nomination is a function of the workload, its scan position, the static quotas and
the readings it took (nomination_cache). Commit versions say when one of those readings *may*
have changed: in a large cohort tree every admission anywhere moves the versions of its pairs,
and each waiting head is retraced at every moment to find the same answers again. Most of those
answers do not move at all: a team at its borrowingLimit reads its own cap, whatever the
cohort's root holds. The bounds here say so directly: a reading's answer is a function of the
usage of its queue and of the queue's ancestors, and it stays the same while

- the queue's own workloads stay put (the commit versions of its own pairs), and
- each ancestor's usage stays within bounds worked out from the reading (`UsageBounds`):
  a borrowing level found at an ancestor holds while that ancestor's usage stays on the same
  side of its subtree quota less the request; an unused amount capped by the queue's own
  borrowingLimit holds while every ancestor could still give at least that much.

A preemption answer (the oracle's, or the nomination's own search) is bounded only when it was
decided by the queue alone: the request exceeds what its borrowingLimit allows even with its own
candidates gone (Preemptor.beyond_own_limit), which only its own workloads can change. That holds
under fair sharing too: no share of any other queue raises the queue's own cap. Any other
reading, and any tree with a lendingLimit on the path (where a child's change may stop short of
its parent), gives no bounds: the commit versions decide, as before.
"""

from __future__ import annotations

from compiler.evaluator.assigner import NO_CANDIDATES, ORACLE_READING, QUOTA_READING
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import FlavorResource
from compiler.evaluator.preemption_common import PreemptionRequest
from compiler.evaluator.tree import QuotaNode, height_of_lowest_subtree_that_fits

NO_LIMIT = 1 << 62


class UsageBounds:
    """Bounds an answer (or a quiet queue's answers) holds within: the commit versions of the
    queue's own pairs, and a range of usage per (ancestor, pair). `hold()` is True while
    every answer would read the same."""

    __slots__ = ("own_reader", "own_state", "ranges", "pairs")

    def __init__(self, own_reader, own_state, ranges: list[tuple[dict, FlavorResource, int, int]],
                 pairs: frozenset[FlavorResource]) -> None:
        self.own_reader = own_reader
        self.own_state = own_state
        self.ranges = ranges  # (an ancestor's usage dict, pair, lowest, highest usage)
        self.pairs = pairs    # the queue's own pairs read

    def hold(self) -> bool:
        if self.own_reader() != self.own_state:
            return False
        for item in self.ranges:
            usage = item[0]
            used = usage.get(item[1], 0)
            if used < item[2] or used > item[3]:
                return False
        return True


class _Ranges:
    """Usage ranges per (ancestor, pair), narrowed reading by reading."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[int, FlavorResource], list] = {}

    def within(self, node: QuotaNode, fr: FlavorResource, low: int, high: int) -> None:
        self.add(node.usage, fr, low, high)

    def add(self, usage: dict, fr: FlavorResource, low: int, high: int) -> None:
        key = (id(usage), fr)
        current = self.by_key.get(key)
        if current is None:
            self.by_key[key] = [usage, fr, low, high]
            return
        if low > current[2]:
            current[2] = low
        if high < current[3]:
            current[3] = high

    def listed(self) -> list[tuple[dict, FlavorResource, int, int]]:
        # (in the order first narrowed: the same readings give the same list)
        return [tuple(item) for item in self.by_key.values()]


def trail_bounds(engine, cq_name: str, heads: list[WorkloadInfo]) -> UsageBounds | None:
    """Bounds within which every head's last nomination in `cq_name` is the answer a fresh one
    would give (each must hold a current, reusable failure from a fresh scan), or None when one
    of them read something the bounds do not cover."""
    found = []
    for info in heads:
        cached = info.nomination
        if cached is None or cached.cq != cq_name or cached.scan is not None:
            return None
        bounds = nomination_bounds(engine, cq_name, info, cached)
        if bounds is None:
            return None
        found.append(bounds)
    if len(found) == 1:  # (most trails: the head's own bounds, as they are)
        return found[0]
    ranges = _Ranges()
    pairs: set[FlavorResource] = set()
    for bounds in found:
        pairs.update(bounds.pairs)
        for usage, fr, low, high in bounds.ranges:
            ranges.add(usage, fr, low, high)
    own = engine.preemptor.snapshot.queue_version_reader(cq_name, sorted(pairs))
    return UsageBounds(own, own(), ranges.listed(), frozenset(pairs))


def nomination_bounds(engine, cq_name: str, info: WorkloadInfo, cached) -> UsageBounds | None:
    """Bounds within which `cached` (a nomination of `info` in `cq_name` from a fresh scan) is
    what nominating `info` now would answer, if they hold now, else None. Worked out once per
    nomination and state: kept on it (False when its readings have none), asked again only
    once they stop holding."""
    kept = cached.bounds
    if kept is not None:
        if kept is False:
            return None
        if kept.hold():
            return kept
    bounds = _bounds_now(engine, cq_name, info, cached)
    cached.bounds = bounds if bounds is not None else False
    return bounds


def _bounds_now(engine, cq_name: str, info: WorkloadInfo, cached) -> UsageBounds | None:
    """The bounds of `cached`'s readings around the state now, if each reads now what it read
    then (else None: the answer may have changed, and only a retrace says)."""
    node = engine.nodes[cq_name]
    ranges = _Ranges()
    pairs: set[FlavorResource] = set()
    if cached.reader is not None:  # (None: decided by static quotas and the workload's shape alone)
        # (Under fair sharing a nomination's reader reads the whole tree, whose shares a
        # preemption answer reads, and lists no pairs; the readings below are the same, and a
        # preemption answer is bounded only when its own queue decides it, whatever the shares.)
        if cached.readings is None or (cached.frs is None and not engine.fair_sharing):
            return None
        # The ranges below are worked out around the state now, for the answers it gives now:
        # unless no commit moved what the nomination read since (its answers are now's), each
        # answer is first asked again as the nomination asked it.
        current = cached.reader() == cached.state
        for kind, what, amount, answer in cached.readings:
            if kind == QUOTA_READING:
                height, may_reclaim, unused = answer
                if not current and (height_of_lowest_subtree_that_fits(node, what, amount) != (height, may_reclaim)
                                    or node.available(what) != unused):
                    return None
                if not (_height_ranges(node, what, amount, ranges) and _unused_ranges(node, what, ranges)):
                    return None
                pairs.add(what)
            elif kind == ORACLE_READING:
                mode, borrow = answer
                if mode != NO_CANDIDATES or not current and height_of_lowest_subtree_that_fits(
                        node, what, amount)[0] != borrow:
                    return None
                if engine.oracle_may_preempt(cq_name) and not _decided_by_own_queue(
                        engine, info, cq_name, {what}, {what: amount}):
                    return None
                if not _height_ranges(node, what, amount, ranges):
                    return None
                pairs.add(what)
            else:  # the nomination's own preemption search
                if answer or not _decided_by_own_queue(engine, info, cq_name, what, amount):
                    return None
                pairs.update(what)
                pairs.update(amount)
    own = engine.preemptor.snapshot.queue_version_reader(cq_name, sorted(pairs))
    bounds = UsageBounds(own, own(), ranges.listed(), frozenset(pairs))
    return bounds if bounds.hold() else None


def _decided_by_own_queue(engine, info: WorkloadInfo, cq_name: str, frs, usage) -> bool:
    """Whether a preemption search for this request finds nothing whatever the rest of the tree
    holds: it asks more than the queue's borrowingLimit allows with its own candidates gone."""
    snapshot = engine.preemptor.snapshot
    return snapshot.beyond_own_limit(PreemptionRequest(info, cq_name, frozenset(frs), dict(usage)))


def _lends_nothing(node: QuotaNode, fr: FlavorResource) -> bool:
    return not node.local or not node.local.get(fr, 0)


def _height_ranges(node: QuotaNode, fr: FlavorResource, amount: int, ranges: _Ranges) -> bool:
    """Ranges within which height_of_lowest_subtree_that_fits answers as now: walked leaf
    first, the queue's own test reads its own usage only; each ancestor below the root it
    reaches either fails (usage above its subtree quota less what remains of the request) or is
    the first that fits (usage at most that); the root answers its height either way. False
    for a lendingLimit on the way (what remains of the request then reads the usage)."""
    if node.parent is None:
        return True
    used = node.usage.get(fr, 0)
    if node.subtree.get(fr, 0) >= used + amount:
        return True
    local = node.local.get(fr, 0) if node.local else 0
    remaining = amount - (local - used if local > used else 0)
    ancestor = node.parent
    while ancestor.parent is not None:
        if not _lends_nothing(ancestor, fr):
            return False
        limit = ancestor.subtree.get(fr, 0) - remaining  # fits while usage <= limit
        if ancestor.usage.get(fr, 0) <= limit:
            ranges.within(ancestor, fr, -NO_LIMIT, limit)
            return True
        ranges.within(ancestor, fr, limit + 1, NO_LIMIT)
        ancestor = ancestor.parent
    return True


def _unused_ranges(node: QuotaNode, fr: FlavorResource, ranges: _Ranges) -> bool:
    """QuotaNode.available with no lendingLimit above the queue: the least of the root's free
    quota and each capped ancestor's room under its borrowingLimit, then the queue's own cap
    and unlent part (fixed with its usage). Each ancestor's term is (a constant) - (its usage)."""
    terms: list[tuple[QuotaNode, int]] = []  # (ancestor, constant): its term is constant - usage
    ancestor = node.parent
    while ancestor is not None:
        if ancestor.parent is None:
            terms.append((ancestor, ancestor.subtree.get(fr, 0)))
            break
        if not _lends_nothing(ancestor, fr):
            return False
        quota = ancestor.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            terms.append((ancestor, ancestor.subtree.get(fr, 0) + quota.borrowing_limit))
        ancestor = ancestor.parent
    if not terms:  # a queue without a cohort reads its own usage only
        return True
    used = node.usage.get(fr, 0)
    local = node.local.get(fr, 0) if node.local else 0
    quota = node.quotas.get(fr)
    own_cap = NO_LIMIT
    if quota is not None and quota.borrowing_limit is not None:
        own_cap = node.subtree.get(fr, 0) - local - (used - local if used > local else 0) + quota.borrowing_limit
    unlent = local - used if local > used else 0
    # unused = max(0, min(ancestors' terms, own_cap) + unlent)
    values = [(constant - ancestor.usage.get(fr, 0), ancestor, constant) for ancestor, constant in terms]
    least_ancestor = min(values, key=lambda item: item[0])
    least = min(least_ancestor[0], own_cap)
    if least + unlent <= 0:
        if own_cap + unlent <= 0:
            return True  # the queue's own cap keeps it at 0
        # one ancestor whose term keeps it at 0: its usage may only grow
        _, ancestor, constant = least_ancestor
        ranges.within(ancestor, fr, constant + unlent, NO_LIMIT)
        return True
    if own_cap <= least_ancestor[0]:
        # the queue's own cap is the least: every ancestor must still give at least that much
        for _, ancestor, constant in values:
            ranges.within(ancestor, fr, -NO_LIMIT, constant - own_cap)
        return True
    # an ancestor's term is the least: it must stay exactly as it is, the others at least as much
    term, binding, _ = least_ancestor
    for _, ancestor, constant in values:
        if ancestor is binding:
            used_there = binding.usage.get(fr, 0)
            ranges.within(binding, fr, used_there, used_there)
        else:
            ranges.within(ancestor, fr, -NO_LIMIT, constant - term)
    return True
