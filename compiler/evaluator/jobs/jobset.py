"""jobset.x-k8s.io JobSet (Kueue's pkg/controller/jobs/jobset): one pod set per replicated job,
named after it (lower case), count = replicas (default 1) x pods per job (parallelism capped by
completions)."""

from __future__ import annotations

from compiler.core.shapes import checked
from compiler.evaluator.jobs.base import (
    Adapter, JobContext, JobObject, JobWorkload, PodSetSpec, Unusable, int_or, items, mapping, one_workload,
    pods_per_job, times,
)


def replicated_job_podsets(replicated_jobs: list, what: str) -> list[PodSetSpec]:
    """Pod sets of a JobSet spec's replicatedJobs (also used for TrainJob's child JobSet)."""
    podsets = []
    for index, rj in enumerate(replicated_jobs):
        checked(rj, dict, f"{what}[{index}]", Unusable, wording="is not")
        name = rj.get("name")
        if not isinstance(name, str) or not name:
            raise Unusable(f"{what}[{index}].name is missing")
        job_spec = mapping(mapping(rj.get("template"), f"{what}[{index}].template").get("spec"),
                           f"{what}[{index}].template.spec")
        template = mapping(job_spec.get("template"), f"{what}[{index}].template.spec.template")
        podsets.append(PodSetSpec(name.lower(), times(int_or(rj.get("replicas"), 1), pods_per_job(job_spec)),
                                  template))
    return podsets


def build(job: JobObject, context: JobContext) -> list[JobWorkload]:
    replicated = items(job.spec.get("replicatedJobs"), "spec.replicatedJobs")
    return one_workload(job, replicated_job_podsets(replicated, "spec.replicatedJobs"))


ADAPTERS = [Adapter("jobset.x-k8s.io", ("JobSet",), build)]
