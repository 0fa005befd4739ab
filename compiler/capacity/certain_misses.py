"""A candidate's simulation stopped at the first moment a target is missed whatever happens next.

The search needs only to know whether a candidate meets every target (and the figures of the
ones that do). A candidate too small for the trace is the costly kind to simulate: its backlog
grows, and a simulation's cost follows its backlog. Yet such a candidate usually misses a target
early in the trace, and from then on nothing it does can meet it. So `capacity` watches every
candidate's run (`simulate`'s event loop calls `after` at the end of each moment) and stops it
at the first moment a miss is certain; `--full-runs` simulates every candidate to the end.

Why a miss can be certain before the end (every fact below only grows with time):

* a job's wait is the start of the run that completed minus its arrival (work lost to a
  preemption counts as waiting), so a job that has not started by `arrival + D` waits longer
  than D, and a job whose last start is after `arrival + D` too (a later restart only adds);
* a team's pXX wait exceeds D once the jobs known to wait longer than D are more than its
  N - rank (`evaluate.nearest_rank`'s rank over the team's N jobs), and its share of jobs
  started within D is below the target once N minus those jobs is;
* the preemptions a team suffers only add up.

A job on time at its deadline and preempted later is counted late at that preemption (its next
start can only come later). The watch counts only what is already certain, so it may stop later
than it might, never earlier than it should: a stopped candidate is one the whole simulation
fails too, and the search takes the same decisions either way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from compiler.capacity.targets import Miss, Target
from compiler.simulate.metrics import rank_of

if TYPE_CHECKING:
    from compiler.simulate.driver import JobRun


@dataclass
class _Limit:
    """One target on one team: the count (of late jobs, or of preemptions) that makes it a miss."""

    target: Target
    team: str
    jobs: int
    threshold: int


@dataclass
class _Deadlines:
    """The jobs in arrival order, walked as the clock passes `arrival + seconds`: how many of each
    team's are late for this duration so far."""

    seconds: int
    runs: list[JobRun]                           # by arrival
    late: dict[str, int] = field(default_factory=dict)
    limits: dict[str, list[_Limit]] = field(default_factory=dict)   # team -> its limits on this duration
    passed: int = 0                              # runs[:passed] have been judged
    on_time: set[str] = field(default_factory=set)   # keys of judged runs started by their deadline

    def count_late(self, team: str, reached: list[_Limit]) -> None:
        count = self.late[team] = self.late.get(team, 0) + 1
        for limit in self.limits.get(team, ()):
            if count == limit.threshold:
                reached.append(limit)

    def preempted(self, run: JobRun, reached: list[_Limit]) -> None:
        """A run on time at its deadline, preempted since: it will start again later, late."""
        if run.key in self.on_time:
            self.on_time.discard(run.key)
            self.count_late(run.job.team, reached)

    def advance(self, now: int, reached: list[_Limit]) -> None:
        """Judge every job whose deadline is before `now`, adding the limits reached to `reached`."""
        runs, seconds, on_time = self.runs, self.seconds, self.on_time
        index, total = self.passed, len(runs)
        while index < total:
            run = runs[index]
            deadline = run.job.at + seconds
            if deadline > now:
                break   # (one due now and not started will start later than now: late)
            index += 1
            started = run.started
            if started is not None and started <= deadline:
                on_time.add(run.key)   # so far (`preempted` counts it late if it loses this run)
            else:
                self.count_late(run.job.team, reached)
        self.passed = index


def _late_threshold(target: Target, jobs: int) -> int:
    """The number of jobs waiting longer than the target's duration that makes it a miss for a
    team of `jobs` jobs (what `evaluate.check_targets` would then find, whatever the others do)."""
    if target.kind == "wait":
        rank = rank_of(int(round(target.percentile * 10)), jobs)   # (evaluate.nearest_rank's)
        return jobs - rank + 1          # then fewer than `rank` jobs wait at most D: the rank-th is late
    late = max(0, jobs - math.ceil(target.share * jobs))
    while late > 0 and (jobs - (late - 1)) / jobs < target.share:
        late -= 1                      # (the share is compared as check_targets compares it)
    while (jobs - late) / jobs >= target.share:
        late += 1
    return late


class CertainMisses:
    """The watch `capacity` gives each candidate's simulation (see the module's docstring)."""

    def __init__(self, targets: list[Target]) -> None:
        self.targets = targets
        self._deadlines: dict[int, _Deadlines] = {}
        self._preemption_limits: dict[str, list[_Limit]] = {}
        self._preempted: dict[str, int] = {}
        self.misses: list[str] = []   # the certain misses it stopped the run for

    def start(self, runs: list[JobRun]) -> None:
        """The limits of every target on every team with jobs in the run."""
        jobs: dict[str, int] = {}
        for run in runs:
            jobs[run.job.team] = jobs.get(run.job.team, 0) + 1
        by_arrival = sorted(runs, key=lambda r: r.job.at)
        for target in self.targets:
            for team in [target.team] if target.team is not None else sorted(jobs):
                count = jobs.get(team, 0)
                if not count:
                    continue   # (no job: no figure, as check_targets skips it)
                if target.kind == "preemptions":
                    self._preemption_limits.setdefault(team, []).append(_Limit(target, team, count, target.count + 1))
                    continue
                clock = self._deadlines.get(target.seconds)
                if clock is None:
                    clock = self._deadlines[target.seconds] = _Deadlines(target.seconds, by_arrival)
                clock.limits.setdefault(team, []).append(_Limit(target, team, count, _late_threshold(target, count)))

    def after(self, now: int, preempted: list[JobRun]) -> bool:
        """Called at the end of every moment with the runs it preempted: True stops the run."""
        reached: list[_Limit] = []
        for run in preempted:
            team = run.job.team
            count = self._preempted[team] = self._preempted.get(team, 0) + 1
            reached += [limit for limit in self._preemption_limits.get(team, ()) if count == limit.threshold]
            for clock in self._deadlines.values():
                clock.preempted(run, reached)
        for clock in self._deadlines.values():
            clock.advance(now, reached)
        if not reached:
            return False
        self.misses = [self._sentence(limit, now) for limit in reached]
        return True

    def _sentence(self, limit: _Limit, now: int) -> str:
        from compiler.simulate.compare import human_duration

        target, team = limit.target, limit.team
        when = f"certain {human_duration(now)} into the trace, where its simulation stopped"
        if target.kind == "preemptions":
            return Miss(f"{team} suffered more than {target.count} preemptions ({when})", True)
        late, limit_text = limit.threshold, human_duration(target.seconds)
        if target.kind == "wait":
            return (f"{team} p{target.percentile:g} wait > {limit_text}: {late} of its {limit.jobs} jobs wait longer "
                    f"({when})")
        return (f"{team} starts at most {(limit.jobs - late) / limit.jobs:.1%} within {limit_text} "
                f"< {target.share_text}: {late} of its {limit.jobs} jobs wait longer ({when})")
