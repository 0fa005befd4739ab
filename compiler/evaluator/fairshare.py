"""Fair Sharing: dominant resource share (DRS) with weights, the tournament that orders heads
inside a cohort tree, and the preemption strategies (LessThanOrEqualToFinalShare,
LessThanInitialShare) over target queues visited by descending share."""

from __future__ import annotations

from bisect import bisect_left
from functools import lru_cache
from operator import attrgetter, itemgetter
from typing import Mapping, Protocol, TypeVar

from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import FlavorResource
from compiler.evaluator.preemption_common import (
    IN_CLUSTER_QUEUE, IN_COHORT_FAIR_SHARING, IN_COHORT_RECLAMATION, PreemptionRequest, Snapshot, Target,
    UntilCommit, candidate_key, candidate_order, satisfies_policy,
)
from compiler.evaluator.tree import QuotaNode

INF = float("inf")


def _priority(pair: tuple) -> int:
    """The priority in a (candidate key, workload) pair."""
    return pair[0][0]


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


def _without(node: QuotaNode, share: Share, removal: Mapping[FlavorResource, int]) -> Share:
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


# -- ordering of heads (the tournament) ----------------------------------------------------------
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
        # id(cohort) -> [its stamp, [(key, head)] sorted, {id(child): its (key, head) there},
        #                {id(child): the child's stamp then}]
        self._ranked: dict[int, list] = {}
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
        ranked = self._rank(cohort)[1]
        return ranked[0][1] if ranked else None

    def _rank(self, cohort: QuotaNode) -> list:
        cached = self._ranked.get(id(cohort))
        if cached is not None and cached[0] == cohort.stamp:
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
        cached = self._ranked[id(cohort)] = [cohort.stamp, sorted(by_child.values(), key=itemgetter(0)), by_child,
                                             stamps]
        return cached

    def _rerank(self, cohort: QuotaNode, cached: list, child_cohorts: list[QuotaNode],
                child_cqs: list[QuotaNode]) -> list:
        """`cohort`'s ranking brought up to date: the entry of each child whose stamp moved is
        taken out and put back with its branch's winner and key now."""
        _, ranked, by_child, stamps = cached
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
        cached[0] = cohort.stamp
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
            if cached is None or cached[0] != cohort.stamp:
                # (not so: then this ranking and those above are made afresh when read, as a
                # ranking brought up to date would keep the picked head)
                while cohort is not None:
                    self._ranked.pop(id(cohort), None)
                    cohort = cohort.parent
                return
            _, ranked, by_child, _ = cached
            entry = by_child.pop(id(child))
            del ranked[bisect_left(ranked, entry[0], key=itemgetter(0))]
            if following is not None:
                entry = (self._key(following, cohort), following)
                by_child[id(child)] = entry
                ranked.insert(bisect_left(ranked, entry[0], key=itemgetter(0)), entry)
            following = ranked[0][1] if ranked else None
            child, cohort = cohort, cohort.parent


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
    if cached is None or cached[0] is not info or cached[5] != entry.usage:
        ancestors = list(cq.ancestors())
        path = [cq] + ancestors[:-1]  # the root's own share is never read
        cached = memo[cq.name] = (info, [-1] * len(path), path, [a.name for a in ancestors], {},
                                  dict(entry.usage))
    _, versions, path, parents, found, _ = cached
    last = len(path) if upto is None else parents.index(upto) + 1
    first = 0
    while first < last and versions[first] == path[first].version:
        first += 1
    if first < last:
        extras = _spill(cq, entry.usage)
        rest = (-info.priority, info.workload.created, info.uid, info.key)
        for level in range(first, last):
            node = path[level]
            share = share_of(node, extras[level] if level < len(extras) else None)
            found[parents[level]] = (share.borrowing_on(entry.usage), share.rank, *rest)
            versions[level] = node.version
        for level in range(last, len(path)):
            versions[level] = -1  # (read from the levels below, computed again when asked)
    return found


def _spill(cq: QuotaNode, usage: Mapping[FlavorResource, int]) -> list[dict[FlavorResource, int]]:
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


