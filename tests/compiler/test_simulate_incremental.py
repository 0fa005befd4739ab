"""The simulator carries one engine from event to event; at every moment it must decide what
`evaluate` decides on an export of that moment (the same jobs running, the same jobs waiting)."""

from __future__ import annotations

import random

import pytest
from kp_testing.policies import CLUSTER, compile_cluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.evaluator import evaluate, load_manifests
from compiler.simulate.driver import Simulation, export_moment
from compiler.simulate.trace import Trace, TraceJob

TEAMS = {
    "a": "namespaces: [a]\ngpus: {guaranteed: 8, burst: 8}\ncapacity: on-demand-first",
    "b": "namespaces: [b]\ngpus: {guaranteed: 4, burst: 4}\ncapacity: spot-first",
    "c": "namespaces: [c]\ngpus: {guaranteed: 4}\ncapacity: on-demand-only",
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    artifacts = compile_cluster(tmp_path_factory.mktemp("policy"), CLUSTER, TEAMS)
    return artifacts.cluster, [o.obj for o in artifacts.objects]


def random_trace(seed: int, jobs: int) -> Trace:
    rng = random.Random(seed)
    at = 0
    out = []
    for index in range(jobs):
        at += rng.choice([0, 0, 5, 10, 30])
        out.append(TraceJob(team=rng.choice("abc"), name=f"j{index}", at=at, duration=rng.randint(5, 120),
                            replicas=rng.choice([1, 1, 2, 4]), gpus=rng.choice([1, 2, 4, 8]),
                            priority=rng.choice(["high", "low", None])))
    return Trace(jobs=out)


def _decisions(loop) -> dict[str, tuple]:
    """What the simulator's engine holds for every job: running (and where) or waiting."""
    state = {}
    for key, info in loop.engine.infos.items():
        if info.holds_quota:
            state[key] = ("running", tuple(sorted((ps, tuple(sorted(f.items()))) for ps, f in info.flavors.items())))
        else:
            state[key] = ("waiting",)
    return state


def _evaluated(documents: list[dict]) -> dict[str, tuple]:
    result = evaluate(load_manifests(documents))
    state = {}
    for key, outcome in result.outcomes.items():
        if outcome.status in ("admitted", "running"):
            state[key] = ("running", tuple(sorted((ps, tuple(sorted(f.items())))
                                                  for ps, f in outcome.assignment.items())))
        else:
            state[key] = ("waiting",)
    return state


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), jobs=st.integers(5, 40), sample=st.integers(0, 10**6))
def test_every_moment_matches_evaluate_on_its_export(compiled, seed, jobs, sample):
    cluster, objects = compiled
    simulation = Simulation(cluster, objects, random_trace(seed, jobs), "trace.yaml")
    rng = random.Random(sample)
    checked = []
    exports: dict[int, list[dict]] = {}

    warnings_before = []

    def observer(phase, now, loop):
        if phase == "before":
            warnings_before.append(len(loop.circles))
            if rng.random() < 0.5 or not checked:
                exports[now] = export_moment(loop, now)
        elif now in exports:
            exported = exports.pop(now)
            if len(loop.circles) > warnings_before[-1]:
                return  # Kueue's preemptions went round in a circle: both engines stop at some point of it
            checked.append(now)
            assert _evaluated(exported) == _decisions(loop), f"moment t={now}"

    simulation.run(observer=observer)
    assert checked


def test_the_export_of_a_moment_reads_back_as_the_same_cluster(compiled):
    cluster, objects = compiled
    simulation = Simulation(cluster, objects, random_trace(7, 30), "trace.yaml")
    seen = []

    def observer(phase, now, loop):
        if phase == "after":
            state = load_manifests(export_moment(loop, now))
            running = {w.key for w in state.workloads if w.admission is not None}
            assert running == {k for k, i in loop.engine.infos.items() if i.holds_quota}
            seen.append(now)

    simulation.run(observer=observer)
    assert len(seen) > 3


def _outcomes(run) -> list[tuple]:
    return [(r.key, r.started, r.finished, r.flavor, r.preemptions, r.preempted_others, r.reason) for r in run.runs]


