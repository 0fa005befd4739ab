"""Kubeflow training-operator jobs (Kueue's pkg/controller/jobs/kubeflow): PyTorchJob, TFJob,
XGBoostJob, PaddleJob, JAXJob (MPIJob, from the mpi-operator, reuses the helpers: `mpijob.py`).

They share one shape: a map of replica type -> {replicas (default 1), template}. Kueue makes one
pod set per replica type present, in the integration's fixed order (types outside that order are
not admitted), named by the type in lower case. The priority class comes from
runPolicy.schedulingPolicy.priorityClass, else the first replica type (in that order) whose
template names one.
"""

from __future__ import annotations

from compiler.evaluator.jobs.base import (
    Adapter, JobContext, JobObject, JobWorkload, PodSetSpec, int_or, mapping, one_workload,
    template_priority_class,
)

# kind -> (field holding the replica specs, replica types in Kueue's order)
_KINDS = {
    "PyTorchJob": ("pytorchReplicaSpecs", ("Master", "Worker")),
    "TFJob": ("tfReplicaSpecs", ("Chief", "Master", "PS", "Worker", "Eval")),
    "XGBoostJob": ("xgbReplicaSpecs", ("Master", "Worker")),
    "PaddleJob": ("paddleReplicaSpecs", ("Master", "Worker")),
    "JAXJob": ("jaxReplicaSpecs", ("Worker",)),
}


def replica_podsets(spec: dict, field: str, order: tuple[str, ...]) -> tuple[list[PodSetSpec], str]:
    """Pod sets of a replica-spec map, and the first priorityClassName among their templates."""
    replica_specs = mapping(spec.get(field), f"spec.{field}")
    podsets: list[PodSetSpec] = []
    priority = ""
    for role in order:
        replica = replica_specs.get(role)
        if replica is None:
            continue
        replica = mapping(replica, f"spec.{field}.{role}")
        template = mapping(replica.get("template"), f"spec.{field}.{role}.template")
        podsets.append(PodSetSpec(role.lower(), int_or(replica.get("replicas"), 1), template))
        priority = priority or template_priority_class(template)
    return podsets, priority


def build_replica_job(job: JobObject, field: str, order: tuple[str, ...]) -> list[JobWorkload]:
    podsets, template_priority = replica_podsets(job.spec, field, order)
    policy = mapping(mapping(job.spec.get("runPolicy"), "spec.runPolicy").get("schedulingPolicy"),
                     "spec.runPolicy.schedulingPolicy")
    chosen = policy.get("priorityClass")
    return one_workload(job, podsets, chosen if isinstance(chosen, str) and chosen else template_priority)


def build(job: JobObject, context: JobContext) -> list[JobWorkload]:
    return build_replica_job(job, *_KINDS[job.kind])


ADAPTERS = [Adapter("kubeflow.org", tuple(_KINDS), build)]
