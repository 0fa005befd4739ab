"""leaderworkerset.x-k8s.io LeaderWorkerSet (Kueue's pkg/controller/jobs/leaderworkerset).

Kueue admits each group on its own: one Workload per replica (spec.replicas, default 1), named
as the owner "<name>-<group index>". With a leaderTemplate the pod sets are `leader` (1) and
`worker` (size - 1); without one a single pod set `main` of `size` pods (default 1) from the
workerTemplate.
"""

from __future__ import annotations

from compiler.evaluator.jobs.base import (
    Adapter, JobContext, JobObject, JobWorkload, PodSetSpec, Unusable, int_or, mapping, workload_name,
)

MAX_REPLICAS = 1_000_000  # Kueue's own sanity bound on spec.replicas


def group_podsets(spec: dict) -> list[PodSetSpec]:
    lwt = mapping(spec.get("leaderWorkerTemplate"), "spec.leaderWorkerTemplate")
    size = int_or(lwt.get("size"), 1)
    worker = mapping(lwt.get("workerTemplate"), "spec.leaderWorkerTemplate.workerTemplate")
    leader = lwt.get("leaderTemplate")
    if leader is None:
        return [PodSetSpec("main", size, worker)]
    leader = mapping(leader, "spec.leaderWorkerTemplate.leaderTemplate")
    workers = size - 1 if isinstance(size, int) and not isinstance(size, bool) else size
    return [PodSetSpec("leader", 1, leader), PodSetSpec("worker", workers, worker)]


def build(job: JobObject, context: JobContext) -> list[JobWorkload]:
    replicas = int_or(job.spec.get("replicas"), 1)
    if not isinstance(replicas, int) or isinstance(replicas, bool) or not 0 <= replicas <= MAX_REPLICAS:
        raise Unusable(f"spec.replicas must be an integer from 0 to {MAX_REPLICAS} (got {replicas!r})")
    podsets = group_podsets(job.spec)
    return [JobWorkload(workload_name(job.kind, job.group, f"{job.name}-{index}", job.uid), list(podsets))
            for index in range(replicas)]


ADAPTERS = [Adapter("leaderworkerset.x-k8s.io", ("LeaderWorkerSet",), build)]
