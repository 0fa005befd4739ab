"""Guarantees and bursts a candidate gives the teams: guarantees that every group of pools can
hold (so a candidate compiles, and its misses are waits, not a placement error), and a burst
that covers each team's peak demand."""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import pytest
from kp_testing import run_cli
from kp_testing.policies import write_policy

from compiler.capacity.demand import TeamPools, offered_load
from compiler.capacity.search import _burst, fit_to_pools
from compiler.capacity.space import TeamBase
from compiler.simulate.trace import Trace

# -- fit_to_pools: Hall's condition over every set of teams --------------------------------------------


def _short_sets(guaranteed: dict[str, int], teams: list[TeamBase], room: dict[str, int]) -> list[tuple[str, ...]]:
    """Every set of teams whose guarantees exceed the room of all the pools they accept between them
    (a brute force over sets of teams, not of pools)."""
    names = [t.team for t in teams if guaranteed[t.team] > 0]
    accepts = {t.team: {p for p in t.pools if p in room} for t in teams}
    short = []
    for size in range(1, len(names) + 1):
        for group in itertools.combinations(names, size):
            pools = set().union(*(accepts[name] for name in group))
            if sum(guaranteed[name] for name in group) > sum(room[p] for p in pools):
                short.append(group)
    return short


def _random_world(rng: random.Random) -> tuple[dict[str, int], list[TeamBase], dict[str, int]]:
    pools = [f"p{i}" for i in range(rng.randint(1, 4))]
    room = {p: rng.choice([0, 4, 8, 12, 16, 32]) for p in pools}
    teams = []
    for index in range(rng.randint(1, 6)):
        accepted = tuple(p for p in pools if rng.random() < 0.5) + (("mig-pool",) if rng.random() < 0.2 else ())
        teams.append(TeamBase(f"t{index}", rng.choice([0, 2, 8, 16, 30]), (), accepted))
    return {t.team: t.guaranteed for t in teams}, teams, room


def test_fitted_guarantees_hold_in_every_group_of_pools() -> None:
    changed = 0
    for seed in range(400):
        guaranteed, teams, room = _random_world(random.Random(seed))
        before = dict(guaranteed)
        was_short = bool(_short_sets(before, teams, room))
        fit_to_pools(guaranteed, teams, room)
        assert not _short_sets(guaranteed, teams, room), (seed, before, guaranteed)
        assert all(0 <= guaranteed[t] <= before[t] for t in before), seed
        if not was_short:
            assert guaranteed == before, f"seed {seed}: a placeable set of guarantees must not change"
        changed += guaranteed != before
    assert changed > 50, "the random worlds must need fitting often enough to test it"


def test_only_the_short_group_is_cut() -> None:
    # Two spot-only teams want 30 on a spot pool of 16; the on-demand team has room of its own.
    teams = [TeamBase("a", 20, (), ("spot",)), TeamBase("b", 10, (), ("spot",)),
             TeamBase("c", 24, (), ("ondemand", "spot"))]
    guaranteed = {t.team: t.guaranteed for t in teams}
    fit_to_pools(guaranteed, teams, {"ondemand": 32, "spot": 16})
    assert guaranteed == {"a": 10, "b": 5, "c": 24}


# -- the peak a burst covers ---------------------------------------------------------------------------


def test_the_peak_ignores_the_rarest_hour_and_the_mean_ignores_none() -> None:
    # One GPU all along (100 hours), 4 more for 30 hours, 16 more for half an hour.
    jobs = [{"team": "a", "name": "base", "at": 0, "duration": 360_000, "replicas": 1, "gpus": 1},
            {"team": "a", "name": "busy", "at": 3600, "duration": 108_000, "replicas": 2, "gpus": 2},
            {"team": "a", "name": "spike", "at": 7200, "duration": 1800, "replicas": 2, "gpus": 8},
            {"team": "b", "name": "other", "at": 0, "duration": 60, "replicas": 1, "gpus": 1}]
    demand = offered_load(Trace(jobs=jobs), [TeamPools("a", None), TeamPools("b", None)], [])
    assert demand["a"].peak == 5, "the spike holds 0.5% of the span: under the 99th percentile"
    assert demand["a"].gpus == math.ceil((360_000 + 4 * 108_000 + 16 * 1800) / 360_000)
    assert demand["b"].peak == 0 and demand["b"].gpus == 1


# -- the command: a team held by its burst, two teams short of their only pool ------------------------

