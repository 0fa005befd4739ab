"""Plain Pods and pod groups (Kueue's pkg/controller/jobs/pod).

A Pod with the queue label and no `kueue.x-k8s.io/pod-group-name` is one Workload with one pod
set `main` of 1 pod. Pods sharing a group name (per namespace) form one Workload named after the
group: pods with the same role form one pod set named by the role hash (the
`kueue.x-k8s.io/role-hash` annotation when present, as Kueue sets it; else a hash of the pod spec
computed here, not byte-identical to Kueue's own). A single-role group is admitted as the whole
group (`kueue.x-k8s.io/pod-group-total-count`) once complete.
"""

from __future__ import annotations

import hashlib

from compiler.evaluator.jobs.base import Adapter, JobContext, JobObject, JobWorkload, PodSetSpec, one_workload

POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_COUNT = "kueue.x-k8s.io/pod-group-total-count"
ROLE_HASH_ANNOTATION = "kueue.x-k8s.io/role-hash"


def build(job: JobObject, context: JobContext) -> list[JobWorkload]:
    """A Pod outside any group."""
    return one_workload(job, [PodSetSpec("main", 1, {"spec": job.spec})])


def _role(member: JobObject) -> str:
    role = member.annotations.get(ROLE_HASH_ANNOTATION)
    if not role:
        role = hashlib.sha256(repr(sorted(member.spec.items())).encode()).hexdigest()[:8]
    return str(role)


def group_workload(group: str, members: list[JobObject]) -> tuple[JobWorkload, list[str]]:
    """The Workload of a pod group (first member first), and the problems that make it invalid."""
    problems: list[str] = []
    roles: dict[str, list[JobObject]] = {}
    for member in members:
        roles.setdefault(_role(member), []).append(member)
    total_text = members[0].annotations.get(POD_GROUP_COUNT)
    try:
        total = int(total_text) if total_text is not None else len(members)
    except ValueError:
        problems.append(f"annotation {POD_GROUP_COUNT}: not an integer ({total_text!r})")
        total = len(members)
    podsets = []
    for role, role_members in sorted(roles.items()):
        count = max(total, len(role_members)) if len(roles) == 1 else len(role_members)
        podsets.append(PodSetSpec(role, count, {"spec": role_members[0].spec}))
    return JobWorkload(group, podsets), problems


ADAPTERS = [Adapter("", ("Pod",), build)]
