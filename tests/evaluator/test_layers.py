"""Each optional layer of the engine (compiler/evaluator/layers.py) alone, against the plain
engine: on evaluate worlds and on simulate traces, the engine with only that layer on (and the
layers it works over) decides exactly what the engine with every layer off decides. Each test
names its layer, so a mismatch says which cache is wrong; each also checks that its worlds made
the layer work (a layer that never answered would pass for nothing)."""

from __future__ import annotations

import json
import random

import pytest
from kp_testing.policies import CLUSTER, compile_cluster

from compiler.evaluator import load_manifests
from compiler.evaluator import scheduler as scheduler_module
from compiler.evaluator.engine import Engine
from compiler.evaluator.fair_tournament import FairTournament
from compiler.evaluator.layers import LAYERS, EngineLayers
from compiler.evaluator.result import EvaluationResult
from compiler.simulate.driver import Simulation
from compiler.simulate.trace import Trace, TraceJob
from differential.worlds import world
from evaluator.test_fast_paths import _world

# The worlds each layer is compared on: (fair sharing, seed) of test_fast_paths' churning world.
EVALUATE_WORLDS = {
    "nomination_cache": [(False, 3), (False, 5), (True, 3)],
    "class_nominations": [(False, 3), (False, 5)],  # (not used under fair sharing)
    "preemption_cache": [(False, 3), (False, 5), (True, 3), (True, 4)],
    "fair_search_shortcuts": [(True, 3), (True, 4), (True, 6)],
    "fair_tournament": [(True, 3), (True, 4)],
}

TEAMS = {
    "a": "namespaces: [a]\ngpus: {guaranteed: 8, burst: 8}\ncapacity: on-demand-first",
    "b": "namespaces: [b]\ngpus: {guaranteed: 4, burst: 4}\ncapacity: spot-first",
    "c": "namespaces: [c]\ngpus: {guaranteed: 4}\ncapacity: on-demand-only",
}


class _CountedSearches:
    """The preemptor's strategy, counting the searches it is asked to make (the strategy
    object itself, compiled, cannot be patched: it is wrapped)."""

    def __init__(self, strategy) -> None:
        self.strategy = strategy
        self.searches = 0

    def targets(self, request):
        self.searches += 1
        return self.strategy.targets(request)

    def __getattr__(self, name):
        return getattr(self.strategy, name)


def _engine(state, layers: EngineLayers) -> tuple[Engine, _CountedSearches]:
    engine = Engine(state, layers=layers)
    counted = _CountedSearches(engine.preemptor.strategy)
    engine.preemptor.strategy = counted
    engine.journal = []
    return engine, counted


def _evaluated(docs: list[dict], layers: EngineLayers, cycles: int | None = None):
    engine, counted = _engine(load_manifests(docs), layers)
    engine.run(cycles)
    result = EvaluationResult(engine)
    decided = (json.dumps(result.to_json(), sort_keys=True), result.cycles, result.converged,
               tuple(result.explain(key) for key in sorted(engine.infos)))
    return engine, counted, decided


def _journal(engine: Engine) -> list[tuple]:
    return [(str(kind), info.key, by) for kind, info, by in engine.journal]


class _Work:
    """What the layer under test did over a test's runs (summed), against the plain engine."""

    def __init__(self) -> None:
        self.reused = self.from_class = self.quiet = self.woken = self.bounded = 0
        self.searches = self.plain_searches = self.tournaments = self.preemptions = 0

    def add(self, engine: Engine, counted: _CountedSearches, plain_counted: _CountedSearches) -> None:
        self.reused += engine.reused
        self.from_class += engine.reused_from_class
        self.quiet += engine.quiet_heads
        self.woken += engine.woken
        self.bounded += engine.bounded
        self.searches += counted.searches
        self.plain_searches += plain_counted.searches

    def check(self, layer: str) -> None:
        """The runs made `layer` answer something (else the comparison proves nothing)."""
        if layer == "nomination_cache":
            assert self.reused > 0
        elif layer == "class_nominations":
            assert self.from_class > 0
        elif layer == "preemption_cache":
            assert 0 < self.searches < self.plain_searches
        elif layer == "fair_search_shortcuts":
            assert self.searches > 0 and self.preemptions > 0
        elif layer == "fair_tournament":
            assert self.tournaments > 0
        elif layer == "quiet_queues":
            assert self.quiet > 0 and self.woken > 0
        elif layer == "answer_bounds":
            assert self.bounded > 0


@pytest.fixture
def tournaments(monkeypatch) -> list[int]:
    """The incremental tournaments made (the plain engine runs `pop_fair` instead)."""
    made: list[int] = []

    class Counted(FairTournament):
        def __init__(self, *args, **kwargs) -> None:
            made.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(scheduler_module, "FairTournament", Counted)
    return made


