"""answer_bounds: the usage ranges a quota reading's answer holds within. On random cohort trees
(borrowingLimits at every level, some lendingLimits), random usage and random requests, every
move of the other queues' usage that stays within the ranges leaves `available` and
`height_of_lowest_subtree_that_fits` answering exactly as before, and the ranges are not so
wide that no move leaves them (the moves that do leave them change answers)."""

from __future__ import annotations

import random

from compiler.evaluator.answer_bounds import _height_ranges, _Ranges, _unused_ranges
from compiler.evaluator.models import ResourceQuota
from compiler.evaluator.tree import QuotaNode, height_of_lowest_subtree_that_fits

FR = ("f", "gpu")


def _tree(rng: random.Random) -> tuple[QuotaNode, list[QuotaNode]]:
    """A root cohort, one or two levels of cohorts below it, and queues under them."""
    def node(name: str, is_cq: bool, parent: QuotaNode | None, lending: bool) -> QuotaNode:
        nominal = rng.choice([0, 0, 4, 8, 12, 24])
        borrowing = rng.choice([None, None, 0, 4, 12])
        lending_limit = rng.choice([None, None, None, 0, 4]) if lending else None
        made = QuotaNode(name, is_cq, {FR: ResourceQuota(nominal, borrowing, lending_limit)}, 1)
        if parent is not None:
            made.parent = parent
            (parent.child_cqs if is_cq else parent.child_cohorts).append(made)
        return made

    lending = rng.random() < 0.3
    root = QuotaNode("root", False, {FR: ResourceQuota(rng.choice([0, 16, 64]))}, 1)
    cohorts = [node(f"c{i}", False, root, lending) for i in range(rng.randint(1, 3))]
    if rng.random() < 0.5:
        cohorts += [node(f"c{i}-sub", False, rng.choice(cohorts), lending) for i in range(2)]
    queues = [node(f"q{i}", True, rng.choice(cohorts), lending) for i in range(rng.randint(2, 6))]
    root.finalize()
    return root, queues


def _height(queue: QuotaNode, amount: int) -> tuple:
    return height_of_lowest_subtree_that_fits(queue, FR, amount)


def _unused(queue: QuotaNode, amount: int) -> int:
    return queue.available(FR)


def _holds(ranges: _Ranges) -> bool:
    return all(low <= usage.get(fr, 0) <= high for usage, fr, low, high in ranges.listed())


def _check(ranged, answer) -> tuple[int, int, int]:
    """Random trees and moves: within `ranged`'s ranges `answer` stays; (trees bounded, moves
    within, moves out that changed the answer)."""
    bounded = inside = changed_outside = 0
    for seed in range(600):
        rng = random.Random(seed)
        _, queues = _tree(rng)
        held: dict[str, int] = {}
        for queue in queues:
            value = rng.randint(0, 20)
            queue.add_all({FR: value})
            held[queue.name] = value
        asker = rng.choice(queues)
        amount = rng.randint(1, 24)
        before = answer(asker, amount)
        ranges = _Ranges()
        if not ranged(asker, amount, ranges):
            continue  # (a lendingLimit on the way: no ranges, the commit versions decide)
        bounded += 1
        others = [q for q in queues if q is not asker]
        for _ in range(40):
            # another queue's job starts or ends: its usage moves, the asker's stays (mostly
            # by one or two, so that the moves step onto every edge of the ranges)
            other = rng.choice(others)
            step = rng.choice([1, 1, 2, rng.randint(1, 12)])
            if rng.random() < 0.5 and held[other.name] > 0:
                value = min(step, held[other.name])
                other.remove_all({FR: value})
                held[other.name] -= value
            else:
                value = step
                other.add_all({FR: value})
                held[other.name] += value
            if _holds(ranges):
                inside += 1
                assert answer(asker, amount) == before, f"seed {seed}: within the ranges, another answer"
            elif answer(asker, amount) != before:
                changed_outside += 1
    return bounded, inside, changed_outside


def test_the_borrowing_level_holds_within_its_ranges_and_changes_outside() -> None:
    bounded, inside, changed_outside = _check(lambda q, amount, ranges: _height_ranges(q, FR, amount, ranges), _height)
    assert bounded > 200 and inside > 1000 and changed_outside > 100


def test_the_unused_amount_holds_within_its_ranges_and_changes_outside() -> None:
    bounded, inside, changed_outside = _check(lambda q, amount, ranges: _unused_ranges(q, FR, ranges), _unused)
    assert bounded > 200 and inside > 1000 and changed_outside > 100


def test_a_lending_limit_on_the_way_gives_no_ranges() -> None:
    root = QuotaNode("root", False, {FR: ResourceQuota(8)}, 1)
    cohort = QuotaNode("c", False, {FR: ResourceQuota(8, None, 2)}, 1)
    queue = QuotaNode("q", True, {FR: ResourceQuota(4, 4)}, 1)
    cohort.parent, queue.parent = root, cohort
    root.child_cohorts.append(cohort)
    cohort.child_cqs.append(queue)
    root.finalize()
    queue.add_all({FR: 4})
    assert not _unused_ranges(queue, FR, _Ranges())
    assert not _height_ranges(queue, FR, 8, _Ranges())
