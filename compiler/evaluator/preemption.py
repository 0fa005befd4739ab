"""The preemptor the scheduler talks to (Kueue's preemption.Preemptor): it keeps the snapshot
of who holds quota up to date and hands each request to the configured strategy, classical
(compiler/evaluator/classical.py) or Fair Sharing (compiler/evaluator/fairshare.py). The pieces
both strategies use live in compiler/evaluator/preemption_common.py; neither strategy imports
the other."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterable

from compiler.evaluator.classical import ClassicalPreemption
from compiler.evaluator.fairshare import FairSharingPreemption
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import ClusterQueue, FlavorResource
from compiler.evaluator.preemption_common import (
    HUMAN_REASONS, PreemptionRequest, Snapshot, Strategy, Target,
)
from compiler.evaluator.tree import QuotaNode

__all__ = ["HUMAN_REASONS", "PreemptionRequest", "Preemptor", "Target"]


class Preemptor:
    def __init__(self, nodes: dict[str, QuotaNode], specs: dict[str, ClusterQueue],
                 admitted: dict[str, dict[str, WorkloadInfo]], fair_sharing: bool,
                 strategies: list[str], reuse: bool = True) -> None:
        self.snapshot = Snapshot(nodes, specs, admitted)
        self.fair_sharing = fair_sharing
        self.reuse = reuse
        self._reuse = False
        self._answers: dict[tuple, tuple[object, tuple[Target, ...]]] = {}
        self.strategy: Strategy = (FairSharingPreemption(self.snapshot, strategies, reuse) if fair_sharing
                                   else ClassicalPreemption(self.snapshot))

    @contextmanager
    def at_commit(self):
        """Searches asked inside this block see the committed quota tree (no usage held for
        the current cycle, every simulated eviction undone): an answer is then a function of
        the request and of what it read, and is reused until a commit (an admission or an
        eviction) changes that."""
        self.snapshot.epoch += 1
        self._reuse = self.reuse
        try:
            yield
        finally:
            self._reuse = False

    def track(self, info: WorkloadInfo) -> None:
        """`info` now holds quota: a candidate from now on."""
        self.snapshot.track(info)

    def untrack(self, info: WorkloadInfo) -> None:
        self.snapshot.untrack(info)

    @contextmanager
    def without(self, targets: Iterable[Target]):
        """The quota tree with `targets` evicted (simulated) inside the block, as it was again
        after it."""
        infos = [target.info for target in targets]
        for info in infos:
            self.snapshot.remove(info)
        try:
            yield
        finally:
            for info in infos:
                self.snapshot.add(info)

    def targets(self, preemptor: WorkloadInfo, cq_name: str, frs: set[FlavorResource],
                usage: dict[FlavorResource, int]) -> list[Target]:
        request = PreemptionRequest(preemptor, cq_name, frozenset(frs), usage)
        if not self._reuse:
            return self.strategy.targets(request)
        # A classical search reads the contested and requested pairs only, and the preemptor
        # only through its priority (and creation time, for LowerOrNewerEqualPriority); fair
        # sharing reads the shares of the whole cohort tree.
        work = preemptor.workload
        key = (cq_name, request.frs, tuple(sorted(usage.items())), work.priority, work.created)
        if self.fair_sharing:
            state: object = self.snapshot.tree_version(cq_name)
        else:
            state = self.snapshot.versions(cq_name, sorted(request.frs | usage.keys()))
        cached = self._answers.get(key)
        if cached is not None and cached[0] == state:
            return list(cached[1])
        found = self.strategy.targets(request)
        self._answers[key] = (state, tuple(found))
        return found
