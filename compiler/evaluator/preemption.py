"""The preemptor the scheduler talks to (Kueue's preemption.Preemptor): it keeps the snapshot
of who holds quota up to date and hands each request to the configured strategy, classical
(compiler/evaluator/classical.py) or Fair Sharing (compiler/evaluator/fair_preemption.py). The pieces
both strategies use live in compiler/evaluator/preemption_common.py; neither strategy imports
the other."""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Callable, Iterable

from compiler.evaluator.classical import ClassicalPreemption
from compiler.evaluator.fair_preemption import FairSharingPreemption
from compiler.evaluator.fair_search_reads import SearchReads
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import ClusterQueue, FlavorResource
from compiler.evaluator.preemption_common import (
    HUMAN_REASONS, PreemptionRequest, Snapshot, Strategy, Target,
)
from compiler.evaluator.tree import QuotaNode, versions_kept

__all__ = ["HUMAN_REASONS", "PreemptionRequest", "Preemptor", "Target"]

LOWER_OR_NEWER = "LowerOrNewerEqualPriority"


class Preemptor:
    def __init__(self, nodes: dict[str, QuotaNode], specs: dict[str, ClusterQueue],
                 admitted: dict[str, dict[str, WorkloadInfo]], fair_sharing: bool,
                 strategies: list[str], reuse: bool = True, shortcuts: bool | None = None) -> None:
        """`reuse`: answers are kept while what they read holds (the preemption cache);
        `shortcuts` (as `reuse` unless given): fair-sharing searches are cut short where their
        end is known (FairSharingPreemption's `incremental`)."""
        self.snapshot = Snapshot(nodes, specs, admitted)
        self.fair_sharing = fair_sharing
        self.reuse = reuse
        self._reuse = False
        # request -> its answer, kept while what the search read holds
        self._answers: dict[tuple, KeptAnswer] = {}
        # request -> [], kept on the versions of the preemptor's queue when the request was over
        # the queue's own borrowingLimit: the answer is [] while that queue's workloads stay
        # put, whatever the rest of the tree does.
        self._capped: dict[tuple, KeptAnswer] = {}
        self._creation: dict[str, bool] = {}  # CQ -> does a policy compare creation times
        self._classical = None if fair_sharing else ClassicalPreemption(self.snapshot)
        self._fair = FairSharingPreemption(
            self.snapshot, strategies, reuse if shortcuts is None else shortcuts) if fair_sharing else None
        self.strategy: Strategy = self._classical or self._fair
        self._at_commit = _AtCommit(self)

    def at_commit(self) -> "_AtCommit":
        """Searches asked inside this block see the committed quota tree (no usage held for
        the current cycle, every simulated eviction undone): an answer is then a function of
        the request and of what it read, and is reused until a commit (an admission or an
        eviction) changes that."""
        return self._at_commit

    def track(self, info: WorkloadInfo) -> None:
        """`info` now holds quota: a candidate from now on."""
        self.snapshot.track(info)

    def untrack(self, info: WorkloadInfo) -> None:
        self.snapshot.untrack(info)

    def without(self, targets: Iterable[Target]):
        """The quota tree with `targets` evicted (simulated) inside the block, as it was again
        after it, with the same versions (what was computed from the nodes' usage before, such
        as their fair-sharing shares, stays valid)."""
        infos = [target.info for target in targets]
        if not infos:  # (most fits evict nothing: no edit, no version to keep)
            return _UNCHANGED
        return self._evicted(infos)

    @contextmanager
    def _evicted(self, infos: list[WorkloadInfo]):
        nodes = self.snapshot.nodes
        edited = {id(node): node for info in infos for node in nodes[info.cluster_queue].path_nodes()}
        with versions_kept(edited.values()):
            for info in infos:
                self.snapshot.remove(info)
            try:
                yield
            finally:
                for info in infos:
                    self.snapshot.add(info)

    def targets(self, preemptor: WorkloadInfo, cq_name: str, frs: set[FlavorResource],
                usage: dict[FlavorResource, int], tas: tuple = ()) -> list[Target]:
        """Kueue's GetTargets: the workloads to evict so that `usage` fits the quota and, with
        `tas` (the TAS requests of the assignment's pod sets), its pods the nodes."""
        contested = frozenset(frs)
        if not self._reuse:
            request = PreemptionRequest(preemptor, cq_name, contested, usage, tas)
            return [] if self.snapshot.beyond_own_limit(request) else self._search(request)
        if tas:
            # The answer also reads the nodes' usage (the TAS generation, joined to the kept
            # state) and the pods asked for: the workload and its pod sets' counts key it.
            key = (cq_name, contested, tuple(sorted(usage.items())), preemptor.workload.priority,
                   preemptor.workload.created, preemptor.key, tuple([(n, f, r.count) for n, f, r in tas]))
            found = self._kept(key)
            if found is not None:
                return found
            return self._answer(key, preemptor, cq_name, contested, usage, tas)
        if len(usage) == 1 and len(contested) == 1 and contested.issubset(usage):
            (fr, quantity), = usage.items()
            return self.pair_targets(preemptor, cq_name, fr, quantity)
        # A classical search reads the contested and requested pairs only, and the preemptor
        # only through its priority, and its creation time for LowerOrNewerEqualPriority only:
        # without that policy, the workloads of one priority and shape share their answers.
        # Fair sharing reads the shares of the queues it compares (fair_search_reads.SearchReads).
        work = preemptor.workload
        created = work.created if self.fair_sharing or self.compares_creation(cq_name) else None
        key = (cq_name, contested, tuple(sorted(usage.items())), work.priority, created)
        found = self._kept(key)
        if found is not None:
            return found
        return self._answer(key, preemptor, cq_name, contested, usage)

    def pair_targets(self, preemptor: WorkloadInfo, cq_name: str, fr: FlavorResource, quantity: int) -> list[Target]:
        """`targets` of one pair, contested and requested (the oracle's question, asked for
        every flavor a nomination reads): a flat key, quicker to build and hash, and the
        request's set and dict are built only for a search. (No key of several pairs, which
        holds a frozenset, equals one of these.)"""
        if not self._reuse:
            return self.targets(preemptor, cq_name, {fr}, {fr: quantity})
        work = preemptor.workload
        created = work.created if self.fair_sharing or self.compares_creation(cq_name) else None
        key = (cq_name, fr, quantity, work.priority, created)
        found = self._kept(key)
        if found is not None:
            return found
        return self._answer(key, preemptor, cq_name, frozenset((fr,)), {fr: quantity})

    def _kept(self, key: tuple) -> list[Target] | None:
        """The kept answer of a request while what it read is unchanged, else None."""
        capped = self._capped.get(key)
        if capped is not None and capped.reader() == capped.state:
            return []
        cached = self._answers.get(key)
        if cached is not None and cached.reader() == cached.state and (
                cached.reads is None or cached.reads.shares_hold()):
            return list(cached.answer)
        return None

    def _answer(self, key: tuple, preemptor: WorkloadInfo, cq_name: str, contested: frozenset,
                usage: dict[FlavorResource, int], tas: tuple = ()) -> list[Target]:
        """Search, and keep the answer under `key` with the versions of what it read."""
        cached = self._answers.get(key)
        if cached is not None:
            reader = cached.reader
            state = reader()
        elif not self.fair_sharing:
            reader = self.snapshot.version_reader(cq_name, sorted(contested | usage.keys()), False)
            if tas:
                reader = with_placement(reader, self.snapshot.tas)
            state = reader()
        request = PreemptionRequest(preemptor, cq_name, contested, usage, tas)
        if self.snapshot.beyond_own_limit(request):
            # No search, classical or fair, can succeed while the queue's own workloads stay
            # put: the answer is kept on them alone, whatever the rest of the tree does.
            own = self.snapshot.queue_version_reader(cq_name, sorted(request.frs | usage.keys()))
            self._capped[key] = KeptAnswer(own, own(), (), None)
            return []
        found = self._search(request)
        reads = None
        if self._fair is not None:
            # A fair-sharing search reads more than its own pairs (the pairs its candidates
            # use, the shares of the queues it compares): it says what, once it has run.
            reads = self._fair.reads
            reader = self.snapshot.version_reader(cq_name, reads.frs, False)
            if tas:
                reader = with_placement(reader, self.snapshot.tas)
            state = reader()
        self._answers[key] = KeptAnswer(reader, state, tuple(found), reads)
        return found

    def _search(self, request: PreemptionRequest) -> list[Target]:
        """The strategy's answer; with TAS requests, simulated evictions move the candidates'
        pods off the nodes and a fit needs the request's pods placed (workloadFits)."""
        if not request.tas:
            return self.strategy.targets(request)
        snapshot = self.snapshot
        snapshot.placing = list(request.tas)
        try:
            return self.strategy.targets(request)
        finally:
            snapshot.placing = None

    def compares_creation(self, cq_name: str) -> bool:
        """Whether a policy of `cq_name` compares creation times (LowerOrNewerEqualPriority)."""
        answer = self._creation.get(cq_name)
        if answer is None:
            policy = self.snapshot.specs[cq_name].preemption
            answer = self._creation[cq_name] = LOWER_OR_NEWER in (policy.within_cluster_queue,
                                                                   policy.reclaim_within_cohort)
        return answer


