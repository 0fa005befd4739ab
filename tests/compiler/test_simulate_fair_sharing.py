"""The simulator under a fair-sharing policy: a preemption search judges the shares of the
queues it compares, so its answer is kept only while the pairs it read and the shares of those
queues are unchanged (fair_search_reads.SearchReads). Checked here on a policy where that matters:
nested cohorts with weights, lending limits, two GPU models that share one dominant resource,
and teams that borrow from each other."""

from __future__ import annotations

import random

import pytest
from kp_testing.policies import compile_cluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.evaluator import evaluate, load_manifests
from compiler.simulate.driver import Simulation, export_moment
from compiler.simulate.trace import Trace, TraceJob

CLUSTER = """\
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata:
  name: lab
spec:
  kubernetesVersion: "1.34"
  kueueVersion: "0.19"
  pools:
    - {name: h100, gpu: H100-80GB, nodes: 2, gpusPerNode: 8, capacity: on-demand}
    - {name: h100-spot, gpu: H100-80GB, nodes: 1, gpusPerNode: 8, capacity: spot}
    - {name: a100, gpu: A100-80GB, nodes: 2, gpusPerNode: 8, capacity: on-demand}
  cohorts:
    - name: research
    - {name: nlp, parent: research, weight: 2}
    - {name: vision, parent: research}
  priorities:
    - {name: high, value: 100}
    - {name: low, value: 0, default: true}
  preemption:
    withinClusterQueue: LowerPriority
    reclaimWithinCohort: Any
  fairSharing: {enabled: true}
"""

TEAMS = {
    "a": "cohort: nlp\nnamespaces: [a]\nmodels: [H100-80GB]\ngpus: {guaranteed: 6, burst: 8, lend: 3}",
    "b": "cohort: nlp\nnamespaces: [b]\nmodels: [H100-80GB, A100-80GB]\ngpus: {guaranteed: 4, burst: 8}\nweight: 2",
    "c": "cohort: vision\nnamespaces: [c]\nmodels: [A100-80GB]\ngpus: {guaranteed: 6, burst: 8, lend: 4}",
    "d": "cohort: vision\nnamespaces: [d]\nmodels: [H100-80GB]\ngpus: {guaranteed: 4, burst: 6}\nweight: 0.5",
    "e": "cohort: research\nnamespaces: [e]\nmodels: [A100-80GB, H100-80GB]\ngpus: {guaranteed: 2, burst: 8}",
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    artifacts = compile_cluster(tmp_path_factory.mktemp("policy"), CLUSTER, TEAMS)
    assert "fairSharing" in artifacts.kueue_configuration  # (v1beta2: present means on)
    return artifacts.cluster, [o.obj for o in artifacts.objects], artifacts.kueue_configuration


def _trace(seed: int, jobs: int) -> Trace:
    rng = random.Random(seed)
    at, out = 0, []
    for index in range(jobs):
        at += rng.choice([0, 0, 5, 10, 30])
        out.append(TraceJob(team=rng.choice("abcde"), name=f"j{index}", at=at, duration=rng.randint(5, 200),
                            replicas=rng.choice([1, 1, 2]), gpus=rng.choice([1, 2, 4, 8]),
                            priority=rng.choice(["high", "low", None])))
    return Trace(jobs=out)


def _outcomes(run) -> list[tuple]:
    return [(r.key, r.started, r.finished, r.flavor, r.preemptions, r.preempted_others, r.reason) for r in run.runs]


def test_kept_fair_sharing_answers_change_nothing(compiled):
    """The engine that keeps search answers while what they read holds ends every trace as
    the engine that searches again every time: same starts, finishes, preemptions, reasons."""
    cluster, objects, configuration = compiled
    kept = 0
    for seed in range(8):
        trace = _trace(seed, 70)
        runs = {}
        for reuse in (True, False):
            simulation = Simulation(cluster, objects, trace, "trace.yaml", configuration)
            engines = []
            make = simulation.engine
            simulation.engine = lambda reuse=True: engines.append(make(reuse)) or engines[-1]
            run = simulation.run(reuse=reuse)
            runs[reuse] = (_outcomes(run), run.timeline, [w.message for w in run.warnings])
            if reuse:
                kept += engines[0].reused_failures
        assert runs[True] == runs[False], f"seed {seed}"
        assert sum(r[4] for r in runs[True][0]) > 0, f"seed {seed}: no preemption to judge"
    assert kept > 0


def _state(engine_infos) -> dict[str, tuple]:
    return {key: ("running", tuple(sorted((ps, tuple(sorted(f.items()))) for ps, f in info.flavors.items())))
            if info.holds_quota else ("waiting",) for key, info in engine_infos.items()}


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), jobs=st.integers(10, 50), sample=st.integers(0, 10**6))
def test_every_moment_matches_evaluate_on_its_export(compiled, seed, jobs, sample):
    """At random moments, the simulator (which keeps answers across moments) holds what
    `evaluate` decides on an export of that moment, fair sharing included."""
    cluster, objects, configuration = compiled
    simulation = Simulation(cluster, objects, _trace(seed, jobs), "trace.yaml", configuration)
    rng = random.Random(sample)
    exports: dict[int, tuple[list[dict], int]] = {}
    checked = []

    def observer(phase, now, loop):
        if phase == "before":
            if rng.random() < 0.4 or not checked:
                exports[now] = (export_moment(loop, now), len(loop.circles))
        elif now in exports:
            exported, warnings = exports.pop(now)
            if len(loop.circles) > warnings:
                return  # preemptions in a circle: the simulation stops at some point of it
            result = evaluate(load_manifests(exported))
            expected = {key: ("running", tuple(sorted((ps, tuple(sorted(f.items())))
                                                      for ps, f in o.assignment.items())))
                        if o.status in ("admitted", "running") else ("waiting",)
                        for key, o in result.outcomes.items()}
            assert expected == _state(loop.engine.infos), f"moment t={now}"
            checked.append(now)

    simulation.run(observer=observer)
    assert checked


def test_moments_whose_preemptions_go_round_in_a_circle_are_reported_once_and_the_run_goes_on(compiled, monkeypatch):
    """In this trace (seed 0, chosen for it since `burst` became team-wide, which changed the
    queues' limits) fair sharing's preemptions go round in a circle at some moments: run
    without the stop, those moments reach the engine's cycle cap. The simulation stops each
    when the same jobs hold quota a third time, and one warning counts them."""
    cluster, objects, configuration = compiled
    from compiler.simulate import driver

    monkeypatch.setattr(driver, "CHURN_REPEATS", None)
    capped = Simulation(cluster, objects, _trace(0, 20), "trace.yaml", configuration)
    loop = driver._EventLoop(capped, capped.engine())
    loop.run()
    assert loop.circles  # real circles: the engine's cycle cap was reached
    monkeypatch.undo()

    simulation = Simulation(cluster, objects, _trace(0, 20), "trace.yaml", configuration)
    loop = driver._EventLoop(simulation, simulation.engine())
    run = loop.run()
    circles = [w.message for w in run.warnings if "go round in a circle" in w.message]
    assert len(circles) == 1 and f"({len(loop.circles)} moments)" in circles[0]
    assert circles[0].startswith(f"at t={loop.circles[0]}s")
    assert all(job.finished is not None or job.reason for job in run.runs)
