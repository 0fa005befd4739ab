"""The fair-sharing tournament: the order in which a cycle processes the heads of a cohort tree,
the head of the poorest branch first at every level (Kueue's fairSharingIterator and
runTournament in pkg/scheduler/fair_sharing_iterator.go)."""

from __future__ import annotations

from bisect import bisect_left
from operator import itemgetter
from typing import Mapping, Protocol, TypeVar

from compiler.evaluator.drs import share_of
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import FlavorResource
from compiler.evaluator.tree import QuotaNode


class Head(Protocol):
    """A nominated head as the tournament sees it."""

    cq: str
    info: WorkloadInfo

    @property
    def usage(self) -> Mapping[FlavorResource, int]: ...


H = TypeVar("H", bound=Head)


def pop_fair(nodes: Mapping[str, QuotaNode], remaining: dict[str, H], memo: dict | None = None) -> H:
    """Pick the next entry among `remaining` (CQ name -> head), as Kueue's fair sharing
    iterator does with the usage admitted so far in this cycle: the whole tournament is run
    again for every pick (the reference `FairTournament` is checked against). `memo` (one
    dict per cycle) keeps each head's shares while the usage on its path is unchanged."""
    first = min(remaining)  # Kueue picks an arbitrary CQ; we pick by name for determinism
    node = nodes[first]
    if node.parent is None:
        return remaining.pop(first)
    memo = {} if memo is None else memo

    def tournament(cohort: QuotaNode):
        child_cohorts, child_cqs = cohort.children_by_name()
        candidates = [winner for winner in map(tournament, child_cohorts) if winner is not None]
        candidates += [remaining[child.name] for child in child_cqs if child.name in remaining]
        return _best(cohort, candidates, nodes, memo)

    winner = tournament(node.root())
    return remaining.pop(winner.cq)