# -- preemption ---------------------------------------------------------------------------------
class _Ordering:
    """Target ClusterQueues by descending share from the root, pruning non-borrowing ones.

    Each target queue's candidates are a list of (candidate key, workload) read in place up
    to an end (the snapshot's sorted list itself when it can be), with a cursor per queue, so
    a search copies no candidate list.

    Given `children` (`holding`: per cohort, its children holding a target queue with
    candidates), the walk compares only those: any other child would be pruned, or lead to a
    step that only prunes, without changing which targets come out or in what order (Kueue,
    and the walk without `children`, compare every child at every step). `almosts` keeps the nodes whose shares are
    compared per target queue, for the preemptor's queue, across searches."""

    def __init__(self, preemptor_node: QuotaNode, targets: dict[str, tuple[list, int]], order_key,
                 children: Mapping[int, tuple[list, list]] | None = None,
                 almosts: dict[str, tuple[QuotaNode, QuotaNode]] | None = None) -> None:
        self.preemptor_node = preemptor_node
        self.ancestors = {id(a) for a in preemptor_node.ancestors()}
        self.targets = targets
        self.cursors = dict.fromkeys(targets, 0)
        self.pruned_cqs: set[str] = set()
        self.pruned_cohorts: set[int] = set()
        self.order_key = order_key
        self._almosts = {} if almosts is None else almosts  # target CQ -> (preemptor's, target's)
        self._children = children

    def has_workload(self, name: str) -> bool:
        found = self.targets.get(name)
        return found is not None and self.cursors[name] < found[1]

    def head(self, name: str) -> WorkloadInfo:
        return self.targets[name][0][self.cursors[name]][1]

    def pop(self, name: str) -> WorkloadInfo:
        info = self.head(name)
        self.cursors[name] += 1
        return info

    def pop_rest(self, name: str) -> list[WorkloadInfo]:
        """Every workload of `name` not popped yet, popped, in order."""
        pairs, end = self.targets[name]
        start = self.cursors[name]
        if start >= end:
            return []
        self.cursors[name] = end
        return [pair[1] for pair in pairs[start:end]]

    def __iter__(self):
        node = self.preemptor_node
        if node.parent is None:
            while node.name not in self.pruned_cqs and self.has_workload(node.name):
                yield node
            return
        root = node.root()
        while id(root) not in self.pruned_cohorts:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: QuotaNode):
        # Shares are compared through their ranks (what `compare` compares), and read from the
        # nodes' share caches, inline: this runs for every child of every cohort on the way
        # down, for each target visited. Going down to the best child cohort is a loop.
        targets, cursors, preemptor_node = self.targets, self.cursors, self.preemptor_node
        pruned_cqs, pruned_cohorts = self.pruned_cqs, self.pruned_cohorts
        while True:
            best_cq, best_cq_rank = None, NEGATIVE.rank
            if self._children is None:
                child_cohorts, child_cqs = cohort.children_by_name()
            else:
                child_cohorts, child_cqs = self._children.get(id(cohort), _NO_CHILDREN)
            for cq in child_cqs:
                name = cq.name
                if name in pruned_cqs:
                    continue
                found = targets.get(name)
                if found is None or cursors[name] >= found[1]:  # no workload left
                    pruned_cqs.add(name)
                    continue
                share = cq.share.get(cq.version) or share_of(cq)
                if not share.borrowing and cq is not preemptor_node:
                    pruned_cqs.add(name)
                    continue
                rank = share.rank
                if best_cq is not None and rank == best_cq_rank:
                    if self.order_key(self.head(name)) < self.order_key(self.head(best_cq.name)):
                        best_cq = cq
                elif rank > best_cq_rank:
                    best_cq, best_cq_rank = cq, rank
            best_cohort, best_cohort_rank = None, NEGATIVE.rank
            for child in child_cohorts:
                if id(child) in pruned_cohorts:
                    continue
                share = child.share.get(child.version) or share_of(child)
                if not share.borrowing and id(child) not in self.ancestors:
                    pruned_cohorts.add(id(child))
                elif share.rank >= best_cohort_rank:
                    best_cohort, best_cohort_rank = child, share.rank
            if best_cohort is None and best_cq is None:
                pruned_cohorts.add(id(cohort))
                return None
            if best_cohort_rank < best_cq_rank:
                return best_cq
            cohort = best_cohort

    def blocker(self, known: tuple[str, int] | None, evictions: int,
                nodes: Mapping[str, QuotaNode]) -> tuple[str, int] | None:
        """A queue with workloads left whose share the preemptor's is not `_above` (its own
        queue, or one it may take from), with `evictions`, the number of evictions made so
        far; None when there is none. `known`, an earlier answer, still holds while its queue
        has workloads left and nothing was evicted since (the tree is the same)."""
        if known is not None and known[1] == evictions and self.has_workload(known[0]):
            return known
        own, cursors, almosts = self.preemptor_node.name, self.cursors, self._almosts
        for name, (_, end) in self.targets.items():
            if cursors[name] < end:
                if name == own:
                    return name, evictions
                # (`shares` and `_above`, inline: this runs for every queue left)
                preemptor, target = almosts.get(name) or self._almost_pair(nodes[name])
                preemptor_new = preemptor.share.get(preemptor.version) or share_of(preemptor)
                target_old = target.share.get(target.version) or share_of(target)
                if target_old.weight < 0 or preemptor_new.rank <= target_old.rank:
                    return name, evictions
        return None

    def still_visited(self, nodes: Mapping[str, QuotaNode]) -> list[str]:
        """The queues with workloads left that the walk would still visit on the tree as it is:
        those not pruned yet that borrow, under cohorts not pruned yet that borrow or hold the
        preemptor's queue (what `_next` prunes; the root is never pruned so)."""
        cursors, pruned_cqs, pruned_cohorts = self.cursors, self.pruned_cqs, self.pruned_cohorts
        open_cohorts: dict[int, bool] = {}
        found = []
        for name, (_, end) in self.targets.items():
            if cursors[name] >= end or name in pruned_cqs:
                continue
            cq = nodes[name]
            if not (cq.share.get(cq.version) or share_of(cq)).borrowing and cq is not self.preemptor_node:
                continue
            cohort = cq.parent
            while cohort is not None and cohort.parent is not None:
                key = id(cohort)
                is_open = open_cohorts.get(key)
                if is_open is None:
                    is_open = open_cohorts[key] = key not in pruned_cohorts and (
                        key in self.ancestors or (cohort.share.get(cohort.version) or share_of(cohort)).borrowing)
                if not is_open:
                    break
                cohort = cohort.parent
            else:
                found.append(name)
        return found

    def _almost_pair(self, target: QuotaNode) -> tuple[QuotaNode, QuotaNode]:
        """The children of the least common ancestor of the preemptor and `target` on their
        paths: whose shares the strategies compare."""
        return _almost_pair(self.preemptor_node, target, self._almosts, self.ancestors)

    def shares(self, target: QuotaNode) -> tuple[Share, Share]:
        preemptor_almost, target_almost = self._almost_pair(target)
        return share_of(preemptor_almost), share_of(target_almost)

    def target_share_after_removal(self, target: QuotaNode, info) -> Share:
        """The target's share, as `shares` reads it, with `info` evicted (without touching
        the tree: only the pairs that node borrows are followed up to it)."""
        almost = self._almost_pair(target)[1]
        share = share_of(almost)
        excess = share.excess
        if not any(fr in excess for fr in info.usage):
            return share  # nothing it borrows gets lower
        return _without(almost, share, _removal_reaching(target, info.usage, almost, excess))


