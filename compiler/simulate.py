"""`kueue-policy simulate`: replay a job trace through a policy over time.

The compiled objects are fed to the admission engine at every moment something happens (a job
arrives, a job finishes): jobs already running hold their quota, waiting jobs are pending in
arrival order, and the engine runs until nothing changes. An admitted job runs for its
`duration`; a preempted one goes back to waiting and starts over (its work is lost, as it is
for a Kubernetes Job whose pods are evicted). The result says, per job, when it started and
finished and how long it waited, and per team how long its jobs waited.

Trace file (YAML):

    jobs:
      - {name: ft-1, team: alpha, at: 0, duration: 3600, replicas: 2, gpus: 8, priority: critical}
      - {name: eval-1, team: alpha, at: 60, duration: 600, replicas: 8, mig: 1g.10gb}

A job takes the fields of a declared workload (replicas, gpus | mig | gpuMemory, cpu, memory,
priority) plus `team`, `at` (seconds from the start) and `duration` (seconds). It is submitted
to the team's first namespace's LocalQueue `default`.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import click
from rich.console import Console
from rich.table import Table
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from compiler import codes
from compiler.admissibility import workload_object
from compiler.clikit import emit_json, format_option, handles_errors
from compiler.errors import Diagnostic, DiagnosticSink, InputError, PolicyError, SourcePosition
from compiler.evaluator import evaluate, load_manifests
from compiler.load import PolicySourceFile, load_file
from compiler.mig.catalogue import load_catalogue
from compiler.resolved_model import ResolvedCluster, ResolvedWorkload
from compiler.pipeline import PolicySource, compile_policy
from compiler.quantity import format_quantity, parse_quantity
from compiler.policy import DeclaredWorkload, DnsLabel
from compiler.resolve import _profile_for_memory
from compiler.validate import _describe, _existing_prefix

KUEUE_KINDS = {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


class TraceJob(DeclaredWorkload):
    team: DnsLabel
    at: Annotated[StrictInt, Field(ge=0, le=10**9)] = 0
    duration: Annotated[StrictInt, Field(ge=1, le=10**9)]


class Trace(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    jobs: list[TraceJob] = Field(min_length=1, max_length=100_000)


@dataclass
class JobRun:
    job: TraceJob
    key: str  # "namespace/name" of its Workload
    workload: ResolvedWorkload
    started: int | None = None
    finished: int | None = None
    flavor: str | None = None
    preemptions: int = 0
    assignment: dict = field(default_factory=dict)
    count: dict = field(default_factory=dict)
    reason: str = ""

    def to_dict(self) -> dict:
        wait = None if self.started is None else self.started - self.job.at
        return {"name": self.job.name, "team": self.job.team, "submitted": self.job.at, "started": self.started,
                "finished": self.finished, "waited": wait, "preemptions": self.preemptions,
                "flavor": self.flavor, "reason": None if self.started is not None else self.reason}


def read_trace(path: Path) -> Trace:
    try:
        content = path.read_bytes()
    except OSError as error:
        raise InputError([_diag(codes.UNREADABLE, f"cannot read trace: {error.strerror}", str(path))]) from None
    sink = DiagnosticSink()
    documents = load_file(PolicySourceFile(str(path), content), sink)
    sink.raise_if_errors()
    if len(documents) != 1:
        raise InputError([_diag(codes.DOC_NOT_MAPPING, "a trace file holds one document with a `jobs` list", str(path))])
    document = documents[0]
    try:
        return Trace.model_validate(document.data)
    except ValidationError as error:
        for item in error.errors(include_url=False):
            node_path = _existing_prefix(document.data, item["loc"])
            code, message, at_key = _describe(item, document.data, node_path)
            sink.error(code, message, document.position(node_path, key=at_key))
        raise InputError(sink.items) from None


def _diag(code: str, message: str, path: str) -> Diagnostic:
    return Diagnostic(code, message, SourcePosition(path))


def _timestamp(seconds: int) -> str:
    return (EPOCH + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


class Simulation:
    def __init__(self, cluster: ResolvedCluster, objects: list[dict], trace: Trace, trace_path: str):
        self.cluster = cluster
        self.base = [o for o in objects if o["kind"] in KUEUE_KINDS]
        self.base += [{"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}}
                      for team in cluster.teams for ns in team.namespaces]
        teams = {t.name: t for t in cluster.teams}
        self.runs: list[JobRun] = []
        sink = DiagnosticSink()
        catalogue = load_catalogue()
        names = set()
        for index, job in enumerate(trace.jobs):
            where = SourcePosition(trace_path)
            team = teams.get(job.team)
            if team is None:
                sink.error(codes.UNKNOWN_TEAM,
                           f"jobs[{index}]: unknown team '{job.team}'; teams of '{cluster.name}': "
                           + ", ".join(sorted(teams)), where)
                continue
            if (job.team, job.name) in names:
                sink.error(codes.DUPLICATE_NAME, f"jobs[{index}]: job '{job.name}' of team '{job.team}' appears twice",
                           where)
                continue
            names.add((job.team, job.name))
            profile = job.mig
            if job.gpuMemory is not None:
                profile = _profile_for_memory(job.gpuMemory, team.mig_pools, catalogue)
                if profile is None:
                    sink.error(codes.UNKNOWN_MIG_PROFILE,
                               f"jobs[{index}]: no MIG profile of team '{job.team}' holds {job.gpuMemory}", where)
                    continue
            priority = job.priority or team.priority
            if priority is not None and priority not in {p.name for p in cluster.priorities}:
                sink.error(codes.UNKNOWN_PRIORITY, f"jobs[{index}]: unknown priority '{priority}'", where)
                continue
            workload = ResolvedWorkload(job, index, priority, cluster.priority_value(priority), profile)
            name = f"{job.team}-{job.name}"[:253]
            self.runs.append(JobRun(job, f"{team.namespaces[0]}/{name}", workload))
        sink.raise_if_errors()

    def _objects(self, waiting: list[JobRun], running: list[JobRun]) -> list[dict]:
        objects = list(self.base)
        for run in waiting + running:
            namespace, name = run.key.split("/")
            team = next(t for t in self.cluster.teams if t.name == run.job.team)
            pool = team.mig_pools[0] if run.workload.mig and team.mig_pools else None
            obj = workload_object(self.cluster, run.workload, name=name, namespace=namespace, queue="default",
                                  pool=pool, created=_timestamp(run.job.at))
            if run in running:
                pod_set = obj["spec"]["podSets"][0]
                requests = pod_set["template"]["spec"]["containers"][0]["resources"]["requests"]
                count = run.count.get("main", pod_set["count"])
                usage = {r: format_quantity(parse_quantity(v) * count, binary=r == "memory") for r, v in requests.items()}
                obj["status"] = {
                    "admission": {"clusterQueue": team.name, "podSetAssignments": [
                        {"name": "main", "flavors": run.assignment.get("main", {}), "resourceUsage": usage,
                         "count": count}]},
                    "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                    "lastTransitionTime": _timestamp(run.started or 0)}]}
            objects.append(obj)
        return objects

    def run(self) -> list[JobRun]:
        arrivals = sorted(self.runs, key=lambda r: (r.job.at, r.job.team, r.job.name))
        waiting: list[JobRun] = []
        running: list[JobRun] = []
        now = 0
        next_arrival = 0
        while next_arrival < len(arrivals) or running or waiting:
            while next_arrival < len(arrivals) and arrivals[next_arrival].job.at <= now:
                waiting.append(arrivals[next_arrival])
                next_arrival += 1
            for run in [r for r in running if r.finished is not None and r.finished <= now]:
                running.remove(run)
            if waiting:
                result = evaluate(load_manifests(self._objects(waiting, running)))
                for run in list(running):
                    outcome = result.workload(run.key)
                    if outcome.status == "preempted":
                        running.remove(run)
                        run.preemptions += 1
                        run.started = run.finished = None
                        waiting.append(run)
                for run in list(waiting):
                    outcome = result.workload(run.key)
                    if outcome.status == "admitted":
                        waiting.remove(run)
                        running.append(run)
                        run.started, run.finished = now, now + run.job.duration
                        run.assignment, run.count = outcome.assignment, outcome.count
                        run.flavor = ", ".join(sorted({f for per in outcome.assignment.values() for f in per.values()}))
                    else:
                        run.reason = outcome.reason
            upcoming = [r.finished for r in running if r.finished is not None]
            if next_arrival < len(arrivals):
                upcoming.append(arrivals[next_arrival].job.at)
            if not upcoming:
                break  # only jobs that can never start are left
            now = min(upcoming)
        return self.runs


def summarize(runs: list[JobRun]) -> dict:
    teams: dict[str, dict] = {}
    for run in runs:
        entry = teams.setdefault(run.job.team, {"team": run.job.team, "jobs": 0, "neverStarted": 0,
                                               "meanWait": 0.0, "maxWait": 0, "preemptions": 0, "gpuSeconds": 0})
        entry["jobs"] += 1
        entry["preemptions"] += run.preemptions
        if run.started is None:
            entry["neverStarted"] += 1
            continue
        wait = run.started - run.job.at
        entry["maxWait"] = max(entry["maxWait"], wait)
        entry["meanWait"] += wait
        entry["gpuSeconds"] += (run.job.gpus or 0) * run.job.replicas * run.job.duration
    for entry in teams.values():
        started = entry["jobs"] - entry["neverStarted"]
        entry["meanWait"] = round(entry["meanWait"] / started, 1) if started else None
    return {"jobs": [r.to_dict() for r in runs], "teams": [teams[t] for t in sorted(teams)]}


@click.command()
@click.argument("policy_dir", default="policies", type=click.Path(path_type=Path))
@click.option("--trace", "trace_path", required=True, type=click.Path(path_type=Path),
              help="YAML file with a `jobs` list (see `kueue-policy simulate --help`).")
@click.option("--cluster", default=None, help="The cluster to simulate (default: the only one).")
@format_option("text", "json")
@handles_errors
def simulate(policy_dir: Path, trace_path: Path, cluster: str | None, output_format: str) -> None:
    """Replay a job trace through the policy over time: when each job starts, how long it waits."""
    trace = read_trace(trace_path)
    result = compile_policy(PolicySource.from_directory(policy_dir), cluster=cluster)
    if len(result.clusters) != 1:
        raise PolicyError([_diag(codes.UNKNOWN_CLUSTER, "the policy has several clusters: choose one with --cluster",
                                 str(policy_dir))])
    artifacts = next(iter(result.clusters.values()))
    runs = Simulation(artifacts.cluster, [o.obj for o in artifacts.objects], trace, str(trace_path)).run()
    summary = summarize(runs)
    if output_format == "json":
        emit_json(summary)
        return
    console = Console(width=140, highlight=False)
    jobs = Table(title=f"{artifacts.name}: {len(runs)} jobs", title_justify="left")
    for column in ("team", "job", "submitted", "started", "finished", "waited", "preempted", "flavor / reason"):
        jobs.add_column(column, overflow="fold")
    for job in summary["jobs"]:
        jobs.add_row(job["team"], job["name"], str(job["submitted"]),
                     "-" if job["started"] is None else str(job["started"]),
                     "-" if job["finished"] is None else str(job["finished"]),
                     "-" if job["waited"] is None else f"{job['waited']} s", str(job["preemptions"]),
                     job["flavor"] or job["reason"] or "")
    console.print(jobs)
    teams = Table(title="per team", title_justify="left")
    for column in ("team", "jobs", "never started", "mean wait", "max wait", "preemptions", "GPU-hours"):
        teams.add_column(column)
    for entry in summary["teams"]:
        teams.add_row(entry["team"], str(entry["jobs"]), str(entry["neverStarted"]),
                      "-" if entry["meanWait"] is None else f"{entry['meanWait']} s", f"{entry['maxWait']} s",
                      str(entry["preemptions"]), f"{entry['gpuSeconds'] / 3600:.1f}")
    console.print(teams)
