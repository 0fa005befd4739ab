"""Fair Sharing preemption: the search for the workloads to evict so that a head fits, over
target queues visited by descending share, with the strategies LessThanOrEqualToFinalShare and
LessThanInitialShare (Kueue's fairPreemptions in pkg/scheduler/preemption/preemption.go and
pkg/scheduler/preemption/fairsharing)."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Callable, Mapping

from compiler.evaluator.drs import INF, Share, compare, share_of
from compiler.evaluator.fair_ordering import TargetOrdering, compared_queues, holding, strategy_passes
from compiler.evaluator.fair_search_reads import Reclaim, SearchReads, at_start, pairs_read, paths_of, restore
from compiler.evaluator.fair_tournament import spill
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.preemption_common import (
    IN_CLUSTER_QUEUE, IN_COHORT_FAIR_SHARING, IN_COHORT_RECLAMATION, PreemptionRequest, Snapshot, Target,
    UntilCommit, candidate_order, satisfies_policy,
)
from compiler.evaluator.tree import QuotaNode


def _priority(pair: tuple) -> int:
    """The priority in a (candidate key, workload) pair."""
    return pair[0][0]




class FairSharingPreemption:
    """Fair Sharing preemption (Kueue's preemption/fairsharing), with the configured
    strategies (default LessThanOrEqualToFinalShare, then LessThanInitialShare)."""

    def __init__(self, snapshot: Snapshot, strategies: list[str], incremental: bool = True) -> None:
        self.snapshot = snapshot
        # The target walk compares only the children holding targets (TargetOrdering); without it,
        # every child at every step, as Kueue does (the engine's plain reference path).
        self.incremental = incremental
        self._almosts: dict[str, dict] = {}  # preemptor CQ -> target CQ -> nodes compared
        self._holdings: dict[tuple, Mapping[int, tuple[list, list]]] = {}  # queues with candidates -> holding()
        self.strategies = strategies or ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
        self.committed = False  # inside Preemptor.at_commit: searches run on the committed tree
        self._reclaims = KeptReclaims(snapshot)
        self._paths: dict[tuple, list[QuotaNode]] = {}  # (CQ, queues with candidates) -> paths_of
        self.reads: SearchReads | None = None  # what the last search read
        self._tree_order: dict[int, dict[str, int]] = {}  # id(root) -> CQ name -> position in a walk
        self._not_below: dict[tuple, str] = {}  # (id(root), pairs) -> the last queue `_below_all` failed on
        self._compared: dict[tuple, tuple[str, ...]] = {}  # (CQ, queues with candidates) -> compared_queues

    def targets(self, request: PreemptionRequest) -> list[Target]:
        """The workloads to evict so that `request` fits, or [].

        Why it is built this way: fair sharing must not let a queue take quota from a queue
        that is poorer than it would itself become. So target queues are visited from the root
        by descending dominant resource share (`TargetOrdering`), and a workload of another queue is
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
        own_holds = _holds(candidates.get(request.cq))  # the preemptor's queue has candidates
        if reclaim is not None:
            as_borrower = _holds(reclaim.entries.get(request.cq))  # ... as a borrower
        if reclaim is None or (own_holds and not as_borrower):
            # (the queues with candidates are not those of `reclaim`)
            paths = self._paths_to(node, holders)
            versions, shares = at_start(paths)
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
                extra_versions, extra_shares = at_start(extra)
                versions += extra_versions
                shares = shares + extra_shares
            children = reclaim.children if self.incremental else None
        used = frozenset() if reclaim is None else reclaim.used
        if reclaim is not None and as_borrower and not own_holds:
            used = None  # (it counts pairs of the preemptor's queue, which has no candidates)
        reads = self.reads = SearchReads(pairs_read(request, holders, candidates, snap, used), paths, versions, shares)
        if self.incremental and self._below_all(request, node, holders):
            return []
        found = self._search(request, node, candidates, children)  # (which undoes each of its edits)
        restore(paths, reads.versions, reads.shares)
        return found

    def _below_all(self, request: PreemptionRequest, node: QuotaNode, holders: tuple[str, ...]) -> bool:
        """Whether the search is sure to evict nothing, without making it: the preemptor's queue
        has no candidates, would borrow a contested pair once the request is admitted (not a
        reclaim), and its share then is `_above` the share of every queue with candidates. Its
        first pass would then visit those queues and take none (the first queue visited
        already finds every queue left so), and its second pass would not be made (most
        searches fail this way once the trees are busy). The shares with the preemptor's usage
        in place are computed from the usage it would add at each level (`spill`), as the
        tournament's keys are, instead of adding it to the tree."""
        if node.parent is None or request.cq in holders:
            return False
        usage = request.usage
        if all(not node.borrowing_with(fr, usage.get(fr, 0)) for fr in request.frs):
            return False
        almosts = self._almosts.setdefault(request.cq, {})
        path, extras = node.path_nodes(), None
        preemptor_shares: dict[int, Share] = {}  # id(preemptor's almost node) -> its share then
        compared = compared_queues(self._compared, self.snapshot.nodes, node, holders, almosts)
        # The queue that failed the last such test on these pairs of this tree is asked first:
        # it has a high share, and often fails it again (most searches then take from it).
        hint_key = (id(path[-1]), request.frs)
        hint = self._not_below.get(hint_key)
        for name in (hint, *compared) if hint in compared else compared:
            preemptor, target = almosts[name]
            preemptor_new = preemptor_shares.get(id(preemptor))
            if preemptor_new is None:
                if extras is None:
                    extras = spill(node, usage)
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
            paths = self._paths[(node.name, holders)] = paths_of(node, [nodes[name] for name in holders])
        return paths

    def _search(self, request: PreemptionRequest, node: QuotaNode, candidates: dict[str, tuple[list, int]],
                children: Mapping[int, tuple[list, list]] | None) -> list[Target]:
        snap = self.snapshot
        order_key = candidate_order(request.cq)
        node.add_all(request.usage)  # shares are judged with the preemptor's usage in place
        targets: list[Target] = []
        almosts = self._almosts.setdefault(request.cq, {})
        ordering = TargetOrdering(node, candidates, order_key, children, almosts)
        done, retry = self._first_pass(request, node, ordering, targets)
        if not done and len(self.strategies) > 1 and retry and (
                not self.incremental or _second_chance(node, ordering, retry, snap.nodes)):
            retry_by_queue = _by_queue(retry)
            ordering = TargetOrdering(node, retry_by_queue, order_key, self._holding(retry_by_queue), almosts)
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
                    node: QuotaNode) -> tuple[dict[str, tuple[list, int]], "Reclaim | None"]:
        """Per ClusterQueue, its candidates in candidate order and how many of them count:
        own-queue workloads the withinClusterQueue policy allows, and workloads of queues of
        the cohort tree that borrow one of the contested pairs, as reclaimWithinCohort allows
        (the latter with what is known of them: `Reclaim`)."""
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

    def _reclaimable(self, request: PreemptionRequest, root: QuotaNode, policy: str) -> "Reclaim":
        """`Reclaim` for the queues of the tree borrowing one of the contested pairs. It
        depends on the pairs, the policy and the preemptor's priority only (not under
        LowerOrNewerEqualPriority, which reads its creation time: made afresh), and searches
        run on the committed tree (Preemptor.at_commit). Which queues borrow those pairs, their
        candidates and the pairs those use change only with a commit of a workload holding one
        of the pairs in the tree: kept until then, across commits of other pairs (an overloaded
        cluster commits at every cycle). The shares on the paths to them read every pair: they
        are read again after any commit."""
        if policy not in ("Any", "LowerPriority"):
            return self._find_reclaimable(request, root, policy)
        bound = request.preemptor.workload.priority if policy == "LowerPriority" else None
        return self._reclaims.get(request, (id(root), request.frs, policy, bound),
                                  self.committed and self.incremental,
                                  lambda: self._find_reclaimable(request, root, policy))

    def _find_reclaimable(self, request: PreemptionRequest, root: QuotaNode, policy: str) -> "Reclaim":
        entries = {cq_node.name: self._allowed(request, cq_node.name, policy)
                   for cq_node in self._find_borrowing(root, request.frs)}
        used = None
        if len(request.frs) == 1:
            contested = next(iter(request.frs))
            pairs_used = self.snapshot.pairs_used
            used = frozenset().union(*[pairs_used(name, contested) for name, (_, end) in entries.items() if end])
        nodes = self.snapshot.nodes
        paths = paths_of(root, [nodes[name] for name, (_, end) in entries.items() if end])
        return Reclaim(entries, used, paths, holding(nodes, entries))

    def _find_borrowing(self, root: QuotaNode, frs: frozenset) -> list[QuotaNode]:
        order = self._tree_order.get(id(root))
        if order is None:
            order = self._tree_order[id(root)] = {cq.name: index for index, cq in enumerate(root.subtree_cqs())}
        return _borrowing_in(self.snapshot, order, frs)

    def _allowed(self, request: PreemptionRequest, cq_name: str, policy: str) -> tuple[list, int]:
        """(candidate key, workload) of `cq_name`'s workloads using the contested pairs, in
        candidate order, and how many of them the policy lets the preemptor evict. The
        snapshot's sorted list is used in place (pairs_read knows it by its identity): ordered
        by priority first, a priority bound is a prefix of it."""
        snap = self.snapshot
        if len(request.frs) == 1:
            pairs = snap.sorted_candidates(cq_name, next(iter(request.frs)))
        else:
            pairs = snap.sorted_candidates_in(cq_name, request.frs)
        if policy == "Any":
            return pairs, len(pairs)
        if policy == "LowerPriority":
            return pairs, bisect_left(pairs, request.preemptor.workload.priority, key=_priority)
        kept = [pair for pair in pairs if satisfies_policy(request.preemptor, pair[1], policy)]
        return kept, len(kept)

    def _take(self, request: PreemptionRequest, node: QuotaNode, info: WorkloadInfo, reason: str,
              targets: list[Target]) -> bool:
        self.snapshot.remove(info)
        targets.append(Target(info, reason))
        return _fits_beside_own(node, request.usage) and self.snapshot.placeable()

    def _first_pass(self, request: PreemptionRequest, node: QuotaNode, ordering: "TargetOrdering",
                    targets: list[Target]) -> tuple[bool, list[WorkloadInfo]]:
        """Visit target queues by share; returns (fits now, candidates left for the second
        strategy; none when it is sure to evict nothing)."""
        retry: list[WorkloadInfo] = []
        within_nominal = all(not node.borrowing(fr) for fr in request.frs)
        only_above = True  # every queue visited so far was one the preemptor's share is above
        blocker = None  # what `TargetOrdering.blocker` last found
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
                if strategy_passes(self.strategies[0], preemptor_new, target_old, target_new):
                    if self._take(request, node, info, IN_COHORT_FAIR_SHARING, targets):
                        return True, retry
                    break
                retry.append(info)
        return False, retry

    def _second_pass(self, request: PreemptionRequest, node: QuotaNode, ordering: "TargetOrdering",
                     targets: list[Target]) -> bool:
        """LessThanInitialShare over the candidates the first strategy rejected, one per
        target queue visit."""
        for target_node in ordering:
            info = ordering.pop(target_node.name)
            if target_node is not node:
                preemptor_new, target_old = ordering.shares(target_node)
                if strategy_passes("LessThanInitialShare", preemptor_new, target_old, target_old):
                    if self._take(request, node, info, IN_COHORT_FAIR_SHARING, targets):
                        return True
            ordering.pruned_cqs.add(target_node.name)
        return False


