"""Plain Pods and pod groups (Kueue's pkg/controller/jobs/pod).

A Pod with the queue label and no `kueue.x-k8s.io/pod-group-name` is one Workload with one pod
set `main` of 1 pod. Pods sharing a group name (per namespace) form one Workload named after the
group, built as Kueue's pod integration builds it:

* the group's size is the `kueue.x-k8s.io/pod-group-total-count` annotation (required, an integer
  of at least 1, the same on every member, as is the queue); otherwise no Workload;
* without fast admission, Kueue waits for the whole group: fewer runnable pods than the total
  count gives no Workload yet ("group has fewer runnable pods than expected"); then one pod set
  per role, named by the role hash and counting that role's pods, sorted by name;
* with `kueue.x-k8s.io/pod-group-fast-admission: "true"` the Workload is built from the first
  runnable pod: one pod set of the total count.

A role is the `kueue.x-k8s.io/role-hash` annotation when present, else Kueue's hash of the pod
spec's admission-relevant fields (`role_hash`).
"""

from __future__ import annotations

import hashlib
import re

from compiler.evaluator.jobs.base import Adapter, JobContext, JobObject, JobWorkload, PodSetSpec, Unusable, one_workload
from compiler.evaluator.spec_shape import go_json, spec_shape

POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_COUNT = "kueue.x-k8s.io/pod-group-total-count"
POD_GROUP_FAST = "kueue.x-k8s.io/pod-group-fast-admission"
ROLE_HASH_ANNOTATION = "kueue.x-k8s.io/role-hash"
_GO_INT = re.compile(r"[+-]?[0-9]+")  # what Go's strconv.Atoi accepts


def build(job: JobObject, context: JobContext) -> list[JobWorkload]:
    """A Pod outside any group."""
    return one_workload(job, [PodSetSpec("main", 1, {"spec": job.spec})])


def group_workload(group: str, members: list[JobObject]) -> JobWorkload:
    """The Workload Kueue's pod integration builds for a pod group, members in input order.

    Raises Unusable where Kueue builds none (the message is Kueue's reason)."""
    runnable = [m for m in members if _runnable(m)]
    total = _total_count(members[0])
    for member in members:
        if not _runnable(member):
            continue
        if member.labels.get("kueue.x-k8s.io/queue-name") != members[0].labels.get("kueue.x-k8s.io/queue-name"):
            raise Unusable(f"pods '{members[0].name}' and '{member.name}' have different queue names")
        if member.annotations.get(POD_GROUP_COUNT) != members[0].annotations.get(POD_GROUP_COUNT):
            raise Unusable(f"pods '{members[0].name}' and '{member.name}' have different '{POD_GROUP_COUNT}' values")
    if members[0].annotations.get(POD_GROUP_FAST) == "true":
        if not runnable:
            raise Unusable("failed to find a runnable pod in the group")
        return JobWorkload(group, [PodSetSpec(role_hash(runnable[0]), total, {"spec": runnable[0].spec})])
    if len(runnable) < total:
        raise Unusable(f"'{group}' group has fewer runnable pods than expected ({len(runnable)} of {total}); "
                       "Kueue creates its Workload once the whole group exists")
    roles: dict[str, list[JobObject]] = {}
    for member in runnable[:total]:  # Kueue deletes the pods beyond the total count
        roles.setdefault(role_hash(member), []).append(member)
    return JobWorkload(group, [PodSetSpec(role, len(pods), {"spec": pods[0].spec})
                               for role, pods in sorted(roles.items())])


def _runnable(member: JobObject) -> bool:
    """Kueue's isPodRunnableOrSucceeded (offline pods have no deletion timestamp)."""
    return member.phase != "Failed"


def _total_count(member: JobObject) -> int:
    text = member.annotations.get(POD_GROUP_COUNT)
    if text is None:
        raise Unusable(f"failed to extract '{POD_GROUP_COUNT}' annotation")
    if not _GO_INT.fullmatch(text):
        raise Unusable(f"annotation {POD_GROUP_COUNT}: not an integer ({text!r})")
    if int(text) < 1:
        raise Unusable(f"incorrect annotation value '{POD_GROUP_COUNT}={text}': group total count should be "
                       "greater than zero")
    return int(text)


# ---- role hash: Kueue's utilpod.GenerateRoleHash ---------------------------------------------
# sha256 of Go's JSON of {"spec": shape} (first 8 hex digits), shape = utilpod.SpecShape
# (compiler.evaluator.spec_shape).


def role_hash(member: JobObject) -> str:
    given = member.annotations.get(ROLE_HASH_ANNOTATION)
    if given is not None:
        return str(given)
    text = go_json({"spec": spec_shape(member.spec)})
    return hashlib.sha256(text.encode()).hexdigest()[:8]


ADAPTERS = [Adapter("", ("Pod",), build)]
