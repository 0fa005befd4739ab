"""What a simulation means for each team and pool, computed once from its usage timeline.

Definitions (all integrals over the simulated time, in accelerator-hours):

* used: the team's accelerators in use, including work later lost to a preemption.
* borrowed: usage above the team's own nominal quota on that flavor.
* lent: the team's idle nominal quota that other teams were borrowing. Borrowers draw on every
  idle nominal quota of the cluster and on the cohorts' shared quota at once, and Kueue does
  not say whose; each idle lender is credited in proportion to its idle quota
  (`borrowed by all x own idle / (all idle + shared)`).
* share: the team's used GPU-hours over the cluster's; `fairShareWeight` is the team's weight
  over the sum of weights, the share fair sharing aims at when every team is busy.
* pool utilization: used over the quota Kueue sees on that flavor (the sum of the nominal
  quotas of every ClusterQueue and Cohort) times the simulated time.

Whole GPUs (`nvidia.com/gpu`) and MIG instances (`nvidia.com/mig-<profile>`) are counted each in
their own unit; cpu and memory are not reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.evaluator.models import ClusterState
from compiler.core.resources import GPU_RESOURCE, MIG_PREFIX
from compiler.simulate.driver import JobRun, SimulationRun

HOUR = 3600.0


def is_accelerator(resource: str) -> bool:
    # core.resources.is_gpu, written out: this runs for every usage change of a run
    return resource == GPU_RESOURCE or resource.startswith(MIG_PREFIX)


def rank_of(per_mille: int, count: int) -> int:
    """The 1-based nearest rank of the `per_mille`/1000 percentile among `count` values (in
    thousandths, so a percentile such as 99.9 is exact)."""
    return min(max(1, -(-per_mille * count // 1000)), count)


def percentile(values: list[int], fraction: float) -> int | None:
    """Nearest-rank percentile (the value below which `fraction` of the values fall)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[rank_of(int(round(fraction * 1000)), len(ordered)) - 1]


@dataclass
class _TeamTally:
    usage: int = 0
    since: int = 0
    lent_mark: float = 0.0
    used: float = 0.0
    borrowed: float = 0.0
    lent: float = 0.0


@dataclass
class _FlavorSweep:
    """Usage of one (flavor, resource) over time, with lazily settled per-team integrals."""

    nominal: dict[str, int]
    shared: int
    start: int
    teams: dict[str, _TeamTally] = field(default_factory=dict)
    now: int = 0
    borrowed_total: int = 0
    idle_total: int = 0
    lending_rate: float = 0.0   # integral of borrowed_total / (idle_total + shared)
    used_total: float = 0.0
    in_use: int = 0

    def __post_init__(self) -> None:
        self.now = self.start
        for team, quota in self.nominal.items():
            self.teams[team] = _TeamTally(since=self.start)
            self.idle_total += quota

    def _advance(self, time: int) -> None:
        span = time - self.now
        if span > 0:
            pool = self.idle_total + self.shared
            if pool > 0:
                self.lending_rate += self.borrowed_total * span / pool
            self.used_total += self.in_use * span
            self.now = time

    def _settle(self, team: str, tally: _TeamTally) -> None:
        span = self.now - tally.since
        own = self.nominal.get(team, 0)
        tally.used += tally.usage * span
        tally.borrowed += max(0, tally.usage - own) * span
        tally.lent += max(0, own - tally.usage) * (self.lending_rate - tally.lent_mark)
        tally.since, tally.lent_mark = self.now, self.lending_rate

    def change(self, time: int, team: str, amount: int) -> None:
        self._advance(time)
        tally = self.teams.setdefault(team, _TeamTally(since=self.now, lent_mark=self.lending_rate))
        self._settle(team, tally)
        own = self.nominal.get(team, 0)
        self.borrowed_total -= max(0, tally.usage - own)
        self.idle_total -= max(0, own - tally.usage)
        tally.usage += amount
        self.in_use += amount
        self.borrowed_total += max(0, tally.usage - own)
        self.idle_total += max(0, own - tally.usage)

    def close(self, time: int) -> None:
        self._advance(time)
        for team, tally in self.teams.items():
            self._settle(team, tally)


def quotas(state: ClusterState) -> tuple[dict[tuple[str, str], dict[str, int]], dict[tuple[str, str], int]]:
    """Nominal accelerator quota per (flavor, resource): per ClusterQueue, and shared by cohorts."""
    per_queue: dict[tuple[str, str], dict[str, int]] = {}
    shared: dict[tuple[str, str], int] = {}
    for name, queue in state.cluster_queues.items():
        for group in queue.resource_groups:
            for fr, quota in group.quotas.items():
                if is_accelerator(fr[1]) and quota.nominal:
                    per_queue.setdefault(fr, {})[name] = quota.nominal
    for cohort in state.cohorts.values():
        for group in cohort.resource_groups:
            for fr, quota in group.quotas.items():
                if is_accelerator(fr[1]) and quota.nominal:
                    shared[fr] = shared.get(fr, 0) + quota.nominal
    return per_queue, shared


