"""batch/v1 Job (Kueue's pkg/controller/jobs/job): one pod set `main`.

count = parallelism capped by completions; the `kueue.x-k8s.io/job-min-parallelism` annotation
gives minCount (partial admission); Kueue ignores an annotation that is not an integer.
"""

from __future__ import annotations

import re

from compiler.evaluator.jobs.base import (
    Adapter, JobContext, JobObject, JobWorkload, PodSetSpec, mapping, one_workload, pods_per_job,
)

JOB_MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
_GO_INT = re.compile(r"[+-]?[0-9]+")  # what Go's strconv.Atoi accepts


def build(job: JobObject, context: JobContext) -> list[JobWorkload]:
    template = mapping(job.spec.get("template"), "spec.template")
    text = job.annotations.get(JOB_MIN_PARALLELISM)
    min_count = int(text) if text is not None and _GO_INT.fullmatch(text) else None
    notes = ()
    if text is not None and min_count is None:
        notes = (f"annotation {JOB_MIN_PARALLELISM} is not an integer ({text!r}); ignored",)
    return one_workload(job, [PodSetSpec("main", pods_per_job(job.spec), template, min_count)], notes=notes)


ADAPTERS = [Adapter("batch", ("Job",), build)]