class FairTournament:
    """The order `pop_fair` gives over one cycle, computed incrementally.

    Each cohort keeps its competitors (the winner of each child cohort, and the heads of its
    ClusterQueues) sorted by their key at that cohort, valid while the cohort's `stamp` says no
    usage below it changed. A pick that changes no usage (a head that does not fit) only swaps,
    on the way up, the picked head for the next winner of its branch: a few keys computed and
    a sorted insert per level, instead of the whole tournament. A usage change below a cohort
    moves its stamp (and every ancestor's): when next read, such a cohort ranks again only the
    children whose stamps moved. A competitor's key at a cohort is the share of the child it
    comes through, computed from the usage in that child's subtree only, so the keys of the
    other children stand."""

    def __init__(self, nodes: Mapping[str, QuotaNode], entries: dict[str, H], memo: dict | None = None) -> None:
        """`memo`: `_head_keys`'s, which may outlive the tournament (an engine keeps one for
        all its cycles: a head nominated again with the same usage reads its keys from it)."""
        self.nodes = nodes
        self.remaining = entries
        self._names = sorted(entries)  # the remaining CQ names in order, read from `_first`
        self._first = 0
        # id(cohort) -> its competitors ranked (_Ranking)
        self._ranked: dict[int, _Ranking] = {}
        self._memo: dict = {} if memo is None else memo
        # The cohorts some entry is under (by id), each with its child cohorts that are too and
        # its ClusterQueues that have an entry: only those compete. A cycle of a simulation
        # moment has a handful of heads in a tree of dozens of cohorts and hundreds of queues.
        # (The order they are listed in does not matter: a ranking sorts by keys that differ.)
        self._live: dict[int, tuple[list[QuotaNode], list[QuotaNode]]] = {}
        self._in_tree: dict[int, int] = {}  # id(root) -> entries remaining in that tree
        for name in entries:
            cq = nodes[name]
            root = id(cq.root())
            self._in_tree[root] = self._in_tree.get(root, 0) + 1
            if cq.parent is None:
                continue
            cohort = cq.parent
            fresh = id(cohort) not in self._live
            self._members(cohort)[1].append(cq)
            while fresh and cohort.parent is not None:  # a cohort seen first: list it above
                parent = cohort.parent
                fresh = id(parent) not in self._live
                self._members(parent)[0].append(cohort)
                cohort = parent

    def _members(self, cohort: QuotaNode) -> tuple[list[QuotaNode], list[QuotaNode]]:
        members = self._live.get(id(cohort))
        if members is None:
            members = self._live[id(cohort)] = ([], [])
        return members

    def __bool__(self) -> bool:
        return bool(self.remaining)

    def pop(self) -> H:
        names = self._names
        while names[self._first] not in self.remaining:
            self._first += 1
        node = self.nodes[names[self._first]]  # the tree of the first remaining CQ, as pop_fair
        if node.parent is None:
            return self.remaining.pop(node.name)
        root = node.root()
        left = self._in_tree[id(root)]
        self._in_tree[id(root)] = left - 1
        if left == 1:
            # The tree's only entry is this one: it wins without a tournament. (No ranking of
            # this tree is read again, as no entry of it remains.)
            return self.remaining.pop(node.name)
        winner = self._winner(root)
        self.remaining.pop(winner.cq)
        self._replace(self.nodes[winner.cq])
        return winner

    def _winner(self, cohort: QuotaNode) -> H | None:
        return _first_head(self._rank(cohort).ranked)

    def _rank(self, cohort: QuotaNode) -> "_Ranking":
        cached = self._ranked.get(id(cohort))
        if cached is not None and cached.stamp == cohort.stamp:
            return cached
        child_cohorts, child_cqs = self._live[id(cohort)]
        if cached is not None:
            return self._rerank(cohort, cached, child_cohorts, child_cqs)
        by_child, stamps = {}, {}
        for child in child_cohorts:
            stamps[id(child)] = child.stamp
            head = self._winner(child)
            if head is not None:
                by_child[id(child)] = (self._key(head, cohort), head)
        remaining = self.remaining
        for child in child_cqs:
            stamps[id(child)] = child.stamp
            head = remaining.get(child.name)
            if head is not None:
                by_child[id(child)] = (self._key(head, cohort), head)
        cached = self._ranked[id(cohort)] = _Ranking(cohort.stamp, sorted(by_child.values(), key=itemgetter(0)),
                                                     by_child, stamps)
        return cached

    def _rerank(self, cohort: QuotaNode, cached: "_Ranking", child_cohorts: list[QuotaNode],
                child_cqs: list[QuotaNode]) -> "_Ranking":
        """`cohort`'s ranking brought up to date: the entry of each child whose stamp moved is
        taken out and put back with its branch's winner and key now."""
        ranked, by_child, stamps = cached.ranked, cached.by_child, cached.stamps
        for is_cohort, children in ((True, child_cohorts), (False, child_cqs)):
            for child in children:
                key = id(child)
                if stamps[key] == child.stamp:
                    continue
                stamps[key] = child.stamp
                entry = by_child.pop(key, None)
                if entry is not None:
                    del ranked[bisect_left(ranked, entry[0], key=itemgetter(0))]
                head = self._winner(child) if is_cohort else self.remaining.get(child.name)
                if head is not None:
                    entry = by_child[key] = (self._key(head, cohort), head)
                    ranked.insert(bisect_left(ranked, entry[0], key=itemgetter(0)), entry)
        cached.stamp = cohort.stamp
        return cached

    def _key(self, head: H, cohort: QuotaNode) -> tuple:
        return _head_keys(self.nodes[head.cq], head, self._memo, cohort.name)[cohort.name]

    def _replace(self, cq: QuotaNode) -> None:
        """After `cq`'s head was picked: at each cohort up from `cq` (each ranking on the way is
        current: the pick just read it), the branch's entry (the picked head) gives way to the
        branch's next winner."""
        child, cohort = cq, cq.parent
        following: H | None = None  # the branch's new winner (none left under a picked queue)
        while cohort is not None:
            cached = self._ranked.get(id(cohort))
            if cached is None or cached.stamp != cohort.stamp:
                # (not so: then this ranking and those above are made afresh when read, as a
                # ranking brought up to date would keep the picked head)
                while cohort is not None:
                    self._ranked.pop(id(cohort), None)
                    cohort = cohort.parent
                return
            ranked, by_child = cached.ranked, cached.by_child
            entry = by_child.pop(id(child))
            del ranked[bisect_left(ranked, entry[0], key=itemgetter(0))]
            if following is not None:
                entry = (self._key(following, cohort), following)
                by_child[id(child)] = entry
                ranked.insert(bisect_left(ranked, entry[0], key=itemgetter(0)), entry)
            following = _first_head(ranked)
            child, cohort = cohort, cohort.parent