CLUSTER = """\
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata:
  name: lab
spec:
  pools:
    - {name: ondemand, gpu: A100-80GB, nodes: 4, gpusPerNode: 4, capacity: on-demand, cost: 2.5}
    - {name: spot, gpu: A100-80GB, nodes: 2, gpusPerNode: 4, capacity: spot, cost: 1}
  cohorts:
    - name: all
  priorities:
    - {name: standard, value: 100, default: true}
  preemption:
    withinClusterQueue: LowerPriority
    reclaimWithinCohort: Any
"""

TEAM = """\
apiVersion: kueue-policy/v1alpha1
kind: Team
metadata:
  name: {name}
spec:
  cohort: all
  namespaces: [{name}]
  gpus: {{guaranteed: {guaranteed}, burst: {burst}}}  # the team's ceiling
  capacity: {capacity}
"""


def _policy(root: Path, teams: dict[str, tuple[int, int, str]]) -> Path:
    return write_policy(root, {"cluster.yaml": CLUSTER, **{
        f"teams/{name}.yaml": TEAM.format(name=name, guaranteed=guaranteed, burst=burst, capacity=capacity)
        for name, (guaranteed, burst, capacity) in teams.items()}})


def _trace(path: Path, teams: list[str], seed: int, jobs: int = 80, hours_between_waves: int = 4) -> Path:
    """Bursty demand: waves of ten 1-4 GPU jobs, quiet in between."""
    rng = random.Random(seed)
    rows = ["team,name,at,duration,replicas,gpus"]
    for index in range(jobs):
        wave = index // 10
        at = wave * hours_between_waves * 3600 + rng.randint(0, 600)
        rows.append(f"{rng.choice(teams)},j{index},{at},{rng.randint(1800, 5400)},1,{rng.choice([1, 2, 4])}")
    path.write_text("\n".join(rows) + "\n")
    return path


def _level_at_or_below(path: Path, team: str, quantile: float) -> int:
    """The team's whole GPUs in flight if every job started on arrival: the smallest level it stays at
    or below for `quantile` of the trace's span, sampled second by second."""
    rows = [line.split(",") for line in path.read_text().splitlines()[1:]]
    start = min(int(r[2]) for r in rows)
    end = max(int(r[2]) + int(r[3]) for r in rows)
    levels = [0] * (end - start)
    for r in rows:
        if r[0] == team:
            for second in range(int(r[2]) - start, int(r[2]) + int(r[3]) - start):
                levels[second] += int(r[4]) * int(r[5])
    levels.sort()
    return levels[max(0, math.ceil(quantile * len(levels) - 1e-9) - 1)]


def test_demand_burst_covers_the_peak_and_simulates_as_reported(tmp_path: Path) -> None:
    policy = _policy(tmp_path, {"team-a": (4, 1, "on-demand-first"), "team-b": (4, 1, "on-demand-first")})
    trace = _trace(tmp_path / "trace.csv", ["team-a", "team-b"], seed=5)
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=30m",
                   "--write", "--format", "json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["answer"]
    rows = {row["team"]: row for row in answer["teams"]}
    for team in ("team-a", "team-b"):
        peak = _level_at_or_below(trace, team, 0.99)
        assert rows[team]["burstBefore"] == 1
        assert rows[team]["burst"] == max(1, peak - rows[team]["guaranteed"]), rows[team]
        assert rows[team]["burst"] > 1, "the trace's waves must need more than the policy's burst"
        written = (policy / "teams" / f"{team}.yaml").read_text()
        assert f"burst: {rows[team]['burst']}}}" in written and "# the team's ceiling" in written, written
    # The written policy is what was simulated.
    simulated = run_cli("simulate", str(policy), "--trace", str(trace), "--format", "json")
    assert simulated.returncode == 0, simulated.stderr
    teams = {t["team"]: t for t in json.loads(simulated.stdout)["teams"]}
    for team, row in rows.items():
        assert row["wait"] == teams[team]["wait"]
        assert row["gpuHours"] == teams[team]["gpuHours"]


def test_keep_leaves_the_burst_alone(tmp_path: Path) -> None:
    policy = _policy(tmp_path, {"team-a": (4, 1, "on-demand-first"), "team-b": (4, 1, "on-demand-first")})
    trace = _trace(tmp_path / "trace.csv", ["team-a", "team-b"], seed=5)
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=12h",
                   "--guarantees", "keep", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert all(row["burst"] == 1 for row in json.loads(done.stdout)["answer"]["teams"])