_NO_CHILDREN: tuple[list, list] = ([], [])


def holding(nodes: Mapping[str, QuotaNode], targets: dict[str, tuple[list, int]]) -> dict[int, tuple[list, list]]:
    """id(cohort) -> (its child cohorts, its child CQs) with a target queue with candidates in
    or below them, each in name order."""
    cohorts: dict[int, set[QuotaNode]] = {}
    cqs: dict[int, list[QuotaNode]] = {}
    for name, (_, end) in targets.items():
        node = nodes[name]
        if end == 0 or node.parent is None:
            continue
        cqs.setdefault(id(node.parent), []).append(node)
        node = node.parent
        while node.parent is not None:
            below = cohorts.setdefault(id(node.parent), set())
            if node in below:
                break
            below.add(node)
            node = node.parent
    by_name = attrgetter("name")
    return {key: (sorted(cohorts.get(key, ()), key=by_name), sorted(cqs.get(key, ()), key=by_name))
            for key in cohorts.keys() | cqs.keys()}


def _removal_reaching(node: QuotaNode, usage: Mapping[FlavorResource, int], upto: QuotaNode,
                      only: Mapping[FlavorResource, int] | None = None) -> dict:
    """The usage that removing `usage` at `node` takes off `upto`, one of its ancestors (what
    QuotaNode.remove_all would do: a node passes up only what it had stored in its parent),
    for the pairs in `only` if given (each pair travels up on its own)."""
    current = {fr: value for fr, value in usage.items() if value > 0 and (only is None or fr in only)}
    while node is not upto and current:
        following = {}
        for fr, value in current.items():
            used = node.usage.get(fr, 0)
            stored_in_parent = used - node.local.get(fr, 0) if node.local else used
            if stored_in_parent > 0:
                following[fr] = min(value, stored_in_parent)
        node = node.parent
        current = following
    return current


def _almost_pair(preemptor: QuotaNode, target: QuotaNode, almosts: dict,
                 ancestors: set[int] | None = None) -> tuple[QuotaNode, QuotaNode]:
    """The children of the least common ancestor of the preemptor's queue and `target` on
    their paths: whose shares the strategies compare (kept in `almosts`, the preemptor
    queue's; `ancestors`: the ids of the preemptor's ancestors, if at hand)."""
    found = almosts.get(target.name)
    if found is None:
        if ancestors is None:
            ancestors = {id(a) for a in preemptor.ancestors()}
        lca = next(a for a in target.ancestors() if id(a) in ancestors)
        found = almosts[target.name] = (_almost(preemptor, lca), _almost(target, lca))
    return found


