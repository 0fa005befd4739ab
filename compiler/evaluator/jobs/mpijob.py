"""kubeflow.org MPIJob v2beta1 (Kueue's pkg/controller/jobs/mpijob): pod sets `launcher` then
`worker` (replicas default 1); priority class from runPolicy.schedulingPolicy.priorityClass, else
the launcher's template, else the worker's. The shape is the training-operator one."""

from __future__ import annotations

from compiler.evaluator.jobs.base import Adapter, JobContext, JobObject, JobWorkload
from compiler.evaluator.jobs.kubeflow import build_replica_job


def build(job: JobObject, context: JobContext) -> list[JobWorkload]:
    return build_replica_job(job, "mpiReplicaSpecs", ("Launcher", "Worker"))


ADAPTERS = [Adapter("kubeflow.org", ("MPIJob",), build)]