@dataclass
class KeptReclaim:
    """A `Reclaim` kept across commits: the reader of its pairs' commit versions in its tree
    (Snapshot.version_reader) and what it read when the Reclaim was found, and the commit count
    (Snapshot.epoch) its shares were read at."""

    reader: Callable[[], object]
    stamp: object
    epoch: int
    reclaim: Reclaim


class KeptReclaims:
    """(root, pairs, policy, priority bound) -> `_find_reclaimable`'s answer (see `_reclaimable`).
    Found on the committed tree with the shortcuts on (`across`), it is kept while no commit
    moves those pairs in that tree, its shares read again after any commit; otherwise (the plain
    engine; a search with a cycle's usage held, which moves no commit version) only until the
    next commit. Either way the searches until the next commit share it."""

    __slots__ = ("_snapshot", "_kept", "_until_commit")

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._kept: dict[tuple, KeptReclaim] = {}
        self._until_commit = UntilCommit(snapshot)

    def get(self, request: PreemptionRequest, key: tuple, across: bool, find: Callable[[], Reclaim]) -> Reclaim:
        if not across:
            return self._until_commit.get(key, find)
        snapshot = self._snapshot
        kept = self._kept.get(key)
        if kept is None:
            reader = snapshot.version_reader(request.cq, request.frs, False)
            kept = self._kept[key] = KeptReclaim(reader, reader(), snapshot.epoch, find())
        elif kept.reader() != kept.stamp:
            kept.stamp, kept.epoch, kept.reclaim = kept.reader(), snapshot.epoch, find()
        elif kept.epoch != snapshot.epoch:
            old = kept.reclaim
            kept.reclaim = Reclaim(old.entries, old.used, old.paths, old.children)  # (shares read now)
            kept.epoch = snapshot.epoch
        return self._until_commit.get(key, lambda: kept.reclaim)


