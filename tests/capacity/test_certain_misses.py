"""A candidate's simulation stops once a target is missed whatever happens next
(compiler/capacity/certain_misses.py): never one that would meet its targets, never a different
decision of the search, and the reported answer the same as with `--full-runs`."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

from conftest import lab_trace
from kp_testing import run_cli

from compiler.capacity import targets as targets_module
from compiler.capacity.candidate import Candidate, TeamQuota
from compiler.capacity.certain_misses import CertainMisses, _late_threshold
from compiler.capacity.problem import prepare
from compiler.capacity.evaluate import check_targets, evaluate
from compiler.capacity.targets import parse_target

TEXTS = ["p95-wait<=30m", "p50-wait<=10m", "p90-wait<=1h", "p99-wait<=2h", "p100-wait<=45m",
         "within-10m>=80%", "within-30m>=95%", "within-1h>=100%", "within-5m>=33.3%",
         "preemptions<=0", "preemptions<=2", "team-a:p95-wait<=20m", "team-b:within-15m>=90%"]


def _summary(waits: list[float | None]) -> dict:
    return {"teams": [{"team": "t", "preemptionsSuffered": 0}],
            "jobs": [{"team": "t", "waited": w} for w in waits]}


def test_the_late_jobs_that_make_a_miss_are_those_check_targets_counts() -> None:
    """For every team size and target, `check_targets` finds a miss exactly when at least the
    threshold of jobs wait longer than the target's duration (the others on time)."""
    rng = random.Random(5)
    texts = [f"p{p}-wait<=10m" for p in (1, 33.3, 50, 90, 95, 99, 99.9, 100)]
    texts += [f"within-10m>={s}%" for s in (1, 12.5, 33.3, 50, 66.7, 90, 95, 99.5, 100)]
    for text in texts:
        target = parse_target(text)
        for jobs in [1, 2, 3, 7, 19, 20, 21, 100, 101, 999] + [rng.randint(1, 400) for _ in range(10)]:
            threshold = _late_threshold(target, jobs)
            for late in range(jobs + 1):
                waits = [600] * (jobs - late) + [601] * (late - late // 2) + [None] * (late // 2)
                misses, _ = check_targets([target], _summary(waits))
                assert bool(misses) == (late >= threshold), (text, jobs, late, threshold)


def _random_candidate(rng: random.Random) -> Candidate:
    quotas = None
    if rng.random() < 0.7:   # guarantees make one team reclaim from the other: preemptions
        quotas = tuple(TeamQuota(team, rng.choice([0, 2, 4, 8]), (), rng.choice([None, 0, 4]))
                       for team in ("team-a", "team-b"))
    return Candidate((("ondemand", rng.randint(1, 4)), ("spot", rng.randint(1, 4))), (), quotas)


def test_a_stopped_candidate_is_one_the_whole_simulation_fails(lab: Path, tmp_path: Path) -> None:
    """On random candidates, traces and targets: the watched run meets its targets exactly when
    the whole run does, and every certain miss is a miss of the whole run (same team, same target)."""
    rng = random.Random(11)
    stopped = early = preemption_stops = 0
    for world in range(40):
        trace = lab_trace(tmp_path / f"trace-{world}.csv", seed=world, jobs=rng.choice([30, 60, 90]))
        texts = rng.sample(TEXTS, rng.choice([1, 2, 3]))
        requirements = targets_module.from_flags(tuple(texts), (), ())
        problem, _, _ = prepare(lab, trace, None, requirements, (), "keep", False)
        for _ in range(3):
            candidate = _random_candidate(rng)
            watched = evaluate(problem, candidate)
            problem.full_runs = True
            whole = evaluate(problem, candidate)
            problem.full_runs = False
            assert whole.stopped_at is None
            assert watched.meets == whole.meets, (texts, candidate, watched.misses, whole.misses)
            if watched.stopped_at is None:
                assert watched.misses == whole.misses and watched.teams == whole.teams
                continue
            stopped += 1
            early += watched.stopped_at < whole.run["end"]
            assert watched.misses and not watched.teams
            for miss in watched.misses:
                team = miss.split(" ", 1)[0]
                assert any(m.startswith(team + " ") for m in whole.misses), (miss, whole.misses)
                preemption_stops += "preemptions" in miss
    # The property means something only if runs were stopped, early, by both kinds of limit.
    assert stopped >= 20 and early >= 10 and preemption_stops >= 1, (stopped, early, preemption_stops)


def test_the_search_decides_the_same_with_full_runs(lab: Path, tmp_path: Path) -> None:
    """`capacity` with and without `--full-runs`: the same candidates, verdicts, answer and proof;
    without it, failing candidates of the descent stop early (shown as such on the page); the
    policy as it is, the largest candidate, the answer and its proof never."""
    trace = lab_trace(tmp_path / "trace.csv", seed=4, jobs=120)
    outputs = []
    for extra in ((), ("--full-runs",)):
        page = tmp_path / f"frontier{len(extra)}.html"
        done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p95-wait<=20m",
                       "--target", "within-10m>=70%", "--workers", "2", "--html", str(page), "--format", "json", *extra)
        assert done.returncode == 0, done.stderr
        outputs.append((json.loads(done.stdout), page.read_text()))
    (watched, page), (whole, _) = outputs
    # What the report prints runs to the end either way: the same figures, the same misses.
    for key in ("answer", "baseline", "proof", "cuts", "evaluated"):
        assert watched[key] == whole[key], key
    assert watched["proof"] and all("certain" not in m for p in watched["proof"] for m in p["misses"])
    verdicts = [(c["candidate"], c["meets"]) for c in watched["candidates"]]
    assert verdicts == [(c["candidate"], c["meets"]) for c in whole["candidates"]]
    stopped = [c for c in watched["candidates"] if c["stoppedAt"] is not None]
    assert stopped, "some candidate must be stopped for the comparison to mean anything"
    assert all(not c["meets"] and "certain" in c["misses"][0] for c in stopped)
    assert all(c["stoppedAt"] is None for c in whole["candidates"])
    island = page.split('<script type="application/json" id="data">', 1)[1].split("</script>", 1)[0]
    assert sum(1 for c in json.loads(island)["candidates"] if c["stoppedAt"] is not None) == len(stopped)


