"""The target ClusterQueues of a fair-sharing preemption, by descending share from the root,
and the shares its strategies compare (Kueue's pkg/scheduler/preemption/fairsharing:
ordering.go, least_common_ancestor.go, strategy.go)."""

from __future__ import annotations

from operator import attrgetter
from typing import Mapping

from compiler.evaluator.drs import NEGATIVE, Share, compare, share_of, share_without
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import FlavorResource
from compiler.evaluator.tree import QuotaNode


class TargetOrdering:
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
        found = self.targets.get(name)  # (workloads, end)
        if found is None:
            return False
        _, end = found
        return self.cursors[name] < end

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
        if known is not None:
            name, evictions_then = known
            if evictions_then == evictions and self.has_workload(name):
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
        return almost_pair(self.preemptor_node, target, self._almosts, self.ancestors)

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
        return share_without(almost, share, _removal_reaching(target, info.usage, almost, excess))


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


def almost_pair(preemptor: QuotaNode, target: QuotaNode, almosts: dict,
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


def compared_queues(kept: dict, nodes: Mapping[str, QuotaNode], preemptor: QuotaNode, holders: tuple[str, ...],
                    almosts: dict) -> tuple[str, ...]:
    """One queue of `holders` for each pair of nodes the strategies compare between the
    preemptor's queue and them (`almost_pair`, which leaves every holder's pair in `almosts`):
    the queues of another cohort all compare their cohort's node, so a busy tree's hundred
    holders come down to a few dozen pairs. It depends on the tree's shape alone, so it is
    kept in `kept` per (preemptor's queue, holders)."""
    key = (preemptor.name, holders)
    found = kept.get(key)
    if found is None:
        if len(kept) >= 4096:
            kept.clear()
        seen, queues = set(), []
        for name in holders:
            preemptor_node, target = almost_pair(preemptor, nodes[name], almosts)
            if (id(preemptor_node), id(target)) not in seen:
                seen.add((id(preemptor_node), id(target)))
                queues.append(name)
        found = kept[key] = tuple(queues)
    return found


def _almost(node: QuotaNode, lca: QuotaNode) -> QuotaNode:
    current = node
    for ancestor in node.ancestors():
        if ancestor is lca:
            return current
        current = ancestor
    raise AssertionError("no common ancestor")  # the ordering only visits one tree


def strategy_passes(name: str, preemptor_new: Share, target_old: Share, target_new: Share) -> bool:
    if name == "LessThanInitialShare":
        return compare(preemptor_new, target_old) < 0
    return compare(preemptor_new, target_new) <= 0
