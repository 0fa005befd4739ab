"""One candidate through the whole of `simulate`: compile it, replay the trace, check the targets.

Every figure `capacity` reports comes from here, from a simulation of that exact candidate with
`simulate`'s own code (compiler/simulate/runner.py `simulate_compiled`): nothing is
interpolated or extrapolated between candidates. A candidate that does not compile (a guarantee
that no longer fits, a MIG plan larger than the pool) is an answer too: it fails, with the
compiler's first message as the reason.

The `Problem` holds what every evaluation shares (the policy files, the trace read once, the
targets); it pickles, so a worker process or a Dask worker evaluates candidates on its own.
"""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass, field

from compiler.capacity.candidate import Candidate, apply
from compiler.capacity.certain_misses import CertainMisses
from compiler.capacity.in_flight import Reach, Reporting
from compiler.capacity.targets import Miss, Target
from compiler.core.errors import KueuePolicyError, PolicyError
from compiler.simulate.trace import Trace, TraceNotes

INFINITE = math.inf


@dataclass
class Problem:
    files: dict[str, bytes]       # the policy folder, relative path -> bytes
    label: str                    # the folder's name (display paths, as `compile DIR` shows them)
    cluster: str | None
    trace: Trace
    notes: TraceNotes
    trace_label: str
    targets: list[Target]
    costs: dict[str, float]       # pool -> price of a GPU hour (1 when the policy gives none)
    gpus_per_node: dict[str, int]
    full_runs: bool = False       # every candidate to the end of the trace (`--full-runs`)
    # The declared workloads the policy as it is would never admit (team, workload): `compile`
    # refuses any other, so a candidate that makes one more inadmissible is refused too.
    never_before: frozenset[tuple[str, str]] = frozenset()


@dataclass
class Evaluation:
    """What one candidate did on the trace (all figures from its simulation)."""

    candidate: Candidate
    cost: float                               # per hour: sum of GPUs x price
    gpus: dict[str, int]                      # pool -> GPUs
    meets: bool
    misses: list[str] = field(default_factory=list)
    error: str | None = None                  # the candidate does not compile
    teams: list[dict] = field(default_factory=list)     # simulate's per-team rows
    pools: list[dict] = field(default_factory=list)     # simulate's per-pool rows
    run: dict = field(default_factory=dict)             # simulate's run row
    measured: dict[str, float | None] = field(default_factory=dict)  # target text -> worst value seen
    mig_layouts: dict[str, list[dict]] = field(default_factory=dict)
    quotas: dict[str, dict] = field(default_factory=dict)  # team -> {guaranteed, burst, lend, mig}
    # Its simulation stopped at this second of the trace, a miss being certain (then `misses`
    # are those certain misses and there are no figures), or None: simulated to the end.
    stopped_at: int | None = None

    @property
    def worst_wait(self) -> float | None:
        """The highest p95 wait of any team (the frontier's second axis); None if a job never started."""
        values = [t["wait"]["p95"] for t in self.teams]
        if not values or any(t["neverStarted"] for t in self.teams):
            return None
        return max((v for v in values if v is not None), default=0)


def cost_of(problem: Problem, candidate: Candidate) -> tuple[float, dict[str, int]]:
    gpus = {pool: nodes * problem.gpus_per_node[pool] for pool, nodes in candidate.nodes}
    return round(sum(g * problem.costs[pool] for pool, g in gpus.items()), 6), gpus


def nearest_rank(values: list[float], percentile: float) -> float | None:
    """simulate's nearest-rank percentile (metrics.percentile), with never-started jobs as endless waits."""
    if not values:
        return None
    from compiler.simulate.metrics import rank_of

    ordered = sorted(values)
    return ordered[rank_of(int(round(percentile * 10)), len(ordered)) - 1]


def check_targets(targets: list[Target], summary: dict) -> tuple[list[str], dict[str, float | None]]:
    """The targets a run misses, as sentences, and the worst value each target met."""
    from compiler.simulate.compare import human_duration

    waits: dict[str, list[float]] = {t["team"]: [] for t in summary["teams"]}
    for job in summary["jobs"]:
        waits.setdefault(job["team"], []).append(INFINITE if job["waited"] is None else job["waited"])
    preempted = {t["team"]: t["preemptionsSuffered"] for t in summary["teams"]}
    misses, measured = [], {}
    for target in targets:
        teams = [target.team] if target.team is not None else sorted(waits)
        worst = None
        for team in teams:
            values = waits.get(team, [])
            if target.kind == "wait":
                value = nearest_rank(values, target.percentile)
                if value is None:
                    continue
                worst = value if worst is None else max(worst, value)
                if value > target.seconds:
                    shown = "never started" if value == INFINITE else human_duration(value)
                    misses.append(f"{team} p{target.percentile:g} wait {shown} > {human_duration(target.seconds)}")
            elif target.kind == "within":
                if not values:
                    continue
                share = sum(1 for v in values if v <= target.seconds) / len(values)
                worst = share if worst is None else min(worst, share)
                if share < target.share:
                    misses.append(f"{team} started {share:.1%} within {human_duration(target.seconds)} "
                                  f"< {target.share_text}")
            else:
                value = preempted.get(team, 0)
                worst = value if worst is None else max(worst, value)
                if value > target.count:
                    misses.append(Miss(f"{team} suffered {value} preemptions > {target.count}", True))
        measured[target.text] = None if worst == INFINITE else worst
    return misses, measured