@pytest.mark.parametrize("layer", sorted(EVALUATE_WORLDS))
def test_layer_alone_evaluates_as_the_plain_engine(layer: str, tournaments: list[int]) -> None:
    """evaluate: the same admissions and evictions in the same cycles, the same JSON and
    explanations, the same number of decisions."""
    work = _Work()
    for fair_sharing, seed in EVALUATE_WORLDS[layer]:
        docs = _world(fair_sharing, seed=seed, workloads=200)
        cycles = 60 if fair_sharing else None  # (fair sharing's preemptions go round: 60 cycles of them)
        engine, counted, decided = _evaluated(docs, EngineLayers.only(layer), cycles)
        plain, plain_counted, plain_decided = _evaluated(docs, EngineLayers.none(), cycles)
        where = f"layer {layer}, world (fair sharing {fair_sharing}, seed {seed})"
        assert _journal(engine) == _journal(plain), where
        assert decided == plain_decided, where
        assert (engine.cycle, engine.decisions) == (plain.cycle, plain.decisions), where
        work.add(engine, counted, plain_counted)
        work.preemptions += sum(1 for kind, _, _ in engine.journal if kind == "preempted")
    work.tournaments = len(tournaments)
    work.check(layer)


def test_circle_detection_alone_evaluates_as_the_plain_engine() -> None:
    """evaluate, layer circles: a run whose state comes back is answered at the cycle cap from
    the circle's period; the plain engine runs every cycle to the cap. Same answer, to every
    workload's explanation (the journals differ: the layer does not run the cycles it skips)."""
    circling = 0
    for index in range(200):
        docs = world(0, index)
        engine, _, decided = _evaluated(docs, EngineLayers.only("circles"))
        if engine.circle is None:
            continue
        plain, _, plain_decided = _evaluated(docs, EngineLayers.none())
        assert plain.circle is None and not plain.converged
        assert decided == plain_decided, f"layer circles, differential world (0, {index})"
        assert engine.cycle == plain.cycle
        circling += 1
        if circling == 3:
            break
    assert circling == 3


@pytest.fixture(scope="module")
def policies(tmp_path_factory) -> dict[str, tuple]:
    """A classical and a fair-sharing version of one small compiled policy."""
    made = {}
    for name, cluster in (("classical", CLUSTER), ("fair", CLUSTER + "  fairSharing: {enabled: true}\n")):
        artifacts = compile_cluster(tmp_path_factory.mktemp(name), cluster, TEAMS)
        made[name] = (artifacts.cluster, [o.obj for o in artifacts.objects], artifacts.kueue_configuration)
    return made


def _trace(seed: int, jobs: int) -> Trace:
    rng = random.Random(seed)
    at, out = 0, []
    for index in range(jobs):
        at += rng.choice([0, 0, 5, 10, 30])
        out.append(TraceJob(team=rng.choice("abc"), name=f"j{index}", at=at, duration=rng.randint(5, 120),
                            replicas=rng.choice([1, 1, 2, 4]), gpus=rng.choice([1, 2, 4, 8]),
                            priority=rng.choice(["high", "low", None])))
    return Trace(jobs=out)


def _simulated(policy: tuple, trace: Trace, layers: EngineLayers):
    cluster, objects, configuration = policy
    simulation = Simulation(cluster, objects, trace, "trace.yaml", configuration)
    made = []
    state = load_manifests(simulation.base)

    def engine(reuse: bool = True) -> Engine:
        made.append(_engine(state, layers))
        return made[-1][0]

    simulation.engine = engine
    moments = []

    def observer(phase, now, loop) -> None:
        if phase == "after":
            moments.append({key: (str(info.status), info.reason_code, info.reason, info.last_tried, info.cluster_queue)
                            for key, info in loop.engine.infos.items() if not info.holds_quota})

    run = simulation.run(observer)
    (engine_made, counted), = made
    outcomes = [(r.key, r.started, r.finished, r.flavor, r.preemptions, r.preempted_others, r.reason) for r in run.runs]
    decided = (outcomes, run.timeline, [w.message for w in run.warnings], engine_made.cycle, engine_made.decisions,
               moments)
    return engine_made, counted, decided


SIMULATE_RUNS = {
    "nomination_cache": ["classical", "fair"],
    "class_nominations": ["classical"],
    "preemption_cache": ["classical", "fair"],
    "fair_search_shortcuts": ["fair"],
    "fair_tournament": ["fair"],
    "quiet_queues": ["classical", "fair"],
    "answer_bounds": ["classical", "fair"],
}


@pytest.mark.parametrize("layer", sorted(SIMULATE_RUNS))
def test_layer_alone_simulates_as_the_plain_engine(layer: str, policies, tournaments: list[int]) -> None:
    """simulate: the same starts, finishes, preemptions, timeline, warnings, cycles and
    decisions, and after every moment the same status, reason and scan position of every
    waiting job. The layer must have answered something on each policy."""
    for policy in SIMULATE_RUNS[layer]:
        work = _Work()
        made = len(tournaments)
        for seed in range(3):
            trace = _trace(seed, 60)
            engine, counted, decided = _simulated(policies[policy], trace, EngineLayers.only(layer))
            plain, plain_counted, plain_decided = _simulated(policies[policy], trace, EngineLayers.none())
            assert decided == plain_decided, f"layer {layer}, {policy} policy, trace seed {seed}"
            work.add(engine, counted, plain_counted)
            work.preemptions += sum(run[4] for run in decided[0])
        work.tournaments = len(tournaments) - made
        work.check(layer)


