"""ray.io RayJob (Kueue's pkg/controller/jobs/rayjob): the pod sets of its rayClusterSpec (see
`raycluster.py`), plus the job submitter as KubeRay runs it:

* submissionMode K8sJobMode (the default): a pod set `submitter` (count 1) from
  submitterPodTemplate, else KubeRay's default submitter (requests 500m CPU / 200Mi);
* SidecarMode: the default submitter container is added to the head pod;
* HTTPMode and InteractiveMode: nothing more.

A RayJob with clusterSelector and no rayClusterSpec runs on an existing cluster and is not
managed by Kueue; Kueue's webhook refuses clusterSelector together with rayClusterSpec, neither
of them, and shutdownAfterJobFinishes false.
"""

from __future__ import annotations

import copy

from compiler.evaluator.jobs.base import (
    Adapter, JobContext, JobObject, JobWorkload, PodSetSpec, Rejected, mapping, one_workload,
)
from compiler.evaluator.jobs.raycluster import cluster_podsets, ray_name_extra

_SUBMITTER_RESOURCES = {"requests": {"cpu": "500m", "memory": "200Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}


def _submitter_container() -> dict:
    return {"name": "ray-job-submitter", "resources": copy.deepcopy(_SUBMITTER_RESOURCES)}


def _check(spec: dict) -> bool:
    """True when Kueue manages the RayJob; raises Rejected where its webhook refuses it."""
    has_selector = bool(spec.get("clusterSelector"))
    has_cluster = spec.get("rayClusterSpec") is not None
    if has_selector and has_cluster:
        raise Rejected("spec.clusterSelector: a kueue managed job should not use an existing cluster")
    if has_selector:
        return False
    if not has_cluster:
        raise Rejected("spec.rayClusterSpec: rayClusterSpec is required for Kueue-managed jobs that don't "
                       "use clusterSelector")
    if spec.get("shutdownAfterJobFinishes") is not True:
        raise Rejected("spec.shutdownAfterJobFinishes: a kueue managed job should delete the cluster after "
                       "finishing")
    return True


def build(job: JobObject, context: JobContext) -> list[JobWorkload]:
    spec = job.spec
    if not _check(spec):
        return []
    cluster = mapping(spec.get("rayClusterSpec"), "spec.rayClusterSpec")
    podsets = cluster_podsets(job, cluster, "spec.rayClusterSpec")
    mode = spec.get("submissionMode") or "K8sJobMode"
    if mode == "K8sJobMode":
        template = spec.get("submitterPodTemplate")
        if template is None:
            template = {"spec": {"containers": [_submitter_container()], "restartPolicy": "Never"}}
        podsets.append(PodSetSpec("submitter", 1, mapping(template, "spec.submitterPodTemplate")))
    elif mode == "SidecarMode":
        head = podsets[0].template
        head["spec"]["containers"].append(_submitter_container())
    return one_workload(job, podsets, extra=ray_name_extra(job))


ADAPTERS = [Adapter("ray.io", ("RayJob",), build)]
