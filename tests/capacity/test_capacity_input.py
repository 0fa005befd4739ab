"""Bad targets, bounds and prices: the flag or file:line, exit 1 or 2, nothing written, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import lab_trace
from kp_testing import run_cli

from compiler.capacity.targets import BadInput, parse_bound, parse_target


def _no_traceback(done) -> None:
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout


@pytest.mark.parametrize(("text", "kind", "team", "seconds"), [
    ("p95-wait<=30m", "wait", None, 1800),
    ("team-a:p99-wait<=2h", "wait", "team-a", 7200),
    ("within-10m>=90%", "within", None, 600),
    ("team-b:preemptions<=3", "preemptions", "team-b", 0),
    ("p50-wait <= 90s", "wait", None, 90),
    ("p100-wait<=4h", "wait", None, 14400),
    ("p99.9-wait<=1d", "wait", None, 86400),
])
def test_target_forms(text: str, kind: str, team: str | None, seconds: int) -> None:
    target = parse_target(text)
    assert (target.kind, target.team, target.seconds) == (kind, team, seconds)


@pytest.mark.parametrize("text", ["p95-wait<30m", "p0-wait<=1h", "p101-wait<=1h", "p100.5-wait<=1h", "p50.04-wait<=1h",
                                  "p99.95-wait<=1h", "p95-wait<=soon",
                                  "within-1h>=120%", "fast"])
def test_bad_target_forms(text: str) -> None:
    with pytest.raises(BadInput):
        parse_target(text)


@pytest.mark.parametrize("text", ["a100=0..3", "a100=5..2", "a100", "a100=1..200000"])
def test_bad_bounds(text: str) -> None:
    with pytest.raises(BadInput):
        parse_bound(text)


def test_bad_target_flag_names_the_flag(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "t.csv")
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p95-wait<30m")
    assert done.returncode == 1
    assert "--target 'p95-wait<30m' is not a target" in done.stderr and "KP920" in done.stderr
    _no_traceback(done)


def test_bad_targets_file_names_file_and_line(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "t.csv")
    targets = tmp_path / "targets.yaml"
    targets.write_text("targets:\n  - p95-wait<=30m\n  - team-a:p99-wait<=forever\nbounds:\n  spot: 3..1\n")
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--targets", str(targets))
    assert done.returncode == 1
    assert f"{targets}:3:5: error[KP920]" in done.stderr
    assert f"{targets}:5:3: error[KP920]" in done.stderr
    _no_traceback(done)


def test_unknown_team_and_pool(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "t.csv")
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "team-z:p95-wait<=1h",
                   "--nodes", "h100=1..2")
    assert done.returncode == 1
    assert "no team 'team-z'" in done.stderr and "no such pool" in done.stderr and "KP921" in done.stderr
    _no_traceback(done)


def test_no_target_is_a_usage_error(lab: Path, tmp_path: Path) -> None:
    done = run_cli("capacity", str(lab), "--trace", str(lab_trace(tmp_path / "t.csv")))
    assert done.returncode == 2
    _no_traceback(done)


@pytest.mark.parametrize("budget", ["-1", "many", "2.5"])
def test_a_bad_proof_budget_is_a_usage_error_that_writes_nothing(lab: Path, tmp_path: Path, budget: str) -> None:
    before = (lab / "cluster.yaml").read_bytes()
    done = run_cli("capacity", str(lab), "--trace", str(lab_trace(tmp_path / "t.csv")), "--target", "p95-wait<=1h",
                   "--proof-budget", budget, "--write")
    assert done.returncode == 2
    assert "Invalid value for '--proof-budget'" in done.stderr and budget in done.stderr
    assert (lab / "cluster.yaml").read_bytes() == before
    _no_traceback(done)


def test_unreachable_targets_exit_1_and_write_nothing(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "t.csv")
    before = (lab / "cluster.yaml").read_bytes()
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p99-wait<=0s",
                   "--nodes", "ondemand=1..2", "--nodes", "spot=1..2", "--write")
    assert done.returncode == 1
    assert "KP922" in done.stderr and "largest (ondemand=2, spot=2" in done.stderr
    assert (lab / "cluster.yaml").read_bytes() == before
    _no_traceback(done)


def test_negative_cost_is_refused_with_its_line(lab: Path) -> None:
    cluster = lab / "cluster.yaml"
    cluster.write_text(cluster.read_text().replace("cost: 1\n", "cost: -1\n"))
    done = run_cli("validate", str(lab))
    assert done.returncode == 1
    assert "cluster.yaml:19:13" in done.stderr and "cost" in done.stderr
    _no_traceback(done)


@pytest.mark.parametrize("flags", [
    ("--nodes", "spot=1..2", "--fixed", "spot"),
    ("--nodes", "spot=4", "--nodes", "spot=1..2"),
    ("--mig", "spot=none", "--mig", "spot=planned"),
])
def test_one_pool_bounded_or_cut_twice_is_refused(lab: Path, tmp_path: Path, flags: tuple[str, ...]) -> None:
    trace = lab_trace(tmp_path / "t.csv")
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p95-wait<=30m", *flags)
    assert done.returncode == 1
    assert "KP920" in done.stderr and "'spot'" in done.stderr and "twice" in done.stderr
    _no_traceback(done)


def test_a_flag_and_the_targets_file_bounding_one_pool_are_refused(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "t.csv")
    targets = tmp_path / "targets.yaml"
    targets.write_text("targets:\n  - p95-wait<=30m\nbounds:\n  spot: 1..2\n")
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--targets", str(targets), "--nodes", "spot=4..6")
    assert done.returncode == 1
    assert f"{targets}:4:3: error[KP920]: pool 'spot' is bounded twice (also by --nodes)" in done.stderr
    _no_traceback(done)


def test_a_targets_file_with_no_target_names_the_file(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "t.csv")
    targets = tmp_path / "targets.yaml"
    targets.write_text("targets: []\n")
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--targets", str(targets))
    assert done.returncode == 1
    assert f"{targets}:1:1: error[KP920]: the targets file lists no target" in done.stderr
    _no_traceback(done)


def test_a_share_target_is_quoted_as_written() -> None:
    from compiler.capacity.evaluate import check_targets

    target = parse_target("within-30m>=99.9%")
    summary = {"teams": [{"team": "a", "preemptionsSuffered": 0}],
               "jobs": [{"team": "a", "waited": 0}] * 871 + [{"team": "a", "waited": 7200}] * 129}
    misses, _ = check_targets([target], summary)
    assert misses == ["a started 87.1% within 30.0 min < 99.9%"]


def test_a_target_on_a_team_without_jobs_is_warned_about(lab: Path, tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("team,name,at,duration,replicas,gpus\nteam-a,only,0,600,1,4\n")
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "team-b:p95-wait<=1h",
                   "--target", "team-a:p95-wait<=1h", "--workers", "1", "--format", "json")
    assert done.returncode == 0, done.stderr
    warning = "target 'team-b:p95-wait<=1h': team 'team-b' has no job in the trace, so every candidate meets it"
    assert warning in done.stderr and "team 'team-a'" not in done.stderr
    assert warning in json.loads(done.stdout)["notes"]["warnings"]


def test_no_answer_says_what_every_largest_candidate_misses_and_when_capacity_may_not_help() -> None:
    from compiler.capacity.candidate import Candidate, TeamQuota
    from compiler.capacity.cli import MAX_MISSES_SHOWN, _infeasible
    from compiler.capacity.evaluate import Evaluation
    from compiler.capacity.targets import Miss
    from compiler.capacity.search import Answer, CutResult

    nodes = (("a", 8),)
    policy = Evaluation(Candidate(nodes, (), (TeamQuota("t0", 4),)), 8.0, {"a": 8}, False,
                        [f"t{i} p95 wait 2.0 h > 60 s" for i in range(12)])
    demand = Evaluation(Candidate(nodes, (), (TeamQuota("t0", 9),)), 8.0, {"a": 8}, False,
                        [Miss("t0 suffered 15 preemptions > 6", grows_with_pools=True)])
    cut = CutResult((), None, demand, tops=[policy, demand])
    problems = _infeasible(Answer(policy, None, [cut], [policy, demand], 32), "trace.csv", True)
    messages = [d.message for d in problems]
    assert sum("guaranteed 4 GPUs" in m for m in messages) == MAX_MISSES_SHOWN
    assert messages[MAX_MISSES_SHOWN - 1].endswith("misses: t9 p95 wait 2.0 h > 60 s; and 2 more")
    assert messages[MAX_MISSES_SHOWN].endswith("misses: t0 suffered 15 preemptions > 6")
    assert problems[-1].severity.value == "note" and "can grow with the pools" in messages[-1]
    assert messages[0].startswith("the search found no candidate meeting the targets")   # (not proved: see the note)
    # Nothing can shrink (every pool fixed): no note, and the claim is proved.
    fixed = _infeasible(Answer(policy, None, [cut], [policy, demand], 32), "trace.csv", False)
    assert all(d.severity.value == "error" for d in fixed)
    assert fixed[0].message.startswith("no candidate within the bounds meets the targets")
    # A pool whose nodes cannot hold a job's pods is a miss a larger candidate can have too.
    stranded = Evaluation(demand.candidate, 8.0, {"a": 8}, False,
                          [Miss("4 job(s) of t0 run on pool small with pods of 8 GPUs > its nodes' 1", True)])
    noted = _infeasible(Answer(policy, None, [CutResult((), None, stranded, tops=[stranded])], [stranded], 32), "t.csv", True)
    assert noted[-1].severity.value == "note"
    # Waits missed, more candidates than the budget: the claim, and a note on what it rests on.
    without = _infeasible(Answer(policy, None, [CutResult((), None, policy, tops=[policy])], [policy], 32), "trace.csv",
                          True)
    assert without[0].message.startswith("no candidate within the bounds meets the targets; the largest")
    assert without[-1].severity.value == "note" and "more candidates than --proof-budget (32)" in without[-1].message
    # A single pool: no split over flavors, waits follow its nodes, and no note.
    single = _infeasible(Answer(policy, None, [CutResult((), None, policy, tops=[policy])], [policy], None),
                         "trace.csv", True)
    assert all(d.severity.value == "error" for d in single)
    # Every candidate simulated: the claim says so, and needs no note.
    every = _infeasible(Answer(policy, None, [CutResult((), None, policy, tops=[policy], every_candidate=True)],
                               [policy], 32), "trace.csv", True)
    assert all(d.severity.value == "error" for d in every)
    assert every[0].message.startswith("no candidate within the bounds meets the targets (every one was simulated)")


def test_no_answer_in_json_carries_the_diagnostics_and_exit_code(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "trace.csv")
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p95-wait<=1s", "--nodes", "ondemand=1..1",
                   "--nodes", "spot=1..1", "--workers", "1", "--format", "json")
    assert done.returncode == 1
    data = json.loads(done.stdout)
    assert data["ok"] is False and data["exitCode"] == 1 and data["answer"] is None
    assert data["diagnostics"] and all(d["code"] == "KP922" for d in data["diagnostics"])


def test_a_miss_keeps_its_kind_across_processes() -> None:
    import json
    import pickle

    from compiler.capacity.targets import Miss, can_grow_with_pools

    miss = pickle.loads(pickle.dumps(Miss("t0 suffered 3 preemptions > 0", True)))
    assert can_grow_with_pools(miss) and miss == "t0 suffered 3 preemptions > 0"
    assert json.dumps([miss]) == '["t0 suffered 3 preemptions > 0"]'
    assert not can_grow_with_pools("t0 p95 wait 2.0 h > 60 s") and not can_grow_with_pools(Miss("t0 p95 wait"))