def _run(key: str, at: int, started: int | None) -> SimpleNamespace:
    return SimpleNamespace(key=key, job=SimpleNamespace(team="t", at=at), started=started)


def test_a_job_on_time_then_preempted_is_late() -> None:
    """A job started by its deadline and preempted after it will start again later: late. With
    one job already late, that second one decides a p50 over two jobs at the preemption."""
    on_time, waiting = _run("t/a", 0, 0), _run("t/b", 0, None)
    watch = CertainMisses([parse_target("p50-wait<=10m")])
    watch.start([on_time, waiting])
    assert not watch.after(601, [])            # b is late; a, running since 0, on time so far
    assert not watch.after(650, [])
    on_time.started = None
    assert watch.after(700, [on_time])         # a lost its run: it will start after 700, late too
    assert watch.misses[0].startswith("t p50 wait > 10.0 min: 2 of its 2 jobs")


def test_a_job_started_by_its_deadline_is_on_time() -> None:
    """The boundary: a job started exactly at `arrival + D` waits D, which meets `<= D`."""
    jobs = [_run("t/a", 0, 600), _run("t/b", 0, 600)]
    watch = CertainMisses([parse_target("p50-wait<=10m")])
    watch.start(jobs)
    assert not watch.after(601, []) and not watch.after(10_000, [])
    jobs[1].started = None
    assert watch.after(10_001, [jobs[1]]) is False   # one late of two: the p50 (rank 1) is still 600 s


def test_a_candidates_engine_is_collected_after_its_evaluation(lab: Path, tmp_path: Path) -> None:
    # Each run leaves its engine in reference cycles; with collections made rare during runs they
    # piled up over a search (gigabytes over hundreds of candidates).
    import gc

    from compiler.runtime.garbage_collection import few_collections

    trace = lab_trace(tmp_path / "trace.csv", jobs=60)
    problem, _, _ = prepare(lab, trace, None, targets_module.from_flags(("p95-wait<=1h",), (), ()), (), "keep", False)
    candidate = Candidate((("ondemand", 2), ("spot", 3)))
    engines = []
    with few_collections():   # (as the capacity command runs)
        for _ in range(4):
            evaluate(problem, candidate, full=True)
            engines.append(sum(1 for o in gc.get_objects() if type(o).__name__ == "Engine"))
    assert engines[-1] <= engines[0] <= 1, engines
