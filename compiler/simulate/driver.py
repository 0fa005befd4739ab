"""The event loop: a trace replayed through the admission engine, one engine for the whole run.

The engine is built once from the compiled Kueue objects and carries its state from event to
event: the quota tree and its usage, the admitted workloads and the preemption indexes. An
arrival submits one Workload, a completion releases one Workload's quota, and then the engine
runs scheduling cycles until nothing changes. The engine has a clock, so workloads admitted at
one moment are ordered by that time (then UID) as Kueue orders preemption candidates.

At every moment each waiting workload gets a fresh look (`Engine.rescan`): Kueue keeps some
state only in memory (which pending workloads wait in the inadmissible list for a cluster event,
where a flavor scan stopped), and an export of the cluster cannot carry it. Rescanning makes the
simulator's decisions at every moment exactly those of `evaluate` on an export of that moment
(tests/compiler/test_simulate_incremental.py checks it on random traces), so any moment of a
simulation can be checked, or explained, with `evaluate --explain`. A queue whose fresh look
would repeat its last one exactly (the same failed heads, reading quota no commit has moved) is
not walked again (`Engine.run_moment`): most moments change a few queues of a large cluster.

An admitted job runs for its `duration`; a preempted one loses its work and waits again (a
Kubernetes Job whose pods are evicted starts over). Everything the metrics need is recorded as
a timeline of usage changes (`UsageChange`), so the metrics are computed once, after the run.
"""

from __future__ import annotations

import datetime
import heapq
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Protocol

from compiler.core import codes
from compiler.stages.admissibility import workload_object
from compiler.core.errors import Diagnostic, DiagnosticSink
from compiler.evaluator import load_manifests
from compiler.evaluator.models import Workload, copy_with
from compiler.evaluator.engine import Engine
from compiler.runtime.garbage_collection import few_collections
from compiler.mig.catalogue import load_catalogue
from compiler.stages.resolved_model import ResolvedCluster, ResolvedWorkload
from compiler.stages.resolve import profile_for_memory
from compiler.simulate.engine_topology import add_nodes_and_topologies, podset_request
from compiler.simulate.topology_gate import TopologyGate
from compiler.simulate.trace import Trace, TraceJob