def _almost(node: QuotaNode, lca: QuotaNode) -> QuotaNode:
    current = node
    for ancestor in node.ancestors():
        if ancestor is lca:
            return current
        current = ancestor
    raise AssertionError("no common ancestor")  # the ordering only visits one tree


def _strategy_passes(name: str, preemptor_new: Share, target_old: Share, target_new: Share) -> bool:
    if name == "LessThanInitialShare":
        return compare(preemptor_new, target_old) < 0
    return compare(preemptor_new, target_new) <= 0


class SearchReads:
    """What a fair-sharing search read besides the request, so its answer can be kept while
    that is unchanged (Preemptor.targets).

    A search is a function of (1) the usage, in every node of the tree, of the pairs in `frs`:
    the request's pairs and every pair any of its candidates uses, so that the candidates, the
    borrowing tests, every fit and every eviction it simulates stay on these pairs; their commit
    versions say whether they moved; and (2) the shares of the nodes it may compare: the nodes
    on the paths from the root to the preemptor's queue and to each queue with candidates. A
    share is read on usage changed only on `frs`, so it is a function of (1) and of what the
    node borrows on the other pairs: its excess per pair at the start, kept here (in its share)
    with the node's version (an unchanged version is an unchanged excess)."""

    __slots__ = ("frs", "nodes", "versions", "shares")

    def __init__(self, frs, nodes: list[QuotaNode], versions: list[int], shares: list[Share]) -> None:
        self.frs = sorted(frs)
        # each node, its version and its share at the start of the search
        self.nodes, self.versions, self.shares = nodes, versions, shares

    def shares_hold(self) -> bool:
        """Whether every node read still borrows what it borrowed (checked after the commit
        versions of `frs`, which cover the pairs in `frs`)."""
        versions = self.versions
        for index, node in enumerate(self.nodes):
            if node.version != versions[index]:
                if share_of(node).excess != self.shares[index].excess:
                    return False
                versions[index] = node.version  # same excess: the next check is a version compare
        return True


def _pairs_read(request: PreemptionRequest, holders: tuple[str, ...], candidates: dict[str, tuple[list, int]],
                snapshot: Snapshot, others: frozenset | None) -> set[FlavorResource]:
    """The pairs a search with these candidates reads (`holders`: the queues with candidates;
    `others`, if known: every pair the workloads of the other queues with candidates use)."""
    frs = set(request.frs)
    frs.update(request.usage)
    if len(request.frs) == 1:  # the candidates are all the queue's workloads on that pair
        contested = next(iter(request.frs))
        if others is not None:
            frs.update(others)
            if request.cq in holders:
                frs.update(snapshot.pairs_used(request.cq, contested))
        else:
            for name in holders:
                frs.update(snapshot.pairs_used(name, contested))
    else:
        for pairs, end in candidates.values():
            for index in range(end):
                frs.update(pairs[index][1].usage)
    return frs


def _at_start(paths: list[QuotaNode]) -> tuple[list[int], list[Share]]:
    """The versions and shares of `paths` as a search starts (what `SearchReads` keeps)."""
    versions = [n.version for n in paths]
    return versions, [n.share.get(v) or share_of(n) for n, v in zip(paths, versions)]


def _restore(nodes: list[QuotaNode], versions: list[int], shares: list[Share]) -> None:
    """After a search that left each of `nodes` with the usage it had (as `versions_kept`):
    each node edited gets its version back, and its share cache keeps only its share at that
    version. The versions the search made are never seen again, and a search makes enough of
    them to crowd the shares at the versions every later search of the cycle starts from out
    of the cache."""
    for node, version, share in zip(nodes, versions, shares):
        if node.version != version:
            node.version = version
            cache = node.share
            cache.clear()
            cache[version] = share


def _paths_of(node: QuotaNode, holders: list[QuotaNode]) -> list[QuotaNode]:
    """The nodes from the root to `node` and to each of `holders`, each once."""
    path_nodes: dict[int, QuotaNode] = {}
    for start in [node] + holders:
        current: QuotaNode | None = start
        while current is not None and id(current) not in path_nodes:
            path_nodes[id(current)] = current
            current = current.parent
    return list(path_nodes.values())


