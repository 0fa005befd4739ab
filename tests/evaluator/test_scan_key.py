"""The nomination cache's scan key: a scan position whose resources all went through every
flavor (-1) is the position of a fresh scan. The key is only as good as that premise, checked
here on the engine itself: with every resource at -1, each pending workload of churning worlds
(several flavors, borrowing and lending limits, preemption) is nominated exactly as with no
position at all, while a position part-way through the flavors does change nominations (the
comparison can tell)."""

from __future__ import annotations

from compiler.evaluator import load_manifests
from compiler.evaluator.engine import Engine
from compiler.evaluator.layers import EngineLayers
from compiler.evaluator.nomination_cache import _scan_key
from evaluator.test_fast_paths import _world


def test_scan_key_reads_a_finished_scan_as_a_fresh_one() -> None:
    assert _scan_key(None) is None
    assert _scan_key({}) is None
    assert _scan_key({(0, "gpu"): -1, (1, "cpu"): -1}) is None
    assert _scan_key({(1, "cpu"): -1, (0, "gpu"): 0}) == (((0, "gpu"), 0),)
    assert _scan_key({(1, "cpu"): 1, (0, "gpu"): 0}) == (((0, "gpu"), 0), ((1, "cpu"), 1))


def _nominated(engine: Engine, info, cq_name: str, last_tried) -> tuple:
    info.last_tried = last_tried
    try:
        assignment, targets = engine.get_assignment(info, cq_name)
    finally:
        info.last_tried = None
    return (assignment.mode, assignment.message(), sorted(assignment.usage.items()),
            sorted(target.info.key for target in targets))


def test_a_finished_scan_nominates_as_a_fresh_one() -> None:
    compared = resumed_differ = 0
    for fair_sharing, seed in ((False, 3), (False, 5), (True, 3)):
        engine = Engine(load_manifests(_world(fair_sharing, seed)), layers=EngineLayers.none())
        engine.run(12)
        for key in sorted(engine.infos):
            info = engine.infos[key]
            if info.holds_quota or info.cluster_queue not in engine.queues:
                continue
            positions = [(index, res) for index, podset in enumerate(info.workload.podsets)
                         for res in podset.per_pod]
            fresh = _nominated(engine, info, info.cluster_queue, None)
            finished = _nominated(engine, info, info.cluster_queue, {position: -1 for position in positions})
            assert finished == fresh, key
            compared += 1
            resumed = _nominated(engine, info, info.cluster_queue, {position: 0 for position in positions})
            resumed_differ += resumed != fresh
    assert compared > 100 and resumed_differ > 10, (compared, resumed_differ)