def summarize(result: SimulationRun, state: ClusterState, weights: dict[str, float]) -> dict:
    """The JSON answer of `simulate`: jobs, teams, pools and the whole run."""
    start = min((r.job.at for r in result.runs), default=0)
    end = max(result.end, start)
    per_queue, shared = quotas(state)
    sweeps: dict[tuple[str, str], _FlavorSweep] = {}
    for change in result.timeline:
        fr = (change.flavor, change.resource)
        if not is_accelerator(change.resource):
            continue
        sweep = sweeps.get(fr)
        if sweep is None:
            sweep = sweeps[fr] = _FlavorSweep(per_queue.get(fr, {}), shared.get(fr, 0), start)
        sweep.change(change.time, change.team, change.amount)
    for fr in set(per_queue) | set(shared):
        sweeps.setdefault(fr, _FlavorSweep(per_queue.get(fr, {}), shared.get(fr, 0), start))
    for sweep in sweeps.values():
        sweep.close(end)
    teams = _teams(result.runs, sweeps, weights)
    pools = _pools(sweeps, per_queue, shared, end - start)
    gpu_pools = [p for p in pools if p["resource"] == GPU_RESOURCE]
    return {
        "jobs": [_job(r) for r in result.runs],
        "teams": teams,
        "pools": pools,
        "run": {"jobs": len(result.runs), "start": start, "end": end, "makespan": end - start,
                "gpuHours": round(sum(p["usedHours"] for p in gpu_pools), 3),
                "idleGpuHours": round(sum(p["idleHours"] for p in gpu_pools), 3),
                "neverStarted": sum(1 for r in result.runs if r.started is None),
                "preemptions": sum(r.preemptions for r in result.runs)},
        **({"topology": result.topology} if result.topology else {}),
    }


def _job(run: JobRun) -> dict:
    return {"name": run.job.name, "team": run.job.team, "submitted": run.job.at, "started": run.started,
            "finished": run.finished, "waited": run.waited, "preemptions": run.preemptions,
            "flavor": run.flavor, "reason": None if run.started is not None else run.reason}


def _teams(runs: list[JobRun], sweeps: dict[tuple[str, str], _FlavorSweep], weights: dict[str, float]) -> list[dict]:
    total_weight = sum(weights.values()) or 1.0
    total_gpu = sum(t.used for (f, r), s in sweeps.items() if r == GPU_RESOURCE for t in s.teams.values()) or 0.0
    by_team: dict[str, list[JobRun]] = {}
    for run in runs:
        by_team.setdefault(run.job.team, []).append(run)
    rows = []
    for team in sorted(set(weights) | set(by_team)):
        team_runs = by_team.get(team, [])
        waits = [r.waited for r in team_runs if r.waited is not None]
        tallies = {fr: s.teams[team] for fr, s in sweeps.items() if team in s.teams}
        used = sum(t.used for (f, r), t in tallies.items() if r == GPU_RESOURCE) / HOUR
        mig = {}
        for (flavor, resource), tally in sorted(tallies.items()):
            if resource.startswith(MIG_PREFIX) and tally.used:
                key = resource.removeprefix(MIG_PREFIX)
                mig[key] = round(mig.get(key, 0.0) + tally.used / HOUR, 3)
        rows.append({
            "team": team, "jobs": len(team_runs), "neverStarted": sum(1 for r in team_runs if r.started is None),
            "wait": {"p50": percentile(waits, 0.5), "p95": percentile(waits, 0.95), "max": max(waits, default=None),
                     "mean": round(sum(waits) / len(waits), 1) if waits else None},
            "gpuHours": round(used, 3),
            "borrowedGpuHours": round(sum(t.borrowed for (f, r), t in tallies.items() if r == GPU_RESOURCE) / HOUR, 3),
            "lentGpuHours": round(sum(t.lent for (f, r), t in tallies.items() if r == GPU_RESOURCE) / HOUR, 3),
            "migInstanceHours": mig,
            "preemptionsSuffered": sum(r.preemptions for r in team_runs),
            "preemptionsCaused": sum(r.preempted_others for r in team_runs),
            "share": round(used * HOUR / total_gpu, 4) if total_gpu else 0.0,
            "fairShareWeight": round(weights.get(team, 0.0) / total_weight, 4),
        })
    return rows


def _pools(sweeps: dict[tuple[str, str], _FlavorSweep], per_queue: dict, shared: dict, span: int) -> list[dict]:
    rows = []
    for (flavor, resource), sweep in sorted(sweeps.items()):
        capacity = sum(per_queue.get((flavor, resource), {}).values()) + shared.get((flavor, resource), 0)
        available = capacity * span
        rows.append({"pool": flavor, "resource": resource, "capacity": capacity,
                     "usedHours": round(sweep.used_total / HOUR, 3),
                     "idleHours": round(max(0.0, available - sweep.used_total) / HOUR, 3),
                     "utilization": round(sweep.used_total / available, 4) if available else None})
    return rows
