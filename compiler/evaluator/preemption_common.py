"""What the two preemption strategies (classical, fair sharing) share, as Kueue's
preemption/common package: targets and their reasons, the policy checks, the candidate order,
the request a strategy answers, and the snapshot both search in.

Neither strategy module imports the other; the scheduler talks to them through `Preemptor`
(compiler/evaluator/preemption.py) with a `PreemptionRequest` and gets `Target`s back.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from operator import itemgetter
from typing import Callable, Mapping, Protocol

from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import ClusterQueue, FlavorResource
from compiler.evaluator.tree import QuotaNode

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
HUMAN_REASONS = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}


@dataclass(frozen=True)
class Target:
    """A workload to evict, and why (Kueue's preemption reason)."""

    info: WorkloadInfo
    reason: str


@dataclass(frozen=True)
class PreemptionRequest:
    """What the scheduler asks a strategy: room for `usage` in ClusterQueue `cq`, where the
    pairs in `frs` are the ones that do not fit without evicting someone."""

    preemptor: WorkloadInfo
    cq: str
    frs: frozenset[FlavorResource]
    usage: Mapping[FlavorResource, int]
    # (pod set, TAS flavor, topology request) of every pod set placed on nodes (Kueue's
    # tasRequests): a candidate set fits only if these pods are then placeable. Empty for the
    # flavor assigner's question (its SimulatePreemption asks about quota alone).
    tas: tuple = ()


class Strategy(Protocol):
    """A preemption strategy: the workloads to evict for a request, or [] when none would do."""

    def targets(self, request: PreemptionRequest) -> list[Target]: ...


def satisfies_policy(preemptor: WorkloadInfo, candidate: WorkloadInfo, policy: str) -> bool:
    """withinClusterQueue / reclaimWithinCohort: may `preemptor` evict `candidate`?"""
    if policy == "LowerPriority":
        return preemptor.workload.priority > candidate.workload.priority
    if policy == "LowerOrNewerEqualPriority":
        return preemptor.priority > candidate.priority or (
            preemptor.priority == candidate.priority and preemptor.workload.created < candidate.workload.created)
    return policy == "Any"


def candidate_key(info: WorkloadInfo) -> tuple:
    """Kueue's CandidatesOrdering after its first rule (other queues first): lower priority,
    then the most recently reserved, then UID. It never changes while the workload holds
    quota, so the snapshot keeps its candidates sorted by it."""
    rank = info.reserved_rank
    return (info.priority, -rank[0], -rank[1], info.uid)


def candidate_order(preemptor_cq: str):
    """The whole CandidatesOrdering, for a preemptor in `preemptor_cq`."""
    def key(info: WorkloadInfo) -> tuple:
        return (info.cluster_queue == preemptor_cq,) + candidate_key(info)
    return key


class Snapshot:
    """The quota tree and the workloads holding quota in it, as both strategies search it.

    Strategies simulate an eviction by removing the workload's usage from the tree and undo it
    by adding it back (`remove`/`add`); the candidates of each ClusterQueue are indexed per
    (flavor, resource) and kept sorted by `candidate_key`, so a search reads the few it needs
    instead of scanning every admitted workload of the cohort."""

    def __init__(self, nodes: dict[str, QuotaNode], specs: dict[str, ClusterQueue],
                 admitted: dict[str, dict[str, WorkloadInfo]]) -> None:
        self.nodes = nodes          # CQ name -> leaf node
        self.specs = specs
        self.admitted = admitted    # CQ name -> key -> info holding quota
        self.by_fr: dict[str, dict[FlavorResource, dict[str, WorkloadInfo]]] = {}
        # The ClusterQueues with a workload holding each pair: only they can borrow it.
        self.users: dict[FlavorResource, set[str]] = {}
        self._sorted: dict[tuple[str, FlavorResource], list[tuple[tuple, WorkloadInfo]]] = {}
        self._sums: dict[tuple[str, FlavorResource], list[int]] = {}  # prefix sums of _sorted's usage
        self._pairs: dict[tuple[str, FlavorResource], frozenset] = {}  # every pair _sorted's workloads use
        # CQ name -> pairs -> `sorted_candidates_in`: dropped with any change of the queue's workloads
        self._sorted_in: dict[str, dict[frozenset, list[tuple[tuple, WorkloadInfo]]]] = {}
        # Priorities of admitted workloads per CQ and per cohort tree (root): a preemptor no
        # policy lets preempt anything there is answered without a candidate search.
        self.priorities: dict[object, dict[int, int]] = {}
        # Bumped by every committed change (admission, eviction) of the quota tree: searches
        # may cache what they read between two commits (they always undo their own edits).
        self.epoch = 0
        # Commits per (cohort tree, flavor-resource) and per (ClusterQueue, flavor-resource),
        # what a search read (and what one queue's own workloads hold) is unchanged while these
        # are; and per cohort tree.
        # The pairs' counts live in one list, each pair at a number of its own (`_slot`): the
        # readers (`version_reader`), asked millions of times in a simulation, look numbers up
        # in a list, where keys of nested tuples had their hash computed anew at every lookup.
        self._versions: list[int] = []
        self._tree_slots: dict[tuple[int, FlavorResource], int] = {}
        self._queue_slots: dict[tuple[str, FlavorResource], int] = {}
        self._readers: dict[tuple, Callable[[], object]] = {}
        # (a defaultdict: a reader from `version_reader` may ask for a tree never committed to)
        self.tree_versions: dict[int, int] = defaultdict(int)
        self._roots: dict[str, int] = {}  # CQ name -> id of its root (the tree is fixed)
        # The commits since `take_moved` was last asked, once a reader of them (the quiet
        # queues' bounds_watch) started it: a ClusterQueue's name, then the pairs it moved.
        self.moved: list | None = None
        # Topology Aware Scheduling (tas.TasState, None without TAS flavors), and the TAS
        # requests of the search under way (None: a quota-only search). While a search places
        # pods, a simulated eviction takes the candidate's pods off the nodes too (Kueue's
        # snapshot.RemoveWorkload removes its TAS usage with its quota).
        self.tas = None
        self.placing = None

    # -- who holds quota ---------------------------------------------------------------------
    def track(self, info: WorkloadInfo) -> None:
        self.epoch += 1
        per_cq = self.by_fr.setdefault(info.cluster_queue, {})
        for fr in info.usage:
            per_cq.setdefault(fr, {})[info.key] = info
            self.users.setdefault(fr, set()).add(info.cluster_queue)
            self._sorted.pop((info.cluster_queue, fr), None)
            self._sums.pop((info.cluster_queue, fr), None)
            self._pairs.pop((info.cluster_queue, fr), None)
        self._sorted_in.pop(info.cluster_queue, None)
        self._count(info, 1)
        self._commit(info)

    def untrack(self, info: WorkloadInfo) -> None:
        self.epoch += 1
        per_cq = self.by_fr.get(info.cluster_queue, {})
        for fr in info.usage:
            members = per_cq.get(fr, {})
            members.pop(info.key, None)
            if not members:
                self.users.get(fr, set()).discard(info.cluster_queue)
            self._sorted.pop((info.cluster_queue, fr), None)
            self._sums.pop((info.cluster_queue, fr), None)
            self._pairs.pop((info.cluster_queue, fr), None)
        self._sorted_in.pop(info.cluster_queue, None)
        self._count(info, -1)
        self._commit(info)

    def _commit(self, info: WorkloadInfo) -> None:
        tree = self.root_of(info.cluster_queue)
        self.tree_versions[tree] += 1
        versions = self._versions
        for fr in info.usage:
            versions[_slot(self._tree_slots, versions, (tree, fr))] += 1
            versions[_slot(self._queue_slots, versions, (info.cluster_queue, fr))] += 1
        if self.moved is not None:
            self.moved.append(info.cluster_queue)
            self.moved.append(tuple(info.usage))

    def take_moved(self) -> list:
        """The commits logged since the last call (see `moved`), and the log started anew."""
        moved = self.moved
        self.moved = []
        return moved if moved is not None else []

    def root_of(self, cq_name: str) -> int:
        """The id of the root of `cq_name`'s cohort tree."""
        root = self._roots.get(cq_name)
        if root is None:
            root = self._roots[cq_name] = id(self.nodes[cq_name].root())
        return root

    def versions(self, cq_name: str, frs) -> tuple:
        """The commit versions of `frs` in the cohort tree of `cq_name`."""
        tree = self.root_of(cq_name)
        return tuple([self._versions[_slot(self._tree_slots, self._versions, (tree, fr))] for fr in frs])

    def tree_version(self, cq_name: str) -> int:
        return self.tree_versions[self.root_of(cq_name)]

    def version_reader(self, cq_name: str, frs, whole_tree: bool) -> Callable[[], object]:
        """A function answering the commit versions of `frs` (of the whole tree when
        `whole_tree`) in the cohort tree of `cq_name`, made once for a question asked again
        and again: each call is one C-level lookup instead of a loop."""
        tree = self.root_of(cq_name)
        if whole_tree:
            return partial(self.tree_versions.__getitem__, tree)
        # (a reader holds no state of its own: one per tree and pairs, shared by every question)
        key = (tree, tuple(frs))
        reader = self._readers.get(key)
        if reader is None:
            reader = self._readers[key] = _reader(
                self._versions, [_slot(self._tree_slots, self._versions, (tree, fr)) for fr in key[1]])
        return reader

    def queue_version_reader(self, cq_name: str, frs) -> Callable[[], object]:
        """As `version_reader`, for the commits of `cq_name`'s own workloads only."""
        key = (cq_name, tuple(frs), False)  # (False: not a tree's, whose keys hold its root's id)
        reader = self._readers.get(key)
        if reader is None:
            reader = self._readers[key] = _reader(
                self._versions, [_slot(self._queue_slots, self._versions, (cq_name, fr)) for fr in key[1]])
        return reader

    def _count(self, info: WorkloadInfo, delta: int) -> None:
        node = self.nodes[info.cluster_queue]
        for scope in (info.cluster_queue, id(node.root())):
            counts = self.priorities.setdefault(scope, {})
            counts[info.workload.priority] = counts.get(info.workload.priority, 0) + delta
            if counts[info.workload.priority] == 0:
                del counts[info.workload.priority]

    def may_have_candidates(self, scope, policy: str, priority: int) -> bool:
        """False when no workload in `scope` (a CQ name or id of a root) can satisfy `policy`."""
        if policy == "Never":
            return False
        if policy == "Any":
            return True
        counts = self.priorities.get(scope)
        if not counts:
            return False
        lowest = min(counts)
        return lowest < priority or (policy == "LowerOrNewerEqualPriority" and lowest <= priority)

    def sorted_candidates(self, cq_name: str, fr: FlavorResource) -> list[tuple[tuple, WorkloadInfo]]:
        """(candidate_key, info) of the workloads of `cq_name` using `fr`, in candidate order."""
        key = (cq_name, fr)
        ordered = self._sorted.get(key)
        if ordered is None:
            members = self.by_fr.get(cq_name, {}).get(fr, {})
            ordered = sorted(((candidate_key(info), info) for info in members.values()),
                             key=lambda item: item[0])
            self._sorted[key] = ordered
        return ordered

    def pairs_used(self, cq_name: str, fr: FlavorResource) -> frozenset:
        """Every (flavor, resource) pair the workloads of `cq_name` using `fr` hold."""
        key = (cq_name, fr)
        found = self._pairs.get(key)
        if found is None:
            pairs: set[FlavorResource] = set()
            for info in self.by_fr.get(cq_name, {}).get(fr, {}).values():
                pairs.update(info.usage)
            found = self._pairs[key] = frozenset(pairs)
        return found

    def usage_below(self, cq_name: str, fr: FlavorResource, policy: str, priority: int) -> int | None:
        """Total `fr` usage of the workloads of `cq_name` using `fr` that `policy` lets a
        preemptor of `priority` evict (None for a policy that is not a priority bound)."""
        if policy == "Any":
            bound = None
        elif policy == "LowerPriority":
            bound = priority
        else:
            return None
        key = (cq_name, fr)
        sums = self._sums.get(key)
        if sums is None:
            ordered = self.sorted_candidates(cq_name, fr)
            total, sums = 0, [0]
            for _, info in ordered:
                total += info.usage[fr]
                sums.append(total)
            self._sums[key] = sums
        if bound is None:
            return sums[-1]
        ordered = self.sorted_candidates(cq_name, fr)
        return sums[bisect_left(ordered, bound, key=lambda item: item[0][0])]

    def beyond_own_limit(self, request: "PreemptionRequest") -> bool:
        """Whether some requested pair exceeds what the preemptor's own queue may use under its
        borrowingLimit even with all its own candidates gone. Evicting from other queues never
        raises that cap, so no search, classical or fair, can succeed: this answers it from the
        queue alone, without collecting the cohort's candidates (a queue at its limit asks
        often)."""
        node = self.nodes[request.cq]
        if node.parent is None:
            return False
        policy = self.specs[request.cq].preemption.within_cluster_queue
        priority = request.preemptor.workload.priority
        for fr, value in request.usage.items():
            quota = node.quotas.get(fr)
            if quota is None or quota.borrowing_limit is None:
                continue
            removable = 0
            if policy != "Never":
                # every workload of the queue on this pair the policy could evict (all of them
                # when the bound is not a plain priority: an upper bound is enough here)
                removable = self.usage_below(request.cq, fr, policy, priority)
                if removable is None:
                    removable = self.usage_below(request.cq, fr, "Any", priority)
            used = node.usage.get(fr, 0) - removable
            local = node.local.get(fr, 0) if node.local else 0
            # QuotaNode.available's cap at this queue, and the unlent part on top of it
            cap = node.subtree.get(fr, 0) - local - max(0, used - local) + quota.borrowing_limit
            if value > cap + max(0, local - used):
                return True
        return False

    def sorted_candidates_in(self, cq_name: str, frs: frozenset) -> list[tuple[tuple, WorkloadInfo]]:
        """(candidate_key, info) of the workloads of `cq_name` using any of `frs`, in candidate
        order (`sorted_candidates` for several pairs). Kept until the queue's workloads change:
        a fair-sharing search asks it of its own queue at every search, and an overloaded
        cluster searches for most heads at every cycle."""
        per_cq = self._sorted_in.get(cq_name)
        if per_cq is None:
            per_cq = self._sorted_in[cq_name] = {}
        ordered = per_cq.get(frs)
        if ordered is None:
            ordered = per_cq[frs] = sorted(((candidate_key(info), info) for info in self.candidates_in(cq_name, frs)),
                                           key=lambda item: item[0])
        return ordered

    def candidates_in(self, cq_name: str, frs) -> list[WorkloadInfo]:
        """Every workload of `cq_name` using any of `frs` (each once)."""
        per_cq = self.by_fr.get(cq_name)
        if not per_cq:
            return []
        found: dict[str, WorkloadInfo] = {}
        for fr in sorted(frs):
            found.update(per_cq.get(fr, {}))
        return list(found.values())

    # -- simulated evictions -----------------------------------------------------------------
    def remove(self, info: WorkloadInfo) -> None:
        self.nodes[info.cluster_queue].remove_all(info.usage)
        if self.placing is not None and info.placements:
            self.tas.shift(info.placements, -1)

    def add(self, info: WorkloadInfo) -> None:
        self.nodes[info.cluster_queue].add_all(info.usage)
        if self.placing is not None and info.placements:
            self.tas.shift(info.placements, 1)

    def placeable(self) -> bool:
        """The TAS half of Kueue's workloadFits: the search's TAS requests find a placement on
        the nodes as the simulated evictions left them (always, for a quota-only search)."""
        return self.placing is None or self.tas.placeable(self.placing)

    @staticmethod
    def fits(node: QuotaNode, usage: Mapping[FlavorResource, int], allow_borrowing: bool) -> bool:
        for fr, value in usage.items():
            if not allow_borrowing and node.borrowing_with(fr, value):
                return False
            if value > node.available(fr):
                return False
        return True

    def fill_back(self, node: QuotaNode, usage: Mapping[FlavorResource, int], targets: list[Target],
                  allow_borrowing: bool) -> list[Target]:
        """Kueue's fillBackWorkloads: with `targets` removed and the request fitting, put back
        every target but the last one found whose return still lets the request fit, so no
        workload is evicted that was not needed."""
        i = len(targets) - 2
        while i >= 0:
            self.add(targets[i].info)
            if self.fits(node, usage, allow_borrowing) and self.placeable():
                targets[i] = targets[-1]
                targets.pop()
            else:
                self.remove(targets[i].info)
            i -= 1
        return targets

    def restore(self, targets: list[Target]) -> None:
        for target in targets:
            self.add(target.info)


def _slot(slots: dict, versions: list[int], key: tuple) -> int:
    """The number of `key`'s commit count in `versions`, given on first use (count 0)."""
    slot = slots.get(key)
    if slot is None:
        slot = slots[key] = len(versions)
        versions.append(0)
    return slot


def _reader(versions: list[int], slots: list[int]) -> Callable[[], object]:
    """The counts at `slots` of `versions` (a tuple; one slot's is a plain number)."""
    if not slots:
        return tuple
    return partial(itemgetter(*slots), versions)


class UntilCommit:
    """Answers about the committed tree that hold until the snapshot's next commit (an
    admission or an eviction moves its epoch): each is computed once per key in between, which
    is every nomination of one cycle, and all are dropped when the epoch moves."""

    __slots__ = ("_snapshot", "_epoch", "_answers")

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._epoch = -1
        self._answers: dict = {}

    def get(self, key, compute: Callable[[], list[QuotaNode]]) -> list[QuotaNode]:
        if self._epoch != self._snapshot.epoch:
            self._answers.clear()
            self._epoch = self._snapshot.epoch
        found = self._answers.get(key)
        if found is None:
            found = self._answers[key] = compute()
        return found
