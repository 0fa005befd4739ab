"""`simulate`: a job trace replayed through the policy with the admission engine."""

from __future__ import annotations

import json

from kp_testing.policies import CLUSTER, compile_cluster, team, write_policy
from kp_testing import run_cli


def simulate(tmp_path, trace: str, *teams: tuple[str, str]):
    files = {"cluster.yaml": CLUSTER}
    files.update({f"{name}.yaml": team(name, body) for name, body in teams})
    policies = write_policy(tmp_path, files)
    trace_file = tmp_path / "trace.yaml"
    trace_file.write_text(trace)
    return run_cli("simulate", str(policies), "--trace", str(trace_file), "--format", "json")


TEAMS = (("a", "namespaces: [a]\ngpus: {guaranteed: 8}\ncapacity: on-demand-only"),
         ("b", "namespaces: [b]\ngpus: {guaranteed: 8}\ncapacity: on-demand-only"))


def test_reclaim_preempts_the_borrower_which_starts_over_later(tmp_path):
    trace = """\
jobs:
  - {name: big, team: a, at: 0, duration: 100, replicas: 2, gpus: 8}
  - {name: mine, team: b, at: 10, duration: 50, replicas: 1, gpus: 8}
"""
    result = simulate(tmp_path, trace, *TEAMS)
    assert result.returncode == 0, result.stderr
    jobs = {j["name"]: j for j in json.loads(result.stdout)["jobs"]}
    # a borrows b's idle 8 GPUs at t=0; b reclaims them at t=10 (reclaimWithinCohort: Any).
    assert jobs["mine"]["started"] == 10 and jobs["mine"]["finished"] == 60
    assert jobs["big"]["preemptions"] == 1
    assert jobs["big"]["started"] == 60 and jobs["big"]["finished"] == 160 and jobs["big"]["waited"] == 60


def test_jobs_queue_behind_the_quota_and_never_fitting_ones_are_reported(tmp_path):
    trace = """\
jobs:
  - {name: one, team: a, at: 0, duration: 30, replicas: 1, gpus: 8}
  - {name: two, team: a, at: 5, duration: 30, replicas: 1, gpus: 8}
  - {name: huge, team: a, at: 0, duration: 30, replicas: 4, gpus: 8}
"""
    result = simulate(tmp_path, trace, ("a", "namespaces: [a]\ngpus: {guaranteed: 8, burst: 0}\ncapacity: on-demand-only"),
                      TEAMS[1])
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    jobs = {j["name"]: j for j in summary["jobs"]}
    assert (jobs["one"]["started"], jobs["two"]["started"]) == (0, 30)
    assert jobs["huge"]["started"] is None and "maximum capacity" in jobs["huge"]["reason"]
    team_a = next(t for t in summary["teams"] if t["team"] == "a")
    assert team_a["neverStarted"] == 1 and team_a["wait"]["max"] == 25


def test_bad_trace_is_reported_with_its_line(tmp_path):
    result = simulate(tmp_path, "jobs:\n  - {name: x, team: a, duration: 5, gpus: 1, colour: red}\n", *TEAMS)
    assert result.returncode == 1
    assert "trace.yaml:2:" in result.stderr and "unknown field 'colour'" in result.stderr
    unknown = simulate(tmp_path, "jobs:\n  - {name: x, team: zz, duration: 5, gpus: 1}\n", *TEAMS)
    assert unknown.returncode == 1 and "error[KP314]" in unknown.stderr and "unknown team 'zz'" in unknown.stderr
    assert "Traceback" not in result.stderr + unknown.stderr


def test_fair_sharing_of_the_policy_decides_preemption_as_in_the_cluster(tmp_path):
    """b borrows to run b1 (nominal 4, needs 8). Classical preemption lets a borrowing
    preemptor take nothing from the cohort, so b1 waits for a's jobs; with the policy's fair
    sharing (which the compiled Kueue Configuration turns on) b's share after admission is no
    more than a's after losing a1, and Kueue preempts a1."""
    trace = """\
jobs:
  - {name: a1, team: a, at: 0, duration: 100, replicas: 1, gpus: 4}
  - {name: a2, team: a, at: 0, duration: 100, replicas: 1, gpus: 4}
  - {name: a3, team: a, at: 0, duration: 100, replicas: 1, gpus: 4}
  - {name: b1, team: b, at: 10, duration: 50, replicas: 1, gpus: 8}
"""
    teams = (("a", "namespaces: [a]\ngpus: {guaranteed: 4}\ncapacity: on-demand-only"),
             ("b", "namespaces: [b]\ngpus: {guaranteed: 4}\ncapacity: on-demand-only"))
    outcomes = {}
    for fair in (False, True):
        files = {"cluster.yaml": CLUSTER + ("  fairSharing: {enabled: true}\n" if fair else "")}
        files.update({f"{name}.yaml": team(name, body) for name, body in teams})
        policies = write_policy(tmp_path / str(fair), files)
        (tmp_path / "trace.yaml").write_text(trace)
        result = run_cli("simulate", str(policies), "--trace", str(tmp_path / "trace.yaml"), "--format", "json")
        assert result.returncode == 0, result.stderr
        outcomes[fair] = {j["name"]: (j["started"], j["preemptions"]) for j in json.loads(result.stdout)["jobs"]}
    assert outcomes[False]["b1"] == (100, 0) and outcomes[False]["a1"] == (0, 0)
    assert outcomes[True]["b1"] == (10, 0) and outcomes[True]["a1"] == (60, 1)


def test_the_completion_of_a_preempted_run_is_no_moment(tmp_path):
    """`big` was due to finish at t=100 but was preempted at t=10: nothing happens at t=100, so
    the simulation makes no moment there (a moment rescans every queue)."""
    from compiler.simulate.driver import Simulation
    from compiler.simulate.trace import Trace, TraceJob

    artifacts = compile_cluster(tmp_path, CLUSTER, dict(TEAMS))
    trace = Trace(jobs=[TraceJob(team="a", name="big", at=0, duration=100, replicas=2, gpus=8),
                        TraceJob(team="b", name="mine", at=10, duration=50, replicas=1, gpus=8)])
    moments = []
    simulation = Simulation(artifacts.cluster, [o.obj for o in artifacts.objects], trace, "trace.yaml",
                            artifacts.kueue_configuration)
    run = simulation.run(observer=lambda phase, now, loop: moments.append(now) if phase == "before" else None)
    assert [r.preemptions for r in run.runs] == [1, 0]
    assert moments == [0, 10, 60, 160]
