"""The Kueue admission engine: what Kueue v0.19 would do with these objects and these jobs.

A library of its own: it knows Kueue objects (ResourceFlavor, Cohort, ClusterQueue, LocalQueue,
WorkloadPriorityClass, Workload, Namespace, Configuration), never policies, and the job kinds
Kueue turns into Workloads, one adapter per integration in `jobs/`: batch Job, JobSet,
PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob, MPIJob (v2beta1), TrainJob (with its
TrainingRuntime / ClusterTrainingRuntime; without it the TrainJob is skipped with a warning, as
Kueue creates no Workload then), RayJob, RayCluster, LeaderWorkerSet (one Workload per group),
Pod and pod groups. Jobs with `metadata.generateName` and no name get a derived name (see
`jobs.base.GeneratedNames`). Other objects carrying the queue-name label are reported, not
evaluated.

Public API (stable):

    from compiler.evaluator import load_manifests, evaluate

    snapshot = load_manifests(docs: list[dict], source_names: list[str] | None = None) -> ClusterState
        docs are plain dicts as `kubectl get -o yaml` prints them (`kind: List` accepted,
        kueue.x-k8s.io v1beta1 and v1beta2). source_names[i] names where docs[i] came from
        ("file.yaml" or "file.yaml:12"), used in diagnostics. Unusable objects are skipped with a
        warning in `snapshot.warnings` (list[compiler.core.errors.Diagnostic]); unreadable input
        raises compiler.core.errors.InputError (see `read_files`).

    result = evaluate(snapshot, cycles: int | None = None, after_cycle=None) -> EvaluationResult
        runs `cycles` scheduling cycles, or until nothing changes; after_cycle(engine), if
        given, is called after each cycle (engine.cycle, engine.decisions: a progress line).

    result.to_json() -> dict            # the `kueue-policy evaluate --format json` document
    result.workload("ns/name") -> WorkloadOutcome
        .status ('admitted' | 'running' | 'pending' | 'inadmissible' | 'preempted'),
        .cluster_queue, .assignment {podset: {resource: flavor}}, .count {podset: n},
        .borrowing, .reason (Kueue's message), .reason_code (Kueue's reason), .preempted_by
    result.explain("ns/name") -> str    # flavors tried, why each failed, what it would take

    read_files(paths: list[str], stdin_text: str | None = None) -> list[(doc, SourcePosition)]
    load_documents(documents) -> ClusterState   # the positioned form used by the CLI

Status meanings: `admitted` = admitted by this evaluation; `running` = held quota in the input
and still does; `pending` = waiting for quota or for its preemptions; `inadmissible` = cannot be
admitted until an object changes (missing/inactive queue, namespace not selected, no matching
flavor, exceeds the maximum capacity, invalid workload); `preempted` = evicted by this
evaluation (`preemptedBy` names the preemptor).

Modelling notes (where a static evaluation has to choose what a live cluster does over time):
* Feature gates as in v0.19.2 defaults: FlavorFungibility, PartialAdmission,
  PrioritySortingWithinCohort, FlavorFungibilityPreserveScanProgress, FairSharingPrioritizeNonBorrowing,
  FairSharingPreemptWithinNominal on; RecomputeAssignmentUponPreemptionTargetsOverlap,
  PrioritizePreemptorWorkloads, PriorityBoost off; TAS and admission checks are not modelled.
* SchedulingEquivalenceHashing (on by default since v0.18) is modelled: on a BestEffortFIFO
  queue, a head that gets no fit (or no preemption candidates) takes the queued workloads of its
  equivalence class (`WorkloadInfo.scheduling_hash`: priority and pod-set shapes) to the
  inadmissible set with it, and a workload of that class arriving before the next requeue joins
  them (`PendingQueue.bulk_move` / `PendingQueue.add` in queue_manager.py). Those workloads were not tried
  themselves, so, as in Kueue (whose scheduler writes a condition only on the workload it tried),
  they keep the status and reason of their own last attempt, or `pending` "Waiting to be scheduled"
  if they never had one.
* Evictions complete between cycles: a victim releases its quota at the end of the cycle that
  preempted it (inadmissible workloads of its LocalQueue's cohort tree are requeued, as on a
  Kueue eviction event) and is back in its queue for the next cycle, as Kueue's workload
  controller requeues it (the preemptor keeps the head of its own queue).
* Without `cycles`, the loop stops when a cycle changes nothing; a cluster still changing after
  8 x workloads + 100 cycles (preemption ping-pong) stops there with `result.converged` False.
  A run whose whole scheduling state comes back (a circle of preemptions, circles.py) repeats
  forever: the state at the cap is worked out from the circle's period (`result.circle`) with
  a few more cycles instead of all of them, the same state as running them.
* Ties Kueue leaves to map order are broken by name (ClusterQueues, cohorts, resources) so the
  output is the same for any input order.
"""

from __future__ import annotations

import re
from typing import Callable

from compiler.core.errors import SourcePosition
from compiler.evaluator.loader import load_documents
from compiler.evaluator.models import ClusterState
from compiler.evaluator.reader import read_files
from compiler.evaluator.result import EvaluationResult, WorkloadOutcome
from compiler.evaluator.engine import Engine
from compiler.runtime.garbage_collection import few_collections

__all__ = ["ClusterState", "EvaluationResult", "WorkloadOutcome", "evaluate", "load_documents",
           "load_manifests", "read_files"]

_NAME_WITH_LINE = re.compile(r"^(.*):(\d+)$")


def _position(name: str | None) -> SourcePosition | None:
    if not name:
        return None
    match = _NAME_WITH_LINE.match(name)
    if match:
        return SourcePosition(match.group(1), int(match.group(2)))
    return SourcePosition(name)


def load_manifests(docs: list[dict], source_names: list[str] | None = None) -> ClusterState:
    names = list(source_names or [])
    positioned = [(doc, _position(names[i] if i < len(names) else None)) for i, doc in enumerate(docs)]
    return load_documents(positioned)


def evaluate(snapshot: ClusterState, cycles: int | None = None,
             after_cycle: Callable[[Engine], None] | None = None) -> EvaluationResult:
    engine = Engine(snapshot)
    with few_collections():
        engine.run(cycles, after_cycle=after_cycle)
    return EvaluationResult(engine)
