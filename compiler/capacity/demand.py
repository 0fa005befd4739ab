"""The guarantees a trace's demand justifies: each team's mean offered load, rounded up, and the
burst that covers its peaks.

Offered load, not what a run served: the sum over a team's jobs of (replicas x GPUs or MIG
instances x run time) over the trace's span. It needs no simulation and does not depend on the
candidate that would have served it, so the same demand gives the same guarantees in every
candidate; the search then scales whole-GPU guarantees down with the pools (search.py).

A job asking for GPU memory or a MIG instance counts as one instance of the smallest profile
that holds it on the first MIG pool its team accepts in that cut (the rule `simulate` applies),
or as one whole GPU when the team has no MIG pool in that cut.

The peak is the level of whole GPUs the team's jobs would hold if each started on arrival, that
the team stays at or below for 99% of the trace's span (a time-weighted 99th percentile): the
ceiling (guarantee plus burst) that lets its busiest hours run without waiting on its own limit.
The maximum would let one outlier set every team's ceiling; the mean would make a team wait
whenever its demand is above average, however idle the cluster. The ceiling is never below the
team's largest job, though, however rare: a job larger than its team's ceiling never starts.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from compiler.simulate.trace import Trace

EPSILON = 1e-9
PEAK_QUANTILE = 0.99


@dataclass(frozen=True)
class TeamPools:
    """What a team accepts: GPU models in order (None: every pool)."""

    team: str
    models: tuple[str, ...] | None


@dataclass(frozen=True)
class TeamDemand:
    """What a team's jobs ask for over a trace."""

    gpus: int                  # whole GPUs kept busy on average, rounded up
    mig: dict[str, int]        # MIG profile -> instances kept busy on average, rounded up
    peak: int                  # whole GPUs held at or below for 99% of the span (see above)
    largest: int = 0           # whole GPUs of the team's largest job (replicas x GPUs)

    @property
    def ceiling(self) -> int:
        """The guarantee plus burst the team's demand needs: its peak, and room for its largest job."""
        return max(self.peak, self.largest)


def _peak(intervals: list[tuple[float, float, int]], start: float, span: float) -> int:
    """The time-weighted PEAK_QUANTILE of the level `intervals` (arrival, end, GPUs) add up to."""
    changes: dict[float, int] = defaultdict(int)
    for begin, end, gpus in intervals:
        changes[begin] += gpus
        changes[end] -= gpus
    time_at: dict[int, float] = defaultdict(float)
    level, last = 0, start
    for moment in sorted(changes):
        time_at[level] += moment - last
        level, last = level + changes[moment], moment
    time_at[level] += start + span - last      # idle from the team's last job to the trace's end
    covered = 0.0
    for level in sorted(time_at):
        covered += time_at[level]
        if covered >= PEAK_QUANTILE * span - EPSILON:
            return level
    return max(time_at, default=0)


def offered_load(trace: Trace, teams: list[TeamPools], mig_models: list[str]) -> dict[str, TeamDemand]:
    """team -> what its jobs keep busy on average, and its peak of whole GPUs.
    `mig_models`: the GPU models of the pools cut with MIG, in the cluster's pool order."""
    from compiler.core.quantity import parse_quantity
    from compiler.mig.catalogue import load_catalogue

    catalogue = load_catalogue()
    start = min((job.at for job in trace.jobs), default=0)
    end = max((job.at + job.duration for job in trace.jobs), default=1)
    span = max(end - start, 1)
    accepted = {t.team: [m for m in mig_models if t.models is None or m in t.models] for t in teams}
    whole: dict[str, float] = defaultdict(float)
    mig: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    intervals: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    largest: dict[str, int] = defaultdict(int)
    for job in trace.jobs:
        models = accepted.get(job.team, [])
        wants_mig = job.mig is not None or job.gpuMemory is not None
        if wants_mig and models:
            profile = job.mig
            if job.gpuMemory is not None:
                gib = float(parse_quantity(job.gpuMemory)) / 2**30
                found = next((p for p in (catalogue.smallest_profile_for_memory(m, gib) for m in models) if p), None)
                profile = found.name if found is not None else None
            if profile is not None:
                mig[job.team][profile] += job.replicas * job.duration
                continue
        gpus = 1 if wants_mig else (job.gpus or 0)
        whole[job.team] += job.replicas * gpus * job.duration
        if gpus:
            largest[job.team] = max(largest[job.team], job.replicas * gpus)
        if gpus and job.duration > 0:
            intervals[job.team].append((job.at, job.at + job.duration, job.replicas * gpus))
    result = {}
    for team in teams:
        result[team.team] = TeamDemand(
            math.ceil(whole.get(team.team, 0.0) / span - EPSILON),
            {p: math.ceil(v / span - EPSILON) for p, v in sorted(mig.get(team.team, {}).items()) if v > 0},
            _peak(intervals.get(team.team, []), start, span), largest.get(team.team, 0))
    return result