class _Reclaim:
    """What a search reads of the queues of a tree that borrow the contested pairs, the same
    for every preemptor with the same reclaim policy and priority bound until the next commit:
    their candidates (`entries`: CQ name -> (candidate key, workload) pairs, how many count),
    every pair the workloads of those with candidates use (one contested pair only, else
    None), the nodes on the paths from the root to those queues (`ids`: their ids) with their
    versions and shares, and `holding` of those queues."""

    __slots__ = ("entries", "used", "paths", "ids", "versions", "shares", "children")

    def __init__(self, entries: dict[str, tuple[list, int]], used: frozenset | None, paths: list[QuotaNode],
                 children: Mapping[int, tuple[list, list]]) -> None:
        self.entries, self.used, self.paths, self.children = entries, used, paths, children
        self.ids = {id(node) for node in paths}
        self.versions, self.shares = _at_start(paths)


class FairSharingPreemption:
    """Fair Sharing preemption (Kueue's preemption/fairsharing), with the configured
    strategies (default LessThanOrEqualToFinalShare, then LessThanInitialShare)."""

    def __init__(self, snapshot: Snapshot, strategies: list[str], incremental: bool = True) -> None:
        self.snapshot = snapshot
        # The target walk compares only the children holding targets (_Ordering); without it,
        # every child at every step, as Kueue does (the engine's plain reference path).
        self.incremental = incremental
        self._almosts: dict[str, dict] = {}  # preemptor CQ -> target CQ -> nodes compared
        self._holdings: dict[tuple, Mapping[int, tuple[list, list]]] = {}  # queues with candidates -> holding()
        self.strategies = strategies or ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
        # (root, pairs, policy, priority bound) -> _find_reclaimable's answer, until the next commit
        self._borrowers = UntilCommit(snapshot)
        self._paths: dict[tuple, list[QuotaNode]] = {}  # (CQ, queues with candidates) -> _paths_of
        self.reads: SearchReads | None = None  # what the last search read
        self._tree_order: dict[int, dict[str, int]] = {}  # id(root) -> CQ name -> position in a walk
        self._not_below: dict[tuple, str] = {}  # (id(root), pairs) -> the last queue `_below_all` failed on

    def targets(self, request: PreemptionRequest) -> list[Target]:
        """The workloads to evict so that `request` fits, or [].

        Why it is built this way: fair sharing must not let a queue take quota from a queue
        that is poorer than it would itself become. So target queues are visited from the root
        by descending dominant resource share (`_Ordering`), and a workload of another queue is
        evicted only if the first strategy holds between the preemptor's share after admission
        and the target's share (before or after the eviction); the rejected ones get a second
        chance under the second strategy. Own-queue workloads, and any workload while the
        preemptor stays within its nominal quota (reclaim), need no share test. Shares are
        judged with the preemptor's usage in place, as Kueue does; fill-back then returns
        every target that was not needed."""
        snap = self.snapshot
        node = snap.nodes[request.cq]
        candidates, reclaim = self._candidates(request, node)
        holders = tuple([name for name, (_, end) in candidates.items() if end])
        if not holders:
            self.reads = SearchReads(request.frs | request.usage.keys(), [], [], [])
            return []
        own = candidates.get(request.cq)
        own_holds = own is not None and own[1] > 0  # the preemptor's queue has candidates
        if reclaim is not None:
            as_borrower = reclaim.entries.get(request.cq)
            as_borrower = as_borrower is not None and as_borrower[1] > 0  # ... as a borrower
        if reclaim is None or (own_holds and not as_borrower):
            # (the queues with candidates are not those of `reclaim`)
            paths = self._paths_to(node, holders)
            versions, shares = _at_start(paths)
            children = self._holding(candidates)
        else:
            # The nodes on the paths to the other queues and their shares, and `holding`, are
            # the same for every search of the cycle asking about these pairs of this tree.
            # (With the preemptor's queue among them as a borrower but no candidates of its
            # own, its path is read anyway, and `holding` listing it changes no walk.)
            paths, versions, shares = reclaim.paths, list(reclaim.versions), reclaim.shares
            extra = [n for n in node.path_nodes() if id(n) not in reclaim.ids]
            if extra:
                paths = paths + extra
                extra_versions, extra_shares = _at_start(extra)
                versions += extra_versions
                shares = shares + extra_shares
            children = reclaim.children if self.incremental else None
        used = frozenset() if reclaim is None else reclaim.used
        if reclaim is not None and as_borrower and not own_holds:
            used = None  # (it counts pairs of the preemptor's queue, which has no candidates)
        reads = self.reads = SearchReads(_pairs_read(request, holders, candidates, snap, used), paths, versions, shares)
        if self.incremental and self._below_all(request, node, holders):
            return []
        found = self._search(request, node, candidates, children)  # (which undoes each of its edits)
        _restore(paths, reads.versions, reads.shares)
        return found

    def _below_all(self, request: PreemptionRequest, node: QuotaNode, holders: tuple[str, ...]) -> bool:
        """Whether the search is sure to evict nothing, without making it: the preemptor's queue
        has no candidates, would borrow a contested pair once the request is admitted (not a
        reclaim), and its share then is `_above` the share of every queue with candidates. Its
        first pass would then visit those queues and take none (the first queue visited
        already finds every queue left so), and its second pass would not be made (most
        searches fail this way once the trees are busy). The shares with the preemptor's usage
        in place are computed from the usage it would add at each level (`_spill`), as the
        tournament's keys are, instead of adding it to the tree."""
        if node.parent is None or request.cq in holders:
            return False
        usage = request.usage
        if all(not node.borrowing_with(fr, usage.get(fr, 0)) for fr in request.frs):
            return False
        nodes, almosts = self.snapshot.nodes, self._almosts.setdefault(request.cq, {})
        path, extras = node.path_nodes(), None
        preemptor_shares: dict[int, Share] = {}  # id(preemptor's almost node) -> its share then
        # The queue that failed the last such test on these pairs of this tree is asked first:
        # it has a high share, and often fails it again (most searches then take from it).
        hint_key = (id(path[-1]), request.frs)
        hint = self._not_below.get(hint_key)
        for name in (hint, *holders) if hint in holders else holders:
            preemptor, target = almosts.get(name) or _almost_pair(node, nodes[name], almosts)
            preemptor_new = preemptor_shares.get(id(preemptor))
            if preemptor_new is None:
                if extras is None:
                    extras = _spill(node, usage)
                level = path.index(preemptor)
                preemptor_new = preemptor_shares[id(preemptor)] = share_of(
                    preemptor, extras[level] if level < len(extras) else None)
            target_old = target.share.get(target.version) or share_of(target)
            if target_old.weight < 0 or preemptor_new.rank <= target_old.rank:  # (not `_above`, inline)
                self._not_below[hint_key] = name
                return False
        return True

    def _paths_to(self, node: QuotaNode, holders: tuple[str, ...]) -> list[QuotaNode]:
        """The nodes a search may edit: the preemptor's path, and a candidate's on its way up.
        The list depends on the tree's shape alone, so it is kept."""
        paths = self._paths.get((node.name, holders))
        if paths is None:
            if len(self._paths) >= 4096:
                self._paths.clear()
            nodes = self.snapshot.nodes
            paths = self._paths[(node.name, holders)] = _paths_of(node, [nodes[name] for name in holders])
        return paths

    def _search(self, request: PreemptionRequest, node: QuotaNode, candidates: dict[str, tuple[list, int]],
                children: Mapping[int, tuple[list, list]] | None) -> list[Target]:
        snap = self.snapshot
        order_key = candidate_order(request.cq)
        node.add_all(request.usage)  # shares are judged with the preemptor's usage in place
        targets: list[Target] = []
        almosts = self._almosts.setdefault(request.cq, {})
        ordering = _Ordering(node, candidates, order_key, children, almosts)
        done, retry = self._first_pass(request, node, ordering, targets)
        if not done and len(self.strategies) > 1 and retry and (
                not self.incremental or _second_chance(node, ordering, retry, snap.nodes)):
            retry_by_queue = _by_queue(retry)
            ordering = _Ordering(node, retry_by_queue, order_key, self._holding(retry_by_queue), almosts)
            done = self._second_pass(request, node, ordering, targets)
        node.remove_all(request.usage)
        if not done:
            snap.restore(targets)
            return []
        targets = snap.fill_back(node, request.usage, targets, True)
        snap.restore(targets)
        return targets

    def _holding(self, targets: dict[str, tuple[list, int]]) -> Mapping[int, tuple[list, list]] | None:
        """`holding` for these targets (None on the plain path): it depends on the tree's shape
        and on which queues have candidates only, so it is kept per such set of queues."""
        if not self.incremental:
            return None
        key = tuple([name for name, (_, end) in targets.items() if end])
        found = self._holdings.get(key)
        if found is None:
            if len(self._holdings) >= 4096:
                self._holdings.clear()
            found = self._holdings[key] = holding(self.snapshot.nodes, targets)
        return found

    def _candidates(self, request: PreemptionRequest,
                    node: QuotaNode) -> tuple[dict[str, tuple[list, int]], "_Reclaim | None"]:
        """Per ClusterQueue, its candidates in candidate order and how many of them count:
        own-queue workloads the withinClusterQueue policy allows, and workloads of queues of
        the cohort tree that borrow one of the contested pairs, as reclaimWithinCohort allows
        (the latter with what is known of them: `_Reclaim`)."""
        policy = self.snapshot.specs[request.cq].preemption
        found = {}
        if policy.within_cluster_queue != "Never":
            found[request.cq] = self._allowed(request, request.cq, policy.within_cluster_queue)
        if node.parent is None or policy.reclaim_within_cohort == "Never":
            return found, None
        reclaim = self._reclaimable(request, node.root(), policy.reclaim_within_cohort)
        if request.cq not in reclaim.entries:
            found.update(reclaim.entries)
            return found, reclaim
        for name, entry in reclaim.entries.items():
            if name != request.cq:
                found[name] = entry
        return found, reclaim

    def _reclaimable(self, request: PreemptionRequest, root: QuotaNode, policy: str) -> "_Reclaim":
        """`_Reclaim` for the queues of the tree borrowing one of the contested pairs. It
        depends on the pairs, the policy and the preemptor's priority only (not under
        LowerOrNewerEqualPriority, which reads its creation time: made afresh), and, as
        searches run on the committed tree (Preemptor.at_commit), holds until the next commit:
        the heads of one cycle asking about the same pairs of one tree share it."""
        if policy not in ("Any", "LowerPriority"):
            return self._find_reclaimable(request, root, policy)
        bound = request.preemptor.workload.priority if policy == "LowerPriority" else None
        return self._borrowers.get((id(root), request.frs, policy, bound),
                                   lambda: self._find_reclaimable(request, root, policy))

    def _find_reclaimable(self, request: PreemptionRequest, root: QuotaNode, policy: str) -> "_Reclaim":
        entries = {cq_node.name: self._allowed(request, cq_node.name, policy)
                   for cq_node in self._find_borrowing(root, request.frs)}
        used = None
        if len(request.frs) == 1:
            contested = next(iter(request.frs))
            pairs_used = self.snapshot.pairs_used
            used = frozenset().union(*[pairs_used(name, contested) for name, (_, end) in entries.items() if end])
        nodes = self.snapshot.nodes
        paths = _paths_of(root, [nodes[name] for name, (_, end) in entries.items() if end])
        return _Reclaim(entries, used, paths, holding(nodes, entries))

    def _find_borrowing(self, root: QuotaNode, frs: frozenset) -> list[QuotaNode]:
        # Only a queue with a workload holding a pair uses (so borrows) it: those are looked
        # at, not the whole tree; the answer is in the tree's order, as a walk would give it.
        order = self._tree_order.get(id(root))
        if order is None:
            order = self._tree_order[id(root)] = {cq.name: index for index, cq in enumerate(root.subtree_cqs())}
        nodes, users = self.snapshot.nodes, self.snapshot.users
        names: set[str] = set()
        for fr in frs:  # (the users of a pair are those of every tree: this tree's are kept)
            names.update(order.keys() & users.get(fr, ()))
        found = []
        for name in names:
            node = nodes[name]
            subtree, usage = node.subtree, node.usage
            for fr in frs:
                if subtree.get(fr, 0) < usage.get(fr, 0):  # (QuotaNode.borrowing, inline)
                    found.append(node)
                    break
        found.sort(key=lambda cq: order[cq.name])
        return found

    def _allowed(self, request: PreemptionRequest, cq_name: str, policy: str) -> tuple[list, int]:
        """(candidate key, workload) of `cq_name`'s workloads using the contested pairs, in
        candidate order, and how many of them the policy lets the preemptor evict. The
        snapshot's sorted list is used in place: ordered by priority first, a priority bound
        is a prefix of it."""
        snap = self.snapshot
        if len(request.frs) == 1:
            pairs = snap.sorted_candidates(cq_name, next(iter(request.frs)))
        else:
            pairs = sorted(((candidate_key(info), info) for info in snap.candidates_in(cq_name, request.frs)),
                           key=itemgetter(0))
        if policy == "Any":
            return pairs, len(pairs)
        if policy == "LowerPriority":
            return pairs, bisect_left(pairs, request.preemptor.workload.priority, key=_priority)
        kept = [pair for pair in pairs if satisfies_policy(request.preemptor, pair[1], policy)]
        return kept, len(kept)

    @staticmethod
    def _fits(node: QuotaNode, usage) -> bool:
        """Whether `usage` fits in `node` (borrowing allowed), as Snapshot.fits, where the
        preemptor's own usage is in place during the search: it is counted as taken off."""
        for fr, value in usage.items():
            if value > node.available_without(fr, value):
                return False
        return True

    def _take(self, request: PreemptionRequest, node: QuotaNode, info: WorkloadInfo, reason: str,
              targets: list[Target]) -> bool:
        self.snapshot.remove(info)
        targets.append(Target(info, reason))
        return self._fits(node, request.usage)

    def _first_pass(self, request: PreemptionRequest, node: QuotaNode, ordering: "_Ordering",
                    targets: list[Target]) -> tuple[bool, list[WorkloadInfo]]:
        """Visit target queues by share; returns (fits now, candidates left for the second
        strategy; none when it is sure to evict nothing)."""
        retry: list[WorkloadInfo] = []
        within_nominal = all(not node.borrowing(fr) for fr in request.frs)
        only_above = True  # every queue visited so far was one the preemptor's share is above
        blocker = None  # what `_Ordering.blocker` last found
        for target_node in ordering:
            if target_node is node or within_nominal:
                only_above = False
                reason = IN_CLUSTER_QUEUE if target_node is node else IN_COHORT_RECLAMATION
                if self._take(request, node, ordering.pop(target_node.name), reason, targets):
                    return True, retry
                continue
            preemptor_new, target_old = ordering.shares(target_node)
            if (preemptor_new.precise() == INF and target_old.precise() != INF) or (
                    self.incremental and _above(preemptor_new, target_old)):
                # An eviction only lowers the target's share (its weight not negative), so when
                # the preemptor's share is already above the target's, neither strategy passes
                # for any of its workloads (most visits): they all go to the second chance
                # without a share computed (the plain path computes each).
                retry.extend(ordering.pop_rest(target_node.name))
                if self.incremental:
                    blocker = ordering.blocker(blocker, len(targets), self.snapshot.nodes)
                    if blocker is None:
                        # So is every queue left: the rest of the walk only visits them in
                        # turn, evicts nothing and sends their workloads to the second chance,
                        # where none passes either if no queue visited so far was another case.
                        if only_above:
                            return False, []
                        for name in ordering.still_visited(self.snapshot.nodes):
                            retry.extend(ordering.pop_rest(name))
                        return False, retry
                continue
            only_above = False
            while ordering.has_workload(target_node.name):
                info = ordering.pop(target_node.name)
                target_new = ordering.target_share_after_removal(target_node, info)
                if _strategy_passes(self.strategies[0], preemptor_new, target_old, target_new):
                    if self._take(request, node, info, IN_COHORT_FAIR_SHARING, targets):
                        return True, retry
                    break
                retry.append(info)
        return False, retry

    def _second_pass(self, request: PreemptionRequest, node: QuotaNode, ordering: "_Ordering",
                     targets: list[Target]) -> bool:
        """LessThanInitialShare over the candidates the first strategy rejected, one per
        target queue visit."""
        for target_node in ordering:
            info = ordering.pop(target_node.name)
            if target_node is not node:
                preemptor_new, target_old = ordering.shares(target_node)
                if _strategy_passes("LessThanInitialShare", preemptor_new, target_old, target_old):
                    if self._take(request, node, info, IN_COHORT_FAIR_SHARING, targets):
                        return True
            ordering.pruned_cqs.add(target_node.name)
        return False