def with_placement(reader: Callable[[], object], tas) -> Callable[[], object]:
    """`reader`'s answer joined with the TAS generation (the nodes' usage as placements moved it)."""
    return lambda: (reader(), tas.generation)


class KeptAnswer:
    """A search's answer as the preemptor keeps it, with what it depends on besides the request:
    the commit versions of the pairs it read (`reader`'s answer, `state` when it was kept) and,
    for a fair-sharing search, the shares it compared (`reads`, fair_search_reads.SearchReads)."""

    __slots__ = ("reader", "state", "answer", "reads")

    def __init__(self, reader: Callable[[], object], state: object, answer: tuple, reads: SearchReads | None) -> None:
        self.reader = reader
        self.state = state
        self.answer = answer
        self.reads = reads


# The block the scheduler enters on every cycle, as a class: a generator-based context manager
# costs a generator and two interpreted calls each time.
class _AtCommit:
    """`Preemptor.at_commit`'s block (not reentrant: a cycle enters it once)."""

    __slots__ = ("_preemptor",)

    def __init__(self, preemptor: Preemptor) -> None:
        self._preemptor = preemptor

    def __enter__(self) -> None:
        preemptor = self._preemptor
        preemptor.snapshot.epoch += 1
        preemptor._reuse = preemptor.reuse
        if preemptor._fair is not None:
            preemptor._fair.committed = True

    def __exit__(self, *_exc) -> bool:
        preemptor = self._preemptor
        preemptor._reuse = False
        if preemptor._fair is not None:
            preemptor._fair.committed = False
        return False


_UNCHANGED = nullcontext()  # `Preemptor.without` nothing: the tree as it is