class _Ranking:
    """A cohort's competitors in the tournament, valid while the cohort's stamp is `stamp`:
    (key, head) pairs sorted by key, each child's pair there (by id), and each child's stamp
    when its pair was made."""

    __slots__ = ("stamp", "ranked", "by_child", "stamps")

    def __init__(self, stamp: int, ranked: list[tuple], by_child: dict[int, tuple], stamps: dict[int, int]) -> None:
        self.stamp = stamp
        self.ranked = ranked
        self.by_child = by_child
        self.stamps = stamps


class _HeadKeys:
    """A head's tournament keys at each cohort on its queue's path (`_head_keys`'s memo, per
    ClusterQueue): for this workload with this usage, `found` (cohort name -> key) is current at
    each level of `path` whose node's version is the one in `versions` (-1: not computed)."""

    __slots__ = ("info", "versions", "path", "parents", "found", "usage")

    def __init__(self, info: WorkloadInfo, versions: list[int], path: list[QuotaNode], parents: list[str],
                 found: dict[str, tuple], usage: dict[FlavorResource, int]) -> None:
        self.info = info
        self.versions = versions
        self.path = path            # the queue and its cohorts below the root
        self.parents = parents      # the cohort each level's key is for
        self.found = found
        self.usage = usage


def _first_head(ranked: list[tuple]) -> Head | None:
    """The head of the first (key, head) pair of a ranking, if any."""
    if not ranked:
        return None
    _, head = ranked[0]
    return head


def _best(cohort: QuotaNode, candidates: list[H], nodes: Mapping[str, QuotaNode], memo: dict) -> H | None:
    """The winner among the heads competing in `cohort` (Kueue's runTournament at one level):
    the least by Kueue's entryComparer.less, which is this order of keys: not borrowing on the
    requested pairs first, then the lower share, the higher priority, the older, the lower UID."""
    if not candidates:
        return None
    return min(candidates, key=lambda head: _head_keys(nodes[head.cq], head, memo)[cohort.name])


def _head_keys(cq: QuotaNode, entry: Head, memo: dict, upto: str | None = None) -> dict[str, tuple]:
    """The head's sort key in the tournament of each cohort on its path (from the shares of
    `cq` and of each cohort with the head's usage added), keyed by that cohort; given `upto`
    (a cohort's name), only the keys up to that cohort's are sure to be current. The share at
    one level depends only on the usage of the nodes from `cq` up to that level, so each key
    is kept until one of their versions moves: a change in a cohort recomputes the keys from
    that cohort up only, and only as far up as asked (a cohort ranking its own queues reads
    their keys at its level; the level above reads its winner's only). The keys are a function
    of the workload, its usage and those versions, so they stay valid for the same workload
    nominated again with the same usage."""
    cached = memo.get(cq.name)
    info = entry.info
    if cached is None or cached.info is not info or cached.usage != entry.usage:
        ancestors = list(cq.ancestors())
        path = [cq] + ancestors[:-1]  # the root's own share is never read
        cached = memo[cq.name] = _HeadKeys(info, [-1] * len(path), path, [a.name for a in ancestors], {},
                                           dict(entry.usage))
    versions, path, parents, found = cached.versions, cached.path, cached.parents, cached.found
    last = len(path) if upto is None else parents.index(upto) + 1
    first = 0
    while first < last and versions[first] == path[first].version:
        first += 1
    if first < last:
        extras = spill(cq, entry.usage)
        rest = (-info.priority, info.workload.created, info.uid, info.key)
        for level in range(first, last):
            node = path[level]
            share = share_of(node, extras[level] if level < len(extras) else None)
            found[parents[level]] = (share.borrowing_on(entry.usage), share.rank, *rest)
            versions[level] = node.version
        for level in range(last, len(path)):
            versions[level] = -1  # (read from the levels below, computed again when asked)
    return found


def spill(cq: QuotaNode, usage: Mapping[FlavorResource, int]) -> list[dict[FlavorResource, int]]:
    """The usage each node from `cq` up would gain if `usage` were added at `cq` (what
    QuotaNode.add_all would do, without touching the tree)."""
    gains = []
    node: QuotaNode | None = cq
    current = {fr: value for fr, value in usage.items() if value > 0}
    while node is not None:
        gains.append(current)
        if node.parent is None or not current:
            break
        following = {}
        for fr, value in current.items():
            if node.local:
                local_available = node.local.get(fr, 0) - node.usage.get(fr, 0)
                if local_available > 0:
                    if value <= local_available:
                        continue
                    value -= local_available
            following[fr] = value
        node = node.parent
        current = following
    return gains
