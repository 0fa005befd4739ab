"""bounds_watch: after any commits, `crossed` names exactly the watched trails whose answer
bounds no longer hold (no more: a queue woken for nothing is walked for nothing; no fewer: a
quiet queue left asleep past a crossing decides what the plain engine would not). On random
cohort trees, trails watch random ranges of their ancestors' usage around the state they were
found in; queues' usage moves by small steps (onto every edge of the ranges), queues' own
commits move their own versions, trails are forgotten and watched anew (the heaps are compacted
often), and after every batch of commits the answer is compared with `UsageBounds.hold`."""

from __future__ import annotations

import random

import pytest

from compiler.evaluator import bounds_watch
from compiler.evaluator.answer_bounds import NO_LIMIT, UsageBounds
from compiler.evaluator.bounds_watch import BoundsWatch
from compiler.evaluator.models import ResourceQuota
from compiler.evaluator.quiet_set import CheckedTrail
from compiler.evaluator.tree import QuotaNode

PAIRS = (("f", "gpu"), ("g", "gpu"))


def _tree(rng: random.Random) -> dict[str, QuotaNode]:
    """A root cohort, cohorts (some nested) under it, and queues under those; by name."""
    quotas = {fr: ResourceQuota(rng.choice([0, 8, 24])) for fr in PAIRS}
    root = QuotaNode("root", False, quotas, 1)
    cohorts = [root]
    for index in range(rng.randint(1, 4)):
        parent = rng.choice(cohorts)
        cohort = QuotaNode(f"c{index}", False, {fr: ResourceQuota(8) for fr in PAIRS}, 1)
        cohort.parent = parent
        parent.child_cohorts.append(cohort)
        cohorts.append(cohort)
    queues = {}
    for index in range(rng.randint(2, 8)):
        parent = rng.choice(cohorts[1:])
        queue = QuotaNode(f"q{index}", True, {fr: ResourceQuota(4) for fr in PAIRS}, 1)
        queue.parent = parent
        parent.child_cqs.append(queue)
        queues[queue.name] = queue
    root.finalize()
    return queues


class _OwnVersions:
    """A queue's own commit versions (what Snapshot.queue_version_reader reads)."""

    def __init__(self) -> None:
        self.version = 0

    def __call__(self) -> int:
        return self.version


def _trail(rng: random.Random, queue: QuotaNode, own: _OwnVersions) -> CheckedTrail:
    """A trail whose bounds are random ranges of its queue's ancestors' usage around now (some
    one-sided, some a single value)."""
    ranges = []
    ancestor = queue.parent
    while ancestor is not None:
        for fr in PAIRS:
            if rng.random() < 0.6:
                used = ancestor.usage.get(fr, 0)
                low = rng.choice([-NO_LIMIT, used, used - rng.randint(1, 3)])
                high = rng.choice([NO_LIMIT, used, used + rng.randint(1, 3)])
                ranges.append((ancestor.usage, fr, low, high))
        ancestor = ancestor.parent
    bounds = UsageBounds(own, own(), ranges, frozenset(PAIRS))
    assert bounds.hold()
    return CheckedTrail([], None, None, bounds)


def _commit(rng: random.Random, queues: dict[str, QuotaNode], held: dict, own: dict, moved: list) -> None:
    """A job of a random queue starts or ends (or only its own versions move)."""
    name = rng.choice(sorted(queues))
    fr = rng.choice(PAIRS)
    step = rng.choice([1, 1, 2, rng.randint(1, 6)])
    if rng.random() < 0.5 and held[name, fr] >= step:
        queues[name].remove_all({fr: step})
        held[name, fr] -= step
    else:
        queues[name].add_all({fr: step})
        held[name, fr] += step
    own[name].version += 1
    moved.extend([name, (fr,)])


def _run(seed: int) -> tuple[int, int]:
    """One random world: (batches checked, trails crossed)."""
    rng = random.Random(seed)
    queues = _tree(rng)
    held = {(name, fr): 0 for name in queues for fr in PAIRS}
    own = {name: _OwnVersions() for name in queues}
    watch = BoundsWatch(queues)
    trails: dict[str, CheckedTrail] = {}
    crossings = 0
    for name in sorted(queues):
        trails[name] = _trail(rng, queues[name], own[name])
        watch.watch(name, trails[name])
    for batch in range(60):
        moved: list = []
        for _ in range(rng.randint(0, 4)):
            _commit(rng, queues, held, own, moved)
        expected = sorted(name for name, trail in trails.items() if trail.watched and not trail.bounds.hold())
        found = watch.crossed(moved)
        assert sorted(found) == expected, f"seed {seed}, batch {batch}"
        assert len(found) == len(set(found))
        crossings += len(found)
        for name in sorted(queues):
            trail = trails[name]
            if not trail.watched or rng.random() < 0.1:
                # crossed, or its queue woke: found quiet again around the state now
                watch.forget(name, trail)
                trails[name] = _trail(rng, queues[name], own[name])
                watch.watch(name, trails[name])
    return 60, crossings


@pytest.mark.parametrize("slack", [0, 4096])
def test_crossed_names_exactly_the_trails_whose_bounds_no_longer_hold(monkeypatch, slack) -> None:
    monkeypatch.setattr(bounds_watch, "_COMPACT_SLACK", slack)
    crossings = 0
    for seed in range(150):
        crossings += _run(seed)[1]
    assert crossings > 1000  # (the moves do cross bounds: the comparison is not vacuous)


def test_a_trail_forgotten_is_never_named() -> None:
    rng = random.Random(7)
    queues = _tree(rng)
    own = {name: _OwnVersions() for name in queues}
    watch = BoundsWatch(queues)
    name = sorted(queues)[0]
    trail = _trail(rng, queues[name], own[name])
    watch.watch(name, trail)
    watch.forget(name, trail)
    queues[name].add_all({PAIRS[0]: 50, PAIRS[1]: 50})
    own[name].version += 1
    assert watch.crossed([name, PAIRS]) == []
