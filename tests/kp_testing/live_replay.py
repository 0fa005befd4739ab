"""A job trace replayed on a live Kueue, event by event, for comparison with `simulate`.

Time is compressed to events: the replay keeps a trace clock, and at each moment something
happens (a job arrives, a running job's run time is over) it makes that happen on the cluster
(creates the Job; writes the Job's status Complete, as the job controller would once its pods
succeeded), then waits until Kueue has settled before it reads what Kueue did: which jobs hold
quota now (started at this moment), which lost it (preempted: their run starts over when they
are admitted again, as a Job whose pods were evicted). Jobs arriving at one moment are created
a second apart, in trace order: Kueue orders them by creation time, which has a one-second
resolution.
"""

from __future__ import annotations

import datetime
import json
import time
from dataclasses import dataclass, field
from fractions import Fraction

from kp_testing.live_verdicts import LiveQuota, admitted, job_manifest
from kp_testing.sandbox import LiveCluster

SETTLED_SECONDS = 2.0
GPU = "nvidia.com/gpu"


@dataclass
class ReplayJob:
    name: str
    team: str
    at: int
    duration: int
    replicas: int
    request: dict[str, Fraction]
    priority: str | None = None
    started: int | None = None
    finished: int | None = None
    preemptions: int = 0
    flavor: str | None = None
    namespace: str = ""
    job_name: str = ""
    _running_since: int | None = field(default=None, repr=False)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _complete(cluster: LiveCluster, job: ReplayJob) -> None:
    now = _now()
    status = {"status": {
        "startTime": now, "completionTime": now, "succeeded": job.replicas, "active": 0,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now,
             "lastProbeTime": now, "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods"},
            {"type": "Complete", "status": "True", "lastTransitionTime": now, "lastProbeTime": now,
             "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods"}]}}
    cluster.kubectl("patch", "job", job.job_name, "-n", job.namespace, "--subresource=status",
                    "--type=merge", "-p", json.dumps(status))


def _holding(cluster: LiveCluster) -> dict[str, dict]:
    """Job name -> its Workload, for every Workload holding quota now and not finished."""
    held = {}
    for workload in cluster.workloads():
        finished = any(c["type"] == "Finished" and c["status"] == "True"
                       for c in (workload.get("status") or {}).get("conditions") or [])
        if admitted(workload) and not finished:
            held[workload["metadata"]["ownerReferences"][0]["name"]] = workload
    return held


def _settle(cluster: LiveCluster) -> dict[str, dict]:
    """The holding set once it has not changed for SETTLED_SECONDS."""
    last, since = None, time.monotonic()
    deadline = since + 60.0
    while time.monotonic() < deadline:
        held = _holding(cluster)
        names = sorted(held)
        if names != last:
            last, since = names, time.monotonic()
        elif time.monotonic() - since >= SETTLED_SECONDS:
            return held
        time.sleep(0.2)
    raise AssertionError("Kueue did not settle within 60 s")


def replay(cluster: LiveCluster, quota: LiveQuota, jobs: list[ReplayJob]) -> list[ReplayJob]:
    by_name = {}
    for job in jobs:
        job.job_name = job.name
        job.namespace = quota.local_queue[job.team][0]
        by_name[job.job_name] = job
    pending_arrivals = sorted(jobs, key=lambda j: j.at)
    clock = 0
    while True:
        running = [j for j in jobs if j._running_since is not None]
        ends = [j._running_since + j.duration for j in running]
        arrivals = [j.at for j in pending_arrivals]
        if not ends and not arrivals:
            break
        clock = min(ends + arrivals)
        for job in running:
            if job._running_since + job.duration == clock:
                _complete(cluster, job)
                job.finished, job._running_since = clock, None
        arriving = [j for j in pending_arrivals if j.at == clock]
        for index, job in enumerate(arriving):
            if index:
                time.sleep(1.1)
            manifest = job_manifest(quota, job.team, job.job_name, job.replicas, job.request, use_claims=False)
            if job.priority:
                manifest["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = job.priority
            cluster.create([manifest])
        pending_arrivals = [j for j in pending_arrivals if j.at != clock]
        held = _settle(cluster)
        for job in jobs:
            holds = job.job_name in held
            if holds and job._running_since is None and job.finished is None:
                job._running_since = clock
                job.started = clock   # simulate reports the run that finished: the last start
                flavors = {f for a in held[job.job_name]["status"]["admission"]["podSetAssignments"]
                           for r, f in a["flavors"].items() if r == GPU}
                job.flavor = min(flavors) if flavors else None
            elif not holds and job._running_since is not None:
                job._running_since = None   # preempted: its work is lost
                job.preemptions += 1
    return jobs
