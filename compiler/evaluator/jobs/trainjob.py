"""trainer.kubeflow.org TrainJob (Kueue's pkg/controller/jobs/trainjob).

Kueue builds the JobSet the Kubeflow Trainer would create from the TrainJob's runtime and takes
that JobSet's pod sets (`jobset.py`). The runtime must be in the input: spec.runtimeRef names a
ClusterTrainingRuntime (the default kind) or a TrainingRuntime of the TrainJob's namespace. When
it is absent Kueue cannot build pod sets and creates no Workload ("runtime '<name>' not found");
the job is reported with that message and skipped.

From the runtime's spec.template.spec.replicatedJobs, for each replicated job:
* count = parallelism (default 1); for the one labelled
  `trainer.kubeflow.org/trainjob-ancestor-step: trainer`, mlPolicy.numNodes (default 1), replaced
  by the TrainJob's spec.trainer.numNodes; with an MPI policy the job named `node` takes
  spec.trainer.numNodes (minus 1 when runLauncherAsNode);
* the trainer and initializer jobs run as 1 replica; the trainer's container `node` gets
  spec.trainer.resourcesPerNode;
* parallelism = completions = count, so the pod set count is replicas x count.
spec.runtimePatches (node selectors and the like set by other controllers) are not applied.
"""

from __future__ import annotations

import copy

from compiler.evaluator.jobs.base import (
    Adapter, JobContext, JobObject, JobWorkload, Unusable, int_or, items, mapping, one_workload,
)
from compiler.evaluator.jobs.jobset import replicated_job_podsets

TRAINER_GROUP = "trainer.kubeflow.org"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
# The Trainer runs these steps as one replica whatever the runtime says.
ONE_REPLICA_STEPS = ("trainer", "dataset-initializer", "model-initializer")


def runtime_spec(job: JobObject, context: JobContext) -> dict:
    ref = mapping(job.spec.get("runtimeRef"), "spec.runtimeRef")
    name = ref.get("name")
    if not isinstance(name, str) or not name:
        raise Unusable("spec.runtimeRef.name is missing")
    kind = ref.get("kind") or "ClusterTrainingRuntime"
    group = ref.get("apiGroup") or TRAINER_GROUP
    if group != TRAINER_GROUP or kind not in ("ClusterTrainingRuntime", "TrainingRuntime"):
        raise Unusable(f"unsupported runtime: {kind}.{group}")
    runtime = (context.cluster_training_runtimes.get(name) if kind == "ClusterTrainingRuntime"
               else context.training_runtimes.get((job.namespace, name)))
    if runtime is None:
        where = "" if kind == "ClusterTrainingRuntime" else f" in namespace {job.namespace}"
        raise Unusable(f"runtime '{name}' not found ({kind}{where} is not in the input; Kueue creates no "
                       "Workload until it exists)")
    return mapping(runtime.get("spec"), f"{kind} {name}: spec")


def _count(rj: dict, ml_policy: dict, trainer: dict) -> object:
    job_spec = mapping(mapping(rj.get("template"), "template").get("spec"), "template.spec")
    count = int_or(job_spec.get("parallelism"), 1)
    is_trainer = _ancestor(rj) == "trainer"
    if is_trainer and ml_policy:
        count = int_or(ml_policy.get("numNodes"), 1)
    nodes = trainer.get("numNodes")
    if nodes is not None:
        mpi = ml_policy.get("mpi")
        if isinstance(mpi, dict):
            if rj.get("name") == "node":
                count = max(nodes - 1, 1) if mpi.get("runLauncherAsNode") is True and isinstance(nodes, int) \
                    else nodes
        elif is_trainer:
            count = nodes
    return max(count, 1) if isinstance(count, int) and not isinstance(count, bool) else count


def _ancestor(rj: dict) -> str:
    meta = (rj.get("template") or {}).get("metadata") if isinstance(rj.get("template"), dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return str(labels.get(ANCESTOR_LABEL, "")) if isinstance(labels, dict) else ""


def child_replicated_jobs(job: JobObject, spec: dict) -> list:
    """The runtime's replicated jobs with the TrainJob's trainer settings applied."""
    ml_policy = mapping(spec.get("mlPolicy"), "runtime spec.mlPolicy")
    trainer = mapping(job.spec.get("trainer"), "spec.trainer")
    template = mapping(mapping(spec.get("template"), "runtime spec.template").get("spec"),
                       "runtime spec.template.spec")
    launcher_as_node = isinstance(ml_policy.get("mpi"), dict) and ml_policy["mpi"].get("runLauncherAsNode") is True
    out = []
    for index, rj in enumerate(items(template.get("replicatedJobs"), "runtime replicatedJobs")):
        rj = copy.deepcopy(mapping(rj, f"runtime replicatedJobs[{index}]"))
        count = _count(rj, ml_policy, trainer)
        job_spec = rj.setdefault("template", {}).setdefault("spec", {})
        job_spec["parallelism"] = job_spec["completions"] = count
        is_trainer = _ancestor(rj) == "trainer"
        if _ancestor(rj) in ONE_REPLICA_STEPS:
            rj["replicas"] = 1
        if (is_trainer or launcher_as_node and rj.get("name") == "node") and trainer.get("resourcesPerNode"):
            pod_spec = mapping(mapping(job_spec.get("template"), "template").get("spec"), "template.spec")
            for container in items(pod_spec.get("containers"), "containers"):
                if isinstance(container, dict) and container.get("name") == "node":
                    container["resources"] = copy.deepcopy(trainer["resourcesPerNode"])
        out.append(rj)
    return out


def build(job: JobObject, context: JobContext) -> list[JobWorkload]:
    replicated = child_replicated_jobs(job, runtime_spec(job, context))
    return one_workload(job, replicated_job_podsets(replicated, "runtime replicatedJobs"))


ADAPTERS = [Adapter(TRAINER_GROUP, ("TrainJob",), build)]