def _above(preemptor_new: Share, target_old: Share) -> bool:
    """Whether neither strategy can pass for any workload of the target: the preemptor's
    share is already above the target's, which evictions only lower (its weight not
    negative). (Then LessThanInitialShare does not pass either.)"""
    return target_old.weight >= 0 and compare(preemptor_new, target_old) > 0


def _second_chance(node: QuotaNode, ordering: _Ordering, retry: list[WorkloadInfo],
                   nodes: Mapping[str, QuotaNode]) -> bool:
    """Whether the second pass may evict anything: False when, on the tree as the first pass
    left it, the preemptor's share is not below the share of any queue in `retry`. The second
    pass changes the tree only by an eviction, and evicts only from a queue passing that very
    test, so it would then visit every queue on this tree, evict nothing and fail; most
    searches that fail end this way, and skip its walk."""
    if node.parent is None:
        return True
    seen = set()
    for info in retry:
        name = info.cluster_queue
        if name in seen:
            continue
        seen.add(name)
        target = nodes[name]
        if target is not node:
            preemptor_new, target_old = ordering.shares(target)
            if _strategy_passes("LessThanInitialShare", preemptor_new, target_old, target_old):
                return True
    return False


def _by_queue(infos: list[WorkloadInfo]) -> dict[str, tuple[list, int]]:
    """Workloads grouped per ClusterQueue, each group in the order given, as _Ordering reads them."""
    groups: dict[str, list] = {}
    for info in infos:
        groups.setdefault(info.cluster_queue, []).append((None, info))
    return {name: (pairs, len(pairs)) for name, pairs in groups.items()}