def _borrowing_in(snapshot: Snapshot, order: dict[str, int], frs: frozenset) -> list[QuotaNode]:
    """The queues of a tree (`order`: its CQ names, each with its position in a walk) borrowing
    one of `frs`, in the tree's order, as a walk would give them. Only a queue with a workload
    holding a pair uses (so borrows) it: those are looked at, not the whole tree."""
    nodes, users = snapshot.nodes, snapshot.users
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


def _fits_beside_own(node: QuotaNode, usage) -> bool:
    """Whether `usage` fits in `node` (borrowing allowed), as Snapshot.fits, where the
    preemptor's own usage is in place during the search: it is counted as taken off."""
    for fr, value in usage.items():
        if value > node.available_without(fr, value):
            return False
    return True


def _above(preemptor_new: Share, target_old: Share) -> bool:
    """Whether neither strategy can pass for any workload of the target: the preemptor's
    share is already above the target's, which evictions only lower (its weight not
    negative). (Then LessThanInitialShare does not pass either.)"""
    return target_old.weight >= 0 and compare(preemptor_new, target_old) > 0


def _second_chance(node: QuotaNode, ordering: TargetOrdering, retry: list[WorkloadInfo],
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
            if strategy_passes("LessThanInitialShare", preemptor_new, target_old, target_old):
                return True
    return False


def _by_queue(infos: list[WorkloadInfo]) -> dict[str, tuple[list, int]]:
    """Workloads grouped per ClusterQueue, each group in the order given, as TargetOrdering reads them."""
    groups: dict[str, list] = {}
    for info in infos:
        groups.setdefault(info.cluster_queue, []).append((None, info))
    return {name: (pairs, len(pairs)) for name, pairs in groups.items()}


def _holds(entry: tuple[list, int] | None) -> bool:
    """Whether a queue's (workloads, end) entry among the candidates holds any."""
    if entry is None:
        return False
    _, end = entry
    return end > 0
