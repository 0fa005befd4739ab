"""batch/v1 Job (Kueue's pkg/controller/jobs/job): one pod set `main`.

count = parallelism capped by completions; the `kueue.x-k8s.io/job-min-parallelism` annotation
gives minCount (partial admission). Kueue's webhook refuses an annotation that is not an integer,
or not between 1 and count - 1, or on an elastic job.
"""

from __future__ import annotations

import re

from compiler.evaluator.jobs.base import (
    Adapter, JobContext, JobObject, JobWorkload, PodSetSpec, Rejected, mapping, one_workload, pods_per_job,
)

JOB_MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
_GO_INT = re.compile(r"[+-]?[0-9]+")  # what Go's strconv.Atoi accepts


def min_parallelism(job: JobObject, count: object) -> int | None:
    text = job.annotations.get(JOB_MIN_PARALLELISM)
    if text is None:
        return None
    where = f"metadata.annotations[{JOB_MIN_PARALLELISM}]"
    if not _GO_INT.fullmatch(text):
        raise Rejected(f"{where}: {text!r} is not an integer")
    value = int(text)
    if isinstance(count, int) and not 0 < value < count:
        raise Rejected(f"{where}: {value} should be between 0 and {count - 1}")
    if job.elastic:
        raise Rejected(f"{where}: partial admission and elastic job cannot be used together")
    return value


def build(job: JobObject, context: JobContext) -> list[JobWorkload]:
    template = mapping(job.spec.get("template"), "spec.template")
    count = pods_per_job(job.spec)
    return one_workload(job, [PodSetSpec("main", count, template, min_parallelism(job, count))])


ADAPTERS = [Adapter("batch", ("Job",), build)]