@pytest.mark.parametrize("policy", ["classical", "fair"])
def test_quiet_queues_kept_quiet_by_answer_bounds_simulate_as_the_plain_engine(policies, policy: str) -> None:
    """Quiet queues over answer bounds (simulate's default): a queue whose heads' bounds hold
    stays quiet through commits elsewhere in its tree, and decides what the plain engine does
    (under fair sharing its heads still take part in the tournament)."""
    work = _Work()
    for seed in range(4):
        trace = _trace(seed, 80)
        layers = EngineLayers.only("quiet_queues", "answer_bounds")
        engine, counted, decided = _simulated(policies[policy], trace, layers)
        plain, plain_counted, plain_decided = _simulated(policies[policy], trace, EngineLayers.none())
        assert decided == plain_decided, f"quiet queues and answer bounds, {policy} policy, trace seed {seed}"
        work.add(engine, counted, plain_counted)
    work.check("quiet_queues")
    work.check("answer_bounds")


def test_every_layer_is_compared() -> None:
    """A new layer gets a comparison here (quiet queues run in simulate's moments only, circle
    detection has a test of its own)."""
    assert set(EVALUATE_WORLDS) | set(SIMULATE_RUNS) | {"circles"} == set(LAYERS)


def test_layers_are_named_and_need_what_they_work_over() -> None:
    with pytest.raises(ValueError, match="no engine layer 'nomination'"):
        EngineLayers(nomination=False)
    with pytest.raises(ValueError, match="quiet_queues works over nomination_cache, which is off"):
        EngineLayers(nomination_cache=False, class_nominations=False, answer_bounds=False)
    assert EngineLayers.only("quiet_queues").on() == ["nomination_cache", "quiet_queues"]
    assert EngineLayers.none().on() == [] and EngineLayers().on() == list(LAYERS)
    assert Engine(load_manifests([]), reuse=False).layers.on() == ["circles"]  # (reuse=False: every cache off)


def test_a_readings_pairs_are_declared_once() -> None:
    """`_reading_pairs` declares the pairs a reading's answer depends on; `_reading_touches`
    asks the same of a set of pairs without building the tuple. They agree on every reading
    the nominations of a churning run kept, for every pair and every set of pairs in play."""
    from compiler.evaluator.nomination_cache import _reading_pairs, _reading_touches

    engine = Engine(load_manifests(_world(False, seed=3, workloads=200)))
    kept = {}
    for _ in range(30):
        engine.run(1)
        kept.update((id(info.nomination), info.nomination) for info in engine.infos.values())
    readings = [reading for nomination in kept.values() if nomination is not None
                for reading in (nomination.readings or ())]
    pairs = sorted({fr for node in engine.nodes.values() for fr in node.quotas})
    rnd = random.Random(1)
    sets = [{fr} for fr in pairs] + [set(rnd.sample(pairs, 2)) for _ in range(20)] + [set()]
    kinds = set()
    for kind, what, amount, _ in readings:
        kinds.add(kind)
        declared = set(_reading_pairs(kind, what, amount))
        for frs in sets:
            assert _reading_touches(frs, kind, what, amount) == bool(frs & declared), (kind, what, amount, frs)
    assert len(kinds) == 3, kinds  # quota, oracle and targets readings were all compared


def test_quiet_heads_take_part_in_the_fair_tournament(tmp_path) -> None:
    """Under fair sharing a quiet queue's head does nothing, yet it takes part in the tournament
    that orders the heads that act (it may win its cohort's round): the generated policy's
    hierarchical cohorts and fair weights under an overloaded trace decide as the plain engine
    does only if the quiet heads are in it."""
    import sys
    from pathlib import Path

    from compiler.simulate import runner, synth
    from compiler.stages.pipeline import PolicySource

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from generate_policy import generate

    source = PolicySource.from_directory(generate(tmp_path / "policy", TOURNAMENT_TEAMS, 10, 20))
    artifacts = runner.compiled_cluster(source, None)
    jobs = synth.synthesize(artifacts.cluster, synth.SynthOptions(TOURNAMENT_JOBS, 3, TOURNAMENT_RATE))
    trace_path = tmp_path / "trace.csv"
    trace_path.write_text(synth.to_csv(jobs))
    trace, _ = runner.load_trace(trace_path, artifacts)
    policy = (artifacts.cluster, [o.obj for o in artifacts.objects], artifacts.kueue_configuration)
    layers = EngineLayers.only("quiet_queues", "answer_bounds")
    engine, _, decided = _simulated(policy, trace, layers)
    _, _, plain_decided = _simulated(policy, trace, EngineLayers.none())
    assert engine.fair_sharing and engine.quiet_heads > 0
    assert decided == plain_decided


# (The generated policy's teams guarantee 8 GPUs each; its jobs average 28/3: a rate of 1.2 x
# what the guarantees sustain keeps queues waiting, some quiet, while others preempt.)
TOURNAMENT_TEAMS = 200
TOURNAMENT_JOBS = 400
TOURNAMENT_RATE = 1.2 * TOURNAMENT_TEAMS * 8 / (28 / 3)