def whole_gpu_trace(trace: Trace, teams_with_mig: set[str]) -> Trace:
    """Jobs asking for a MIG instance or GPU memory take one whole GPU when their team has no MIG
    pool in the candidate (what they get on a cluster whose GPUs are not cut)."""
    jobs = [job if (job.mig is None and job.gpuMemory is None) or job.team in teams_with_mig
            else job.model_copy(update={"mig": None, "gpuMemory": None, "gpus": 1}) for job in trace.jobs]
    if all(a is b for a, b in zip(jobs, trace.jobs)):
        return trace
    return Trace.model_construct(jobs=jobs)


def evaluate(problem: Problem, candidate: Candidate, full: bool = False, reach: Reach | None = None) -> Evaluation:
    """The candidate simulated on the trace, stopped once a miss is certain (certain_misses.py)
    unless `full` or `problem.full_runs`; `reach` is told how far the simulation has got
    (in_flight.py), which changes nothing in it.

    A run leaves its engine's graph (quota tree, workload infos, cached answers) in reference
    cycles, which the collector, made rare during runs (runtime/garbage_collection.py), would
    reach only after many candidates: a search of hundreds held gigabytes. It is collected
    once the candidate's figures are out of it."""
    evaluation = _simulated(problem, candidate, full, reach)
    gc.collect()
    return evaluation


def _simulated(problem: Problem, candidate: Candidate, full: bool, reach: Reach | None) -> Evaluation:
    from compiler.simulate.runner import compiled_cluster, simulate_compiled
    from compiler.stages.admissibility import NEVER
    from compiler.stages.pipeline import PolicySource

    cost, gpus = cost_of(problem, candidate)
    files = apply(problem.files, candidate, problem.cluster)
    try:
        artifacts = compiled_cluster(PolicySource.from_files(files, problem.label), problem.cluster)
    except PolicyError as error:
        first = error.diagnostics[0] if error.diagnostics else None
        reason = first.message if first is not None else str(error)
        return Evaluation(candidate, cost, gpus, False, [f"does not compile: {reason}"], error=reason)
    newly_never = [v for v in artifacts.verdicts
                   if v.verdict == NEVER and (v.team, v.workload) not in problem.never_before]
    if newly_never:
        reason = (f"workload '{newly_never[0].workload}' of team '{newly_never[0].team}' would never be "
                  f"admitted: {newly_never[0].reason}")
        return Evaluation(candidate, cost, gpus, False, [f"does not compile: {reason}"], error=reason)
    with_mig = {team.name for team in artifacts.cluster.teams if team.mig_pools}
    trace = whole_gpu_trace(problem.trace, with_mig)
    certain = None if full or problem.full_runs else CertainMisses(problem.targets)
    watch = certain if reach is None else Reporting(certain, reach)
    try:
        report = simulate_compiled(artifacts, trace, problem.notes, problem.trace_label, watch)
    except KueuePolicyError as error:
        return Evaluation(candidate, cost, gpus, False, [f"cannot be simulated: {error}"], error=str(error))
    if report.run.stopped is not None:
        return Evaluation(candidate, cost, gpus, False, certain.misses, stopped_at=report.run.stopped)
    summary = report.summary
    misses, measured = check_targets(problem.targets, summary)
    # (figures that rest on pods no node of their pool can hold are not an answer: node_fit.py)
    misses += [Miss(stranded.miss(), True) for stranded in report.run.stranded]
    layouts = {name: [layout.to_dict() for layout in plan.layouts]
               for name, plan in sorted(artifacts.placement.mig_plans.items())}
    quotas = {team.name: {"guaranteed": team.spec.gpus.guaranteed, "burst": team.spec.gpus.burst,
                          "lend": team.spec.gpus.lend, "mig": dict(sorted(team.spec.mig.items()))}
              for team in sorted(artifacts.cluster.teams, key=lambda t: t.name)}
    return Evaluation(candidate, cost, gpus, not misses, misses, None, summary["teams"], summary["pools"],
                      summary["run"], measured, layouts, quotas)