@pytest.mark.parametrize("bound", ["spot=1..2", "spot=1..1"])
def test_guarantees_short_of_their_only_pool_are_fitted_not_refused(tmp_path: Path, bound: str) -> None:
    # Two spot-only teams whose demand exceeds every spot pool the bounds allow.
    policy = _policy(tmp_path, {"team-a": (2, 4, "spot-only"), "team-b": (2, 4, "spot-only"),
                                            "team-c": (4, 8, "on-demand-only")})
    trace = _trace(tmp_path / "trace.csv", ["team-a", "team-b"], seed=9, jobs=200, hours_between_waves=1)
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=24h",
                   "--nodes", bound, "--format", "json")
    data = json.loads(done.stdout)
    misses = [miss for point in data["candidates"] for miss in point["misses"]]
    assert not [miss for miss in misses if "does not compile" in miss], misses[:3]
    if data["answer"] is not None:
        spot = 4 * {p["pool"]: p["nodes"] for p in data["answer"]["pools"]}["spot"]
        rows = {row["team"]: row for row in data["answer"]["teams"]}
        assert rows["team-a"]["guaranteed"] + rows["team-b"]["guaranteed"] <= spot


def test_a_team_that_never_borrows_keeps_burst_zero_and_is_guaranteed_its_peak(tmp_path: Path) -> None:
    policy = _policy(tmp_path, {"team-a": (4, 0, "on-demand-first"), "team-b": (4, 1, "on-demand-first")})
    trace = _trace(tmp_path / "trace.csv", ["team-a", "team-b"], seed=5)
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=30m", "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = {row["team"]: row for row in json.loads(done.stdout)["answer"]["teams"]}
    assert rows["team-a"]["burst"] == 0
    assert rows["team-a"]["guaranteed"] == _level_at_or_below(trace, "team-a", 0.99)
    assert rows["team-b"]["burst"] > 1


def test_the_ceiling_holds_the_largest_job_however_rare() -> None:
    """A team's one 16-GPU job among 1-GPU jobs is under its 99th percentile, yet the ceiling
    (guarantee plus burst) must hold it, or it never starts."""
    jobs = [{"team": "a", "name": f"small-{i}", "at": i * 3600, "duration": 3600, "replicas": 1, "gpus": 1}
            for i in range(200)]
    jobs.append({"team": "a", "name": "large", "at": 7200, "duration": 600, "replicas": 2, "gpus": 8})
    demand = offered_load(Trace(jobs=jobs), [TeamPools("a", None)], [])["a"]
    assert demand.peak == 1 and demand.largest == 16 and demand.ceiling == 16
    team = TeamBase("a", 1, (), ("p",), burst=4, peak=demand.ceiling)
    assert demand.gpus + _burst(team, demand.gpus) >= 16


def test_a_rare_large_job_starts_in_the_answer(tmp_path: Path) -> None:
    """End to end: the policy's ceiling (2 GPUs) never starts team-a's one 8-GPU job; demand's
    ceiling holds it, so every job of the trace starts within the target."""
    policy = _policy(tmp_path, {"team-a": (1, 1, "on-demand-first"), "team-b": (1, 1, "on-demand-first")})
    rows = ["team,name,at,duration,replicas,gpus"]
    rows += [f"team-{'ab'[i % 2]},j{i},{i * 1800},1200,1,1" for i in range(100)]
    rows.append("team-a,large,40900,400,2,4")   # 0.2% of the span: under the 99th percentile
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join(rows) + "\n")
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "within-2h>=100%", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert any("team-a" in miss for miss in data["baseline"]["misses"]), "the policy's ceiling must hold the job back"
    team_a = {row["team"]: row for row in data["answer"]["teams"]}["team-a"]
    assert team_a["guaranteed"] + team_a["burst"] >= 8 and team_a["neverStarted"] == 0, team_a


@pytest.mark.parametrize("guaranteed, scaled", [(1, False), (8, True)])
def test_keep_says_whether_the_guarantees_were_scaled_down(tmp_path: Path, guaranteed: int, scaled: bool) -> None:
    policy = _policy(tmp_path, {"team-a": (guaranteed, 4, "on-demand-first"),
                                "team-b": (guaranteed, 4, "on-demand-first")})
    trace = _trace(tmp_path / "trace.csv", ["team-a", "team-b"], seed=5)
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=12h",
                   "--guarantees", "keep", "--format", "json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["answer"]
    shrunk = any(row["guaranteed"] < row["guaranteedBefore"] for row in answer["teams"])
    assert shrunk == scaled
    assert answer["guarantees"].startswith("the policy's guarantees")
    assert ("scaled down" in answer["guarantees"]) == scaled


def test_the_default_upper_bound_is_at_most_what_a_pool_may_declare() -> None:
    from compiler.capacity.space import PoolSpace, space_from
    from compiler.capacity.targets import MAX_NODES

    (pool,) = space_from([PoolSpace("p", 60_000, 60_000, 60_000, 8, False)], {})
    assert (pool.minimum, pool.maximum) == (1, MAX_NODES)
