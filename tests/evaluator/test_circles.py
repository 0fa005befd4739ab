"""Circles of preemptions: a run whose whole state comes back is answered at the cycle cap from
the circle's period, with the state a run of every cycle to the cap ends in."""

from __future__ import annotations

import json
import subprocess
import sys

from compiler.evaluator import load_manifests
from compiler.evaluator.circles import CircleFinder, fingerprint
from compiler.evaluator.result import EvaluationResult
from compiler.evaluator.engine import Engine
from differential.worlds import dump, world


def _answer(objects: list[dict], circles: bool) -> tuple[Engine, tuple]:
    engine = Engine(load_manifests(objects))
    engine.run(None, circles=circles)
    result = EvaluationResult(engine)
    explained = tuple(result.explain(key) for key in sorted(engine.infos))
    return engine, (json.dumps(result.to_json(), sort_keys=True), result.cycles, result.converged, explained)


def _circling_worlds(seeds, per_seed: int):
    for seed in seeds:
        for index in range(per_seed):
            objects = world(seed, index)
            engine = Engine(load_manifests(objects))
            engine.run(None, circles=False)
            if not engine.converged:
                yield seed, index, objects


def test_a_circle_found_gives_the_state_every_cycle_to_the_cap_gives():
    """Random worlds (every preemption policy, fair sharing on and off, partial admission,
    several flavors) whose preemptions go round: the answer with the circle found equals the
    run of every cycle to the cap, to each workload's explanation, and far fewer cycles run."""
    circling = 0
    for seed, index, objects in _circling_worlds(range(2), 150):
        full_engine, full = _answer(objects, False)
        found_engine, found = _answer(objects, True)
        assert found == full, (seed, index)
        assert found_engine.circle is not None, (seed, index)
        assert found_engine.decisions < full_engine.decisions / 2, (seed, index)
        circling += 1
    assert circling >= 5  # the generator does make worlds that go round


def test_the_fingerprint_changes_with_what_a_later_cycle_reads():
    """Two states that differ only in a pending workload's flavor-scan position, or in the
    order in which two holders reserved quota, are different states."""
    seed, index, objects = next(_circling_worlds([0], 150))
    engine = Engine(load_manifests(objects))
    engine.run(3)
    before = fingerprint(engine)
    pending = next(info for info in engine.infos.values() if not info.holds_quota)
    saved = pending.last_tried
    pending.last_tried = {(0, "cpu"): 7}
    assert fingerprint(engine) != before
    pending.last_tried = saved
    assert fingerprint(engine) == before
    holders = sorted((info for info in engine.infos.values() if info.holds_quota), key=lambda i: i.reserved_rank)
    if len(holders) >= 2 and holders[0].reserved_rank != holders[-1].reserved_rank:
        first, last = holders[0].reserved_rank, holders[-1].reserved_rank
        holders[0].reserved_rank, holders[-1].reserved_rank = last, first
        assert fingerprint(engine) != before


def test_evaluate_says_which_circle_and_answers_as_the_full_run(tmp_path):
    seed, index, objects = next(_circling_worlds([1], 150))
    path = tmp_path / "world.yaml"
    path.write_text(dump(objects))
    done = subprocess.run([sys.executable, "-m", "compiler", "evaluate", str(path), "--format", "json"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "in a circle: from cycle" in done.stderr and "cycle cap" in done.stderr
    engine, full = _answer(objects, False)
    assert json.loads(done.stdout) == json.loads(full[0])
    assert f"({full[1]:,} cycles)" in done.stderr


def test_a_circle_is_found_one_period_after_the_first_base_inside_it():
    """The finder reports the circle's true period P one period after the first cycle whose
    state it kept at or after the cycle M the circle starts (M and P found here by
    fingerprinting every cycle), and keeps states geometrically spaced."""
    checked = 0
    for seed, index, objects in _circling_worlds([0], 150):
        engine = Engine(load_manifests(objects))
        seen: dict[tuple, int] = {}
        while True:
            engine.run_cycle()
            state = fingerprint(engine)
            if state in seen:
                entered, period = seen[state], engine.cycle - seen[state]
                break
            seen[state] = engine.cycle
        found = Engine(load_manifests(objects))
        found.run(None)
        kept = found.circle_finder.base_cycles
        first_inside = min(cycle for cycle in kept if cycle >= entered)
        assert found.circle == (first_inside, period), (seed, index, entered, kept)
        gaps = [later - earlier for earlier, later in zip(kept, kept[1:])]
        assert all(gap >= CircleFinder.MIN_GAP for gap in gaps)
        assert all(later <= max(earlier + 40, CircleFinder.SPACING * earlier + 1)
                   for earlier, later in zip(kept, kept[1:])), kept  # small worlds: few decisions
        checked += 1
    assert checked >= 2


def test_fingerprints_share_the_parts_that_did_not_change():
    seed, index, objects = next(_circling_worlds([0], 150))
    engine = Engine(load_manifests(objects))
    engine.run(2)
    memo: dict = {}
    first = fingerprint(engine, memo)
    again = fingerprint(engine, memo)
    assert again == first == fingerprint(engine)
    assert all(a is b for a, b in zip(first[0], again[0]))
    assert all(a is b for a, b in zip(first[2], again[2]))


def test_a_quiet_cycle_is_followed_by_no_change():
    """A run stops at the first cycle that changes nothing, so a run of more cycles ends in the
    same answer. A cycle whose head dropped an outdated flavor-scan position (Kueue's
    lastAssignmentOutdated) and scanned back to where it stood still changed what the next
    cycle resumes from: world 31337042/4852 stopped there, leaving pending a workload the next
    two cycles admit (as Kueue's own scheduler does)."""
    for index in (4852, *range(40)):
        objects = world(31337042, index)
        quiet = Engine(load_manifests(objects))
        quiet.run(None)
        if not quiet.converged:
            continue
        longer = Engine(load_manifests(objects))
        longer.run(quiet.cycle + 10)
        assert EvaluationResult(longer).to_json() == EvaluationResult(quiet).to_json(), index


def test_the_fingerprint_reads_every_field_a_workload_declares_state() -> None:
    """info.STATE_FIELDS declares what of a workload is the engine's state: every field of
    WorkloadInfo is declared state or derived (a new field must be one of them), and the
    circle fingerprint reads every state field (else two states differing there would look
    like one, and a circle be found where there is none)."""
    import ast

    from compiler.evaluator import info
    from compiler.speedups import source_path

    assert sorted(info.STATE_FIELDS + info.DERIVED_FIELDS) == sorted(info.WorkloadInfo.__slots__)
    assert not set(info.STATE_FIELDS) & set(info.DERIVED_FIELDS)
    module = ast.parse(source_path("compiler.evaluator.circles").read_text())  # (the source: it may run compiled)
    tree, = [node for node in module.body if isinstance(node, ast.FunctionDef) and node.name == "fingerprint"]
    read = {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "info"}
    assert set(info.STATE_FIELDS) <= read, sorted(set(info.STATE_FIELDS) - read)
    assert not read & set(info.DERIVED_FIELDS) - {"key"}