KUEUE_KINDS = {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
QUEUE = "default"
# A moment whose cycles bring the same jobs back to holding quota this many times is churning
# (see Engine.run): the simulation records it and moves on.
CHURN_REPEATS = 3


@dataclass
class JobRun:
    """One trace job and what happened to it."""

    job: TraceJob
    key: str                      # "namespace/name" of its Workload
    cluster_queue: str
    started: int | None = None    # the start of its last (or only) run
    finished: int | None = None
    flavor: str | None = None
    preemptions: int = 0          # times it was preempted (work lost)
    preempted_others: int = 0     # preemptions it caused
    reason: str = ""
    usage: dict = field(default_factory=dict)   # (flavor, resource) -> amount while running
    generation: int = 0           # bumped at every preemption: stale completions are ignored

    @property
    def waited(self) -> int | None:
        """Seconds from arrival to the start of the run that completed (work lost counts as waiting)."""
        if self.started is None:
            return None
        return self.started - self.job.at


class UsageChange(NamedTuple):
    """At `time`, `team` (its ClusterQueue) began (+) or stopped (-) using `amount` of a resource.
    (A named tuple: a long run records several per job, and a frozen dataclass costs five
    `object.__setattr__` calls to build.)"""

    time: int
    team: str
    flavor: str
    resource: str
    amount: int


_new_tuple = tuple.__new__


class MomentWatch(Protocol):
    """Shown the jobs before the run starts, then told the end of every moment and the runs it
    preempted; answers whether to stop there."""

    def start(self, runs: list[JobRun]) -> None: ...

    def after(self, now: int, preempted: list[JobRun]) -> bool: ...


@dataclass
class SimulationRun:
    runs: list[JobRun]
    timeline: list[UsageChange]
    end: int
    warnings: list[Diagnostic] = field(default_factory=list)
    # With topology: per pool, jobs held by placement and free GPUs per level (metrics), and
    # free GPUs per top-level domain over time (the HTML page).
    topology: list[dict] = field(default_factory=list)
    domains: list[dict] = field(default_factory=list)
    # The moment a watch stopped the run at (`Simulation.run`'s `watch`), or None: run to the end.
    stopped: int | None = None
    # Jobs that ran on a pool whose nodes cannot hold their pods (node_fit.py), when run to the end.
    stranded: list = field(default_factory=list)


def _timestamp(seconds: int) -> str:
    return (EPOCH + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


class Simulation:
    """A trace and the compiled objects of one cluster, ready to run."""

    def __init__(self, cluster: ResolvedCluster, objects: list[dict], trace: Trace, trace_path: str,
                 configuration: dict | None = None):
        self.cluster = cluster
        self.teams = {t.name: t for t in cluster.teams}
        self.base = [o for o in objects if o["kind"] in KUEUE_KINDS]
        # Fair sharing and its strategies change whom Kueue preempts: the engine runs with the
        # Configuration the compile ships to the cluster's Kueue.
        self.base += [configuration] if configuration is not None else []
        self.base += [{"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}}
                      for team in cluster.teams for ns in team.namespaces]
        jobs = resolve_jobs(cluster, trace, trace_path)
        self.runs = jobs.runs
        self.workloads = self._workloads(jobs.workloads)
        self.warnings = pods_larger_than_nodes(self.runs, self.teams)

    # -- set-up ----------------------------------------------------------------------------

    def _workloads(self, resolved: list[ResolvedWorkload]) -> dict[str, Workload]:
        """The engine's Workload model of every job. Jobs of one shape share one parsed object
        (the loader runs once per shape, not once per job): only name and arrival differ."""
        shapes: dict[tuple, dict] = {}
        shape_of: list[tuple] = []
        for run, workload in zip(self.runs, resolved):
            job = run.job
            key = (job.team, job.replicas, job.gpus, workload.mig, job.cpu, job.memory, workload.priority,
                   repr(job.topology))
            shape_of.append(key)
            if key not in shapes:
                team = self.teams[job.team]
                pool = team.mig_pools[0] if workload.mig and team.mig_pools else None
                shapes[key] = workload_object(self.cluster, workload, name=f"shape-{len(shapes)}",
                                              namespace=team.namespaces[0], queue=QUEUE, pool=pool,
                                              created=_timestamp(0))
        state = load_manifests(self.base + list(shapes.values()))
        parsed = {(w.namespace, w.name): w for w in state.workloads}
        models = {key: parsed[(doc["metadata"]["namespace"], doc["metadata"]["name"])] for key, doc in shapes.items()}
        for run, key in zip(self.runs, shape_of):
            if run.job.topology is not None:
                for podset in models[key].podsets:
                    podset.topology = podset_request(run.job.topology)
        workloads = {}
        for run, key in zip(self.runs, shape_of):
            workloads[run.key] = copy_with(models[key], name=run.key.split("/", 1)[1],
                                           created=EPOCH + datetime.timedelta(seconds=run.job.at))
        return workloads

    def engine(self, reuse: bool = True) -> Engine:
        """A fresh engine holding the cluster's queues and no workload (`reuse=False`: one that
        recomputes every nomination, the reference for tests)."""
        state = load_manifests(self.base)
        add_nodes_and_topologies(state, self.cluster)
        return Engine(state, reuse)

    # -- the run -----------------------------------------------------------------------------
    def run(self, observer: Callable[[str, int, "_EventLoop"], None] | None = None,
            reuse: bool = True, watch: MomentWatch | None = None) -> SimulationRun:
        """Run the trace. `observer(phase, now, loop)` is called at every moment with phase
        "before" (arrivals and completions applied, not yet scheduled) and "after"; `watch`
        may stop the run at the end of a moment (then the run's `stopped` is that moment)."""
        loop = _EventLoop(self, self.engine(reuse), observer, watch)
        if watch is not None:
            watch.start(self.runs)
        with few_collections():
            return loop.run()


class _EventLoop:
    """Arrivals and completions in time order; the engine runs to quiescence after each moment."""

    def __init__(self, simulation: Simulation, engine: Engine,
                 observer: Callable[[str, int, "_EventLoop"], None] | None = None,
                 watch: MomentWatch | None = None):
        self.simulation = simulation
        self.engine = engine
        self.observer = observer
        self.watch = watch
        self.preempted: list[JobRun] = []  # this moment's preempted runs (kept for `watch` only)
        self.stopped: int | None = None
        engine.journal = []
        self.by_key = {run.key: run for run in simulation.runs}
        self.arrivals = sorted(simulation.runs, key=lambda r: (r.job.at, r.job.team, r.job.name))
        self.completions: list[tuple[int, str, int]] = []  # (time, key, generation)
        self.timeline: list[UsageChange] = []
        self.warnings: list[Diagnostic] = list(simulation.warnings)
        self.circles: list[int] = []  # the moments whose preemptions went round in a circle
        self.running = 0
        cluster = simulation.cluster
        self.gate = TopologyGate(cluster) if any(p.topology is not None for p in cluster.pools) else None

    def run(self) -> SimulationRun:
        next_arrival, now, total = 0, 0, len(self.arrivals)
        while True:
            self._drop_stale_completions()
            if next_arrival >= total and not self.completions:
                break
            upcoming = [self.completions[0][0]] if self.completions else []
            if next_arrival < total:
                upcoming.append(self.arrivals[next_arrival].job.at)
            now = min(upcoming)
            self._complete_until(now)
            while next_arrival < total and self.arrivals[next_arrival].job.at <= now:
                run = self.arrivals[next_arrival]
                self.engine.submit(self.simulation.workloads[run.key])
                next_arrival += 1
            if self.observer is not None:
                self.observer("before", now, self)
            self._schedule(now)
            if self.observer is not None:
                self.observer("after", now, self)
            if self.watch is not None:
                if self.watch.after(now, self.preempted):
                    self.stopped = now
                    break
                self.preempted.clear()
        for run in self.simulation.runs:
            if run.started is None:
                info = self.engine.infos.get(run.key)
                run.reason = info.reason if info is not None else run.reason  # (held by topology: its why)
        if self.circles:
            self.warnings.append(_circles_warning(self.circles))
        if self.gate is None:
            return SimulationRun(self.simulation.runs, self.timeline, now, self.warnings, stopped=self.stopped)
        return SimulationRun(self.simulation.runs, self.timeline, now, self.warnings,
                             self.gate.summary(now), self.gate.series(now), self.stopped)

    def _drop_stale_completions(self) -> None:
        # The completion of a run that was preempted never happens: it is no event, and must
        # not make a moment of its own (a moment rescans the queues, which would restart a
        # circle of preemptions that the last moment stopped).
        completions = self.completions
        while completions and completions[0][2] != self.by_key[completions[0][1]].generation:
            heapq.heappop(completions)

    def _complete_until(self, now: int) -> None:
        while self.completions and self.completions[0][0] <= now:
            time, key, generation = heapq.heappop(self.completions)
            run = self.by_key[key]
            if generation != run.generation:
                continue  # preempted since: that completion never happens
            self.engine.finish(key)
            self._record(time, run, -1)
            run.finished = time
            self._release(key)

    def _release(self, key: str) -> None:
        """A job's nodes are free again (the observer of placements records it)."""
        if self.gate is not None:
            self.gate.release(key)

    def _schedule(self, now: int) -> None:
        engine = self.engine
        engine.clock = (EPOCH + datetime.timedelta(seconds=now)).timestamp()
        self._schedule_once(now)
        if self.gate is not None:
            for key, info in engine.infos.items():
                if not info.holds_quota:
                    self.gate.pending(key, info.reason, now)
            self.gate.sample(now)

    def _schedule_once(self, now: int) -> bool:
        engine = self.engine
        engine.run_moment(repeats=CHURN_REPEATS)
        if not engine.converged:
            self.circles.append(now)
            engine.converged = True
        again = False
        for event, info, preemptor in engine.journal:
            run = self.by_key[info.key]
            if event == "admitted":
                run.usage = dict(info.usage)
                run.started, run.finished = now, None
                run.flavor = ", ".join(sorted({f for per in info.flavors.values() for f in per.values()}))
                self._record(now, run, +1)
                if self.gate is not None:
                    self.gate.admitted(run.key, info.placements, now)
                heapq.heappush(self.completions, (now + run.job.duration, run.key, run.generation))
            else:
                self._record(now, run, -1)
                run.preemptions += 1
                run.generation += 1
                run.started = None
                if preemptor in self.by_key:
                    self.by_key[preemptor].preempted_others += 1
                if self.watch is not None:
                    self.preempted.append(run)
                self._release(run.key)
        engine.journal.clear()
        return again

    def _record(self, time: int, run: JobRun, sign: int) -> None:
        for (flavor, resource), amount in sorted(run.usage.items()):
            if amount:
                # (made as the tuple it is: a named tuple's own constructor is interpreted code)
                self.timeline.append(_new_tuple(UsageChange, (time, run.cluster_queue, flavor, resource,
                                                              sign * amount)))


class ResolvedJobs(NamedTuple):
    """A trace's jobs read against a cluster: the run of each and the workload it asks for."""

    runs: list[JobRun]
    workloads: list[ResolvedWorkload]


def resolve_jobs(cluster: ResolvedCluster, trace: Trace, trace_path: str) -> ResolvedJobs:
    """Every job of the trace matched to its team, priority and MIG profile; raises the trace's
    mistakes (an unknown team, a name twice, a profile or priority the cluster does not have)."""
    teams = {t.name: t for t in cluster.teams}
    sink = DiagnosticSink()
    catalogue = load_catalogue()
    priorities = {p.name: cluster.priority_value(p.name) for p in cluster.priorities}
    runs, resolved, names = [], [], set()
    offered: set[tuple[str, str]] = set()  # (team, MIG profile) found on a MIG pool the team accepts
    for index, job in enumerate(trace.jobs):
        # (A job's file position is looked up only for a diagnostic: on a long trace the
        # lookups would cost more than the checks.)
        team = teams.get(job.team)
        if team is None:
            known = (f"teams of '{cluster.name}': " + ", ".join(sorted(teams)) if teams
                     else f"cluster '{cluster.name}' has no team")
            sink.error(codes.UNKNOWN_TEAM, f"jobs[{index}]: unknown team '{job.team}'; {known}",
                       trace.where(index, trace_path))
            continue
        if (job.team, job.name) in names:
            sink.error(codes.DUPLICATE_NAME, f"jobs[{index}]: job '{job.name}' of team '{job.team}' "
                       "appears twice", trace.where(index, trace_path))
            continue
        names.add((job.team, job.name))
        profile = job.mig
        if profile is not None and (team.name, profile) not in offered:
            if not any(p.gpu_model is not None and p.gpu_model.profile_named(profile) for p in team.mig_pools):
                models = sorted({p.spec.gpu for p in team.mig_pools})
                sink.error(codes.UNKNOWN_MIG_PROFILE, f"jobs[{index}]: MIG profile '{profile}' is on no MIG "
                           f"pool team '{job.team}' accepts" + (f" (models: {', '.join(models)})" if models else
                                                                "; the team accepts no MIG pool"),
                           trace.where(index, trace_path))
                continue
            offered.add((team.name, profile))
        if job.gpuMemory is not None:
            profile = profile_for_memory(job.gpuMemory, team.mig_pools, catalogue)
            if profile is None:
                sink.error(codes.UNKNOWN_MIG_PROFILE, f"jobs[{index}]: no MIG profile of team "
                           f"'{job.team}' holds {job.gpuMemory}", trace.where(index, trace_path))
                continue
        priority = job.priority or team.priority
        if priority is not None and priority not in priorities:
            sink.error(codes.UNKNOWN_PRIORITY, f"jobs[{index}]: unknown priority '{priority}'",
                       trace.where(index, trace_path))
            continue
        resolved.append(ResolvedWorkload(job, index, priority, priorities.get(priority, 0), profile))
        name = f"{job.team}-{job.name}"[:253]
        runs.append(JobRun(job, f"{team.namespaces[0]}/{name}", team.name))
    sink.raise_if_errors()
    return ResolvedJobs(runs, resolved)


def pods_larger_than_nodes(runs: list[JobRun], teams: dict) -> list[Diagnostic]:
    """One warning per team whose jobs ask pods of more whole GPUs than any node of its pools has:
    Kueue admits such a job on quota alone, but no node can run its pods. The simulation counts
    quota (and places pods only on a pool with a `topology`), so it shows such a job as running."""
    found: dict[str, tuple[int, int, int]] = {}   # team -> (jobs, largest pod, largest node)
    for run in runs:
        job = run.job
        if not job.gpus or job.mig is not None or job.gpuMemory is not None:
            continue
        largest = max((pool.spec.gpusPerNode for pool in teams[job.team].gpu_pools), default=None)
        if largest is not None and job.gpus > largest:
            count, pod, _ = found.get(job.team, (0, 0, 0))
            found[job.team] = (count + 1, max(pod, job.gpus), largest)
    return [Diagnostic(codes.TRACE_BAD, f"{count} job(s) of team '{team}' ask pods of up to {pod} GPUs, more than "
                       f"any node of its pools has ({node}): Kueue admits them on quota, but no node can run their "
                       "pods; the simulation counts them as running (only a pool with a topology places pods)")
            for team, (count, pod, node) in sorted(found.items())]


def _circles_warning(moments: list[int]) -> Diagnostic:
    """One warning for every moment whose preemptions went round in a circle (a long trace can
    have thousands): how many, and the first few."""
    shown = ", ".join(f"t={moment}s" for moment in moments[:5])
    more = f" and {len(moments) - 5} more" if len(moments) > 5 else ""
    return Diagnostic(codes.TRACE_BAD, f"at {shown}{more} ({len(moments)} moment{'s' if len(moments) > 1 else ''}) Kueue's "
                      "preemptions go round in a circle (the same jobs held quota again after more "
                      "preemptions); at each, the simulation moves on with the state at that point")


def export_moment(loop: _EventLoop, now: int) -> list[dict]:
    """The cluster at this moment as `kubectl get -o yaml` would show it: the Kueue objects, the
    running jobs' Workloads with their admission, and the waiting ones. `evaluate` on this list
    answers what the simulation decides next."""
    documents = list(loop.simulation.base)
    api = loop.simulation.cluster.kueue_api_version
    for key, info in sorted(loop.engine.infos.items()):
        run = loop.by_key[key]
        workload = info.workload
        podsets = [{"name": ps.name, "count": ps.count, "template": {"spec": {"containers": [{
            "name": "main", "resources": {"requests": {r: _quantity(r, v) for r, v in sorted(ps.per_pod.items())}}}]}}}
            for ps in workload.podsets]
        doc = {"apiVersion": api, "kind": "Workload",
               "metadata": {"name": workload.name, "namespace": workload.namespace,
                            "creationTimestamp": _timestamp(run.job.at)},
               "spec": {"queueName": QUEUE, "priority": workload.priority, "podSets": podsets}}
        if info.holds_quota:
            doc["status"] = {
                "admission": {"clusterQueue": info.cluster_queue, "podSetAssignments": [
                    {"name": ps.name, "flavors": dict(info.flavors.get(ps.name, {})), "count": info.counts[ps.name],
                     "resourceUsage": {r: _quantity(r, v * info.counts[ps.name]) for r, v in sorted(ps.per_pod.items())
                                       if r in info.flavors.get(ps.name, {})}}
                    for ps in workload.podsets]},
                "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                "message": info.reason, "lastTransitionTime": _timestamp(now if run.started is None else run.started)}]}
        documents.append(doc)
    return documents


def _quantity(resource: str, amount: int) -> str:
    # The engine keeps cpu in millicores and everything else in base units.
    return f"{amount}m" if resource == "cpu" else str(amount)
