"""ray.io RayCluster (Kueue's pkg/controller/jobs/raycluster); its pod-set builder is shared with
RayJob (`rayjob.py`).

Pod sets: `head` (count 1) then one per worker group, named after the group (lower case), count =
replicas (default 1) x numOfHosts. Kueue counts `replicas`, never minReplicas/maxReplicas: an
autoscaling cluster is admitted at its current size. Kueue's webhook refuses in-tree autoscaling
unless the object asks for workload slicing (`kueue.x-k8s.io/elastic-job: "true"`), refuses a
worker group named `head`, and more than 18 pod sets. What KubeRay adds to the head pod is
charged as Kueue charges it: the autoscaler sidecar (autoscalerOptions.resources, else 500m CPU /
512Mi), and with GCS fault tolerance (annotation `ray.io/ft-enabled: "true"` or
spec.gcsFaultToleranceOptions) the Redis clean-up job's 200m CPU / 256Mi as a floor on the first
container's requests.
"""

from __future__ import annotations

import copy

from compiler.core.shapes import checked
from compiler.evaluator.jobs.base import (
    Adapter, JobContext, JobObject, JobWorkload, PodSetSpec, Rejected, Unusable, int_or, items, mapping,
    one_workload, times,
)
from compiler.evaluator.podspec import larger_quantity

MAX_POD_SETS = 18
FT_ANNOTATION = "ray.io/ft-enabled"
_AUTOSCALER = {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}}
_REDIS_CLEANUP = {"cpu": "200m", "memory": "256Mi"}


def check_cluster_spec(job: JobObject, cluster: dict, path: str) -> None:
    """The checks of Kueue's webhook on a RayCluster spec."""
    if cluster.get("enableInTreeAutoscaling") is True and not job.elastic:
        raise Rejected(f"{path}.enableInTreeAutoscaling: a kueue managed job should only use autoscaling "
                       "when workload slicing is enabled")
    groups = items(cluster.get("workerGroupSpecs"), f"{path}.workerGroupSpecs")
    if len(groups) + 1 > MAX_POD_SETS:
        raise Rejected(f"{path}.workerGroupSpecs: too many pod sets ({len(groups) + 1}, at most {MAX_POD_SETS})")
    for index, group in enumerate(groups):
        if isinstance(group, dict) and group.get("groupName") == "head":
            raise Rejected(f"{path}.workerGroupSpecs[{index}].groupName: \"head\" is reserved for the head group")


def head_template(job: JobObject, cluster: dict, path: str) -> dict:
    """The head pod template with what KubeRay injects into the head pod (see module doc)."""
    head = mapping(mapping(cluster.get("headGroupSpec"), f"{path}.headGroupSpec").get("template"),
                   f"{path}.headGroupSpec.template")
    head = copy.deepcopy(head)
    spec = checked(head.setdefault("spec", {}), dict, f"{path}.headGroupSpec.template.spec", Unusable)
    containers = items(spec.get("containers"), f"{path}.headGroupSpec.template.spec.containers")
    if (job.annotations.get(FT_ANNOTATION, "").lower() == "true"
            or cluster.get("gcsFaultToleranceOptions") is not None):
        if not containers or not isinstance(containers[0], dict):
            raise Unusable("cannot account for Redis cleanup resources: head pod template must include "
                           "the Ray container")
        _floor_requests(containers[0], _REDIS_CLEANUP)
    if cluster.get("enableInTreeAutoscaling") is True:
        options = mapping(cluster.get("autoscalerOptions"), f"{path}.autoscalerOptions")
        resources = options.get("resources")
        containers.append({"name": "autoscaler", "resources": copy.deepcopy(resources or _AUTOSCALER)})
    spec["containers"] = containers
    return head


def _floor_requests(container: dict, floor: dict[str, str]) -> None:
    """Kueue merges the clean-up requests into the container's, keeping the larger of each."""
    resources = checked(container.setdefault("resources", {}), dict, "head container resources", Unusable)
    requests = checked(resources.setdefault("requests", {}), dict, "head container resources.requests", Unusable)
    for resource, amount in floor.items():
        requests[resource] = larger_quantity(resource, requests[resource], amount) if resource in requests \
            else amount


def cluster_podsets(job: JobObject, cluster: dict, path: str) -> list[PodSetSpec]:
    """Pod sets of a RayClusterSpec: head, then one per worker group."""
    check_cluster_spec(job, cluster, path)
    podsets = [PodSetSpec("head", 1, head_template(job, cluster, path))]
    for index, group in enumerate(items(cluster.get("workerGroupSpecs"), f"{path}.workerGroupSpecs")):
        where = f"{path}.workerGroupSpecs[{index}]"
        group = mapping(group, where)
        name = group.get("groupName")
        if not isinstance(name, str) or not name:
            raise Unusable(f"{where}.groupName is missing")
        hosts = group.get("numOfHosts")
        count = int_or(group.get("replicas"), 1)
        if isinstance(hosts, int) and not isinstance(hosts, bool) and hosts > 1:
            count = times(count, hosts)
        podsets.append(PodSetSpec(name.lower(), count, mapping(group.get("template"), f"{where}.template")))
    return podsets


def ray_name_extra(job: JobObject) -> str | None:
    """An elastic Ray object's Workload name carries its generation (and the RayCluster's)."""
    if not job.elastic:
        return None
    extra = str(job.generation)
    cluster_generation = job.annotations.get("kueue.x-k8s.io/raycluster-generation")
    return extra + "_" + cluster_generation if cluster_generation else extra


def build(job: JobObject, context: JobContext) -> list[JobWorkload]:
    return one_workload(job, cluster_podsets(job, job.spec, "spec"), extra=ray_name_extra(job))


ADAPTERS = [Adapter("ray.io", ("RayCluster",), build)]