def _run(cluster, objects, trace: Trace, reuse: bool, observer=None):
    """A simulation's run, and the engine it ran with."""
    simulation = Simulation(cluster, objects, trace, "trace.yaml")
    engines = []
    make = simulation.engine
    simulation.engine = lambda reuse=True: engines.append(make(reuse)) or engines[-1]
    return simulation.run(observer, reuse=reuse), engines[0]


def test_reused_failed_nominations_change_nothing(compiled):
    """A failed nomination is reused while every quota and preemption answer it read is the
    same again; a run that recomputes every nomination ends with the same jobs started,
    finished, preempted and waiting for the same reasons, at the same times."""
    cluster, objects = compiled
    reused_failures = 0
    for seed in range(6):
        trace = random_trace(seed, 60)
        runs = {}
        for reuse in (True, False):
            run, engine = _run(cluster, objects, trace, reuse)
            runs[reuse] = (_outcomes(run), run.timeline)
            if reuse:
                reused_failures += engine.reused_failures
            else:
                assert engine.reused_failures == 0
        assert runs[True] == runs[False], f"seed {seed}"
    assert reused_failures > 0  # the traces do exercise the reuse


def test_cycles_that_admit_or_evict_nothing_are_no_circle(compiled, monkeypatch):
    """At some moments of this trace a flavor scan moves on for a few cycles with the same jobs
    holding quota; that is no circle of preemptions (run without the stop, every moment settles
    before the engine's cycle cap), and none is reported."""
    from compiler.simulate import driver

    cluster, objects = compiled
    for repeats in (None, driver.CHURN_REPEATS):
        monkeypatch.setattr(driver, "CHURN_REPEATS", repeats)
        simulation = Simulation(cluster, objects, random_trace(0, 18), "trace.yaml")
        loop = driver._EventLoop(simulation, simulation.engine())
        run = loop.run()
        assert loop.circles == [] and not run.warnings, repeats


def _pending(loop) -> dict[str, tuple]:
    """What the engine says of every waiting job after a moment: status, reason, and where its
    flavor scan stands."""
    return {key: (info.status, info.reason_code, info.reason, info.last_tried, info.cluster_queue)
            for key, info in loop.engine.infos.items() if not info.holds_quota}


@pytest.mark.parametrize("policy", ["reclaimWithinCohort: Any", "reclaimWithinCohort: LowerPriority",
                                    "withinClusterQueue: LowerOrNewerEqualPriority"])
def test_quiet_queues_left_unwalked_change_nothing(tmp_path, policy):
    """A queue whose moment repeats its last one (the same failed heads, reading what no
    commit moved) is not walked again, and is walked after all when a commit, an arrival or
    the end of the moment needs it: the run is the one of an engine that walks every queue at
    every moment (and recomputes every nomination), to the warnings and the cycle count. With
    reclaimWithinCohort other than Any a head with no candidates holds quota for its cycle,
    and its queue is walked every time. A workload also reuses the failed nomination of
    another of its equivalence class (asking the preemption answers again for itself when the
    policy compares creation times), and the fit of another of its class, while what that
    fit read decides the same."""
    key = policy.split(":")[0]
    lines = [line for line in CLUSTER.splitlines(keepends=True) if f"{key}:" not in line]
    cluster_file = "".join(lines).replace("  preemption:\n", f"  preemption:\n    {policy}\n")
    artifacts = compile_cluster(tmp_path, cluster_file, TEAMS)
    cluster, objects = artifacts.cluster, [o.obj for o in artifacts.objects]
    quiet, woken, shared, fits = 0, 0, 0, 0
    for seed in range(6):
        trace = random_trace(seed, 60)
        runs = {}
        for reuse in (True, False):
            moments = []
            run, engine = _run(cluster, objects, trace, reuse, lambda phase, now, loop: moments.append(
                _pending(loop)) if phase == "after" else None)
            runs[reuse] = (_outcomes(run), run.timeline, [w.message for w in run.warnings],
                           engine.cycle, engine.decisions, moments)
            quiet += engine.quiet_heads
            woken += engine.woken
            shared += engine.reused_from_class
            fits += engine.reused_fits
        assert runs[True] == runs[False], f"seed {seed}"
    assert quiet > 0 and woken > 0 and shared > 0 and fits > 0  # the traces do exercise all four
