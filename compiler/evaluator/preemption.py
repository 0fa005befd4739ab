"""The preemptor the scheduler talks to (Kueue's preemption.Preemptor): it keeps the snapshot
of who holds quota up to date and hands each request to the configured strategy, classical
(compiler/evaluator/classical.py) or Fair Sharing (compiler/evaluator/fairshare.py). The pieces
both strategies use live in compiler/evaluator/preemption_common.py; neither strategy imports
the other."""

from __future__ import annotations

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
                 strategies: list[str]) -> None:
        self.snapshot = Snapshot(nodes, specs, admitted)
        self.strategy: Strategy = (FairSharingPreemption(self.snapshot, strategies) if fair_sharing
                                   else ClassicalPreemption(self.snapshot))

    def new_cycle(self) -> None:
        """The quota tree may have changed outside the preemptor (usage held for one cycle
        only): forget what searches cached."""
        self.snapshot.epoch += 1

    def track(self, info: WorkloadInfo) -> None:
        """`info` now holds quota: a candidate from now on."""
        self.snapshot.track(info)

    def untrack(self, info: WorkloadInfo) -> None:
        self.snapshot.untrack(info)

    def remove(self, info: WorkloadInfo) -> None:
        """Take `info`'s usage out of the tree (a simulated eviction); `add` undoes it."""
        self.snapshot.remove(info)

    def add(self, info: WorkloadInfo) -> None:
        self.snapshot.add(info)

    def targets(self, preemptor: WorkloadInfo, cq_name: str, frs: set[FlavorResource],
                usage: dict[FlavorResource, int]) -> list[Target]:
        return self.strategy.targets(PreemptionRequest(preemptor, cq_name, frozenset(frs), usage))
