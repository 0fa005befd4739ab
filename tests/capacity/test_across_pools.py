"""The proof across pools (compiler/capacity/across_pools.py and `Search._across_pools`): the
cheaper candidates left once the failures seen cover the rest, and a search that, given the
budget, answers with the cheapest candidate of the whole grid whenever meeting the targets grows
with the pools."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
from pathlib import Path
from typing import Callable, NamedTuple

import pytest
from conftest import FIXTURES, one_team_policy
from kp_testing import run_cli

from compiler.capacity.across_pools import every_cheaper, floor_probes, floors, staircase
from compiler.capacity.evaluate import Evaluation
from compiler.capacity.search import Answer, Search
from compiler.capacity.space import PoolSpace, Space, TeamBase
from compiler.capacity.targets import Miss


def _pools(rng: random.Random, count: int, span: int = 5) -> list[PoolSpace]:
    pools = []
    for index in range(count):
        granule = rng.choice([1, 1, 1, 2])
        low = granule * rng.randint(0 if index else 1, 2)
        high = low + granule * rng.randint(0, span)
        pools.append(PoolSpace(f"p{index}", high, low, high, rng.choice([1, 2, 4, 8]), False,
                               granule=granule, price=rng.choice([0.5, 1.0, 1.0, 2.5, 3.0])))
    return pools


def _grid(pools: list[PoolSpace]):
    for counts in itertools.product(*(range(p.minimum, p.maximum + 1, p.granule) for p in pools)):
        yield dict(zip((p.name for p in pools), counts))


def _cost(pools: list[PoolSpace], nodes: dict[str, int]) -> float:
    return round(sum(nodes[p.name] * p.gpus_per_node * p.price for p in pools), 6)


def _at_or_below(low: dict[str, int], high: dict[str, int]) -> bool:
    return all(low[name] <= high[name] for name in low)


def _random_case(seed: int, most_pools: int, most_failures: int):
    """Random pools, their whole grid, a cost to stay below (a grid point's) and some failures."""
    rng = random.Random(seed)
    pools = _pools(rng, rng.randint(1, most_pools))
    grid = list(_grid(pools))
    below = _cost(pools, rng.choice(grid))
    failures = rng.sample(grid, min(len(grid), rng.randint(0, most_failures)))
    for _ in range(rng.choice([0, 0, 1, 2])):   # (failures that set a pool's floor: every other pool at its maximum)
        pool = rng.choice(pools)
        failures.append({p.name: rng.randrange(p.minimum, p.maximum + 1, p.granule) if p is pool else p.maximum
                         for p in pools})
    return pools, grid, below, failures


@pytest.mark.parametrize("seed", range(60))
def test_every_cheaper_candidate_is_covered_or_at_or_below_one_left(seed: int) -> None:
    pools, grid, below, failures = _random_case(seed, most_pools=4, most_failures=6)
    stairs = staircase(pools, below, failures)
    assert stairs.count == len(stairs.open)
    left = [dict(nodes) for nodes in stairs.open]
    cheaper = [nodes for nodes in grid if _cost(pools, nodes) < below]
    for nodes in cheaper:
        assert (any(_at_or_below(nodes, f) for f in failures) or any(_at_or_below(nodes, o) for o in left)), nodes
    # ... and only what must be: each left is cheaper, uncovered, and has no cheaper candidate above it.
    for nodes in left:
        assert nodes in cheaper and not any(_at_or_below(nodes, f) for f in failures)
        assert not any(other != nodes and _at_or_below(nodes, other) for other in cheaper)
    costs = [_cost(pools, nodes) for nodes in left]
    assert costs == sorted(costs, reverse=True)


@pytest.mark.parametrize("seed", range(60))
def test_every_cheaper_candidate_no_failure_covers_is_left_when_asked(seed: int) -> None:
    pools, grid, below, failures = _random_case(seed, most_pools=4, most_failures=6)
    stairs = staircase(pools, below, failures, every=True)
    expected = [nodes for nodes in grid
                if _cost(pools, nodes) < below and not any(_at_or_below(nodes, f) for f in failures)]
    assert sorted(map(sorted, (dict(o).items() for o in stairs.open))) == sorted(map(sorted, (n.items() for n in expected)))


def test_past_keep_they_are_counted_not_kept() -> None:
    pools = [PoolSpace("a", 9, 1, 9, 1, False), PoolSpace("b", 9, 1, 9, 1, False)]
    every = staircase(pools, 10.0, [], every=True)
    kept = staircase(pools, 10.0, [], every=True, keep=5)
    assert every.count == len(every.open) == 36 and kept.count == 36 and kept.open == []
    assert not kept.within(35) and kept.within(36)
    # Every candidate, for the whole-grid proof: listed within the most asked for, else None.
    listed = every_cheaper(pools, 10.0, 36)
    assert listed is not None and sorted(listed) == sorted(every.open) and every_cheaper(pools, 10.0, 35) is None


def test_too_many_pools_to_list_is_said_not_guessed() -> None:
    pools = [PoolSpace(f"p{i}", 40, 1, 40, 1, False, price=1.0 + i / 100) for i in range(8)]
    stairs = staircase(pools, 150.0, [])
    assert stairs.count is None and stairs.open == []


class _Monotone:
    """An executor whose candidates meet the targets when their GPUs cover every need: a world
    where fewer nodes never help, so the cheapest candidate of the grid is the one answer."""

    workers = 1

    def __init__(self, pools: list[PoolSpace], needs: list[tuple[frozenset[str], int]],
                 ceilings: dict[str, int] | None = None) -> None:
        # ceilings: a pool with more nodes than this misses a target that grows with the pools
        # (as preemptions do: more room to borrow, more to reclaim), whatever its waits.
        self.pools, self.needs, self.ceilings, self.simulated = pools, needs, ceilings or {}, 0

    def misses(self, nodes: dict[str, int]) -> list[Miss]:
        per_node = {p.name: p.gpus_per_node for p in self.pools}
        found = [Miss("p95 wait > 30.0 min")] if any(
            sum(nodes[n] * per_node[n] for n in group) < need for group, need in self.needs) else []
        return found + [Miss(f"{pool}: preemptions > 0", True) for pool, most in self.ceilings.items()
                        if nodes[pool] > most]

    def meets(self, nodes: dict[str, int]) -> bool:
        return not self.misses(nodes)

    def evaluate(self, candidates, done, full=False, running=None):
        results = []
        for candidate in candidates:
            nodes = dict(candidate.nodes)
            misses = self.misses(nodes)
            meets = not misses
            gpus = {p.name: nodes[p.name] * p.gpus_per_node for p in self.pools}
            results.append(Evaluation(candidate, _cost(self.pools, nodes), gpus, meets, misses))
            self.simulated += 1
            done(results[-1])
        return results

    def close(self) -> None:
        pass


def _world(seed: int, span: int = 5) -> tuple[list[PoolSpace], _Monotone]:
    rng = random.Random(seed)
    pools = [dataclasses.replace(p, current=p.maximum) for p in _pools(rng, rng.randint(2, 3), span)]
    names = [p.name for p in pools]
    top = {p.name: p.maximum * p.gpus_per_node for p in pools}
    needs = []
    for _ in range(rng.randint(1, 3)):
        group = frozenset(rng.sample(names, rng.randint(1, len(names))))
        needs.append((group, rng.randint(0, sum(top[n] for n in group))))
    return pools, _Monotone(pools, needs)


def _answer(pools: list[PoolSpace], executor: _Monotone, budget: int):
    space = Space(pools, [], 1.0, [()], "keep")
    return Search(space, executor, lambda evaluation, best: None, proof_budget=budget).run()


class _Compared(NamedTuple):
    """A world's grid against the search on it."""

    cheapest: float | None   # the cost of the grid's cheapest candidate that meets the targets (None: none does)
    proved: Answer           # the search with a budget larger than any grid
    descent_only: Answer     # the search with no proof across pools (budget 0)


def _compare(pools: list[PoolSpace], make_executor: Callable[[], _Monotone]) -> _Compared:
    feasible = [nodes for nodes in _grid(pools) if make_executor().meets(nodes)]
    cheapest = min((_cost(pools, nodes) for nodes in feasible), default=None)
    return _Compared(cheapest, _answer(pools, make_executor(), budget=10_000), _answer(pools, make_executor(), budget=0))


def test_with_the_budget_the_answer_is_the_cheapest_of_the_grid_on_every_world() -> None:
    missed_without = 0
    for seed in range(150):
        pools, executor = _world(seed)
        compared = _compare(pools, lambda: _Monotone(pools, executor.needs))
        if compared.cheapest is None:
            assert compared.proved.best is None
            continue
        assert compared.proved.best.answer.cost == compared.cheapest, seed
        assert compared.proved.best.across.proved
        without = compared.descent_only.best
        missed_without += without.answer.cost > compared.cheapest
        assert not without.across.proved or without.answer.cost == compared.cheapest
    # (the positive control: the descent alone, no proof across pools, misses the cheapest on some worlds)
    assert missed_without > 0


def test_a_budget_short_of_the_staircase_says_how_many_are_left() -> None:
    pools = [PoolSpace("cheap", 12, 1, 12, 1, False, price=1.0), PoolSpace("dear", 12, 1, 12, 1, False, price=1.5)]
    executor = _Monotone(pools, [(frozenset({"cheap", "dear"}), 12)])
    answer = _answer(pools, executor, budget=1)
    across = answer.best.across
    assert not across.proved and across.left > 1 and across.checked <= 1   # (within the budget, the staircase unbegun)
    assert _answer(pools, _Monotone(pools, executor.needs), budget=10_000).best.across.proved


def test_the_cli_trades_dear_nodes_for_cheap_ones_the_descent_left(tmp_path: Path) -> None:
    # 21 one-GPU jobs at once, all to start within 10 minutes: cheap + 2 x dear >= 21 GPUs. By hand,
    # over cheap 2..6 and dear 1..10: cheap=5, dear=8 costs 5 + 8 x 2 x 2.5 = 45/h (dear=9 needs
    # cheap=3: 48; dear=10, cheap=2: 52; dear=7 would need 7 cheap nodes). The descent alone stops
    # at 52: it takes the cheap pool down first, and no single pool can then shrink.
    policy = one_team_policy(tmp_path / "policy", ["{name: cheap, gpu: V100, nodes: 6, gpusPerNode: 1, cost: 1.0}",
                                                   "{name: dear, gpu: V100, nodes: 10, gpusPerNode: 2, cost: 2.5}"], 26)
    trace = tmp_path / "trace.csv"
    trace.write_text("team,name,at,duration,replicas,gpus\n" + "".join(f"a,j{i},0,3600,1,1\n" for i in range(21)))
    flags = ("--target", "within-10m>=100%", "--nodes", "cheap=2..6", "--nodes", "dear=1..10", "--guarantees", "keep",
             "--workers", "1", "--format", "json")

    def answer(*more: str) -> dict:
        done = run_cli("capacity", str(policy), "--trace", str(trace), *flags, *more)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    proved = answer()
    assert proved["answer"]["costPerHour"] == 45.0
    assert {p["pool"]: p["nodes"] for p in proved["answer"]["pools"]} == {"cheap": 5, "dear": 8}
    assert proved["proofAcrossPools"]["proved"] and proved["proofAcrossPools"]["left"] == 0
    descent_only = answer("--proof-budget", "0")
    assert descent_only["answer"]["costPerHour"] == 52.0
    assert descent_only["proofAcrossPools"] == {"proved": False, "checked": 0, "left": 1, "everyCheaper": False,
                                                "assumes": "fewer nodes never shorten a wait"}


def test_a_smaller_pool_that_lets_a_job_fit_a_flavor_is_found_on_a_small_grid() -> None:
    # The largest candidate misses a wait a smaller one meets (fixtures/burst-split/cluster.yaml
    # says how): the grid is small, so every candidate is simulated.
    policy, trace = FIXTURES / "burst-split", FIXTURES / "burst-split.csv"
    flags = ("--target", "p100-wait<=1h", "--fixed", "l40s", "--nodes", "h100=1..2", "--guarantees", "keep",
             "--workers", "1", "--format", "json")
    done = run_cli("capacity", str(policy), "--trace", str(trace), *flags)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {p["pool"]: p["nodes"] for p in data["answer"]["pools"]} == {"l40s": 2, "h100": 1}
    assert "found by simulating every candidate within the bounds" in data["answer"]["guarantees"]
    assert data["proofAcrossPools"]["everyCheaper"] and data["proofAcrossPools"]["assumes"] is None
    # (the positive control: with no budget the largest's miss is taken to hold below it, and said to)
    refused = run_cli("capacity", str(policy), "--trace", str(trace), *flags, "--proof-budget", "0")
    assert refused.returncode == 1
    assert "more candidates than --proof-budget (0)" in refused.stdout


def test_with_a_target_that_grows_with_the_pools_the_answer_is_the_cheapest_of_the_grid() -> None:
    missed_without = 0
    for seed in range(150):
        pools, executor = _world(seed)
        rng = random.Random(seed * 7 + 1)
        pool = rng.choice([p for p in pools if p.movable] or pools)
        ceilings = {pool.name: rng.randint(pool.minimum, pool.maximum)}
        compared = _compare(pools, lambda: _Monotone(pools, executor.needs, ceilings))
        if compared.cheapest is None:
            assert compared.proved.best is None
            continue
        assert compared.proved.best is not None and compared.proved.best.answer.cost == compared.cheapest, seed
        without = compared.descent_only.best
        missed_without += without is None or without.answer.cost > compared.cheapest
    assert missed_without > 0   # (the positive control: the descent alone misses some)


def test_past_the_budget_a_staircase_covered_by_failures_proves_the_cheapest() -> None:
    # Grids of up to 14 x 14 x 14 candidates, a budget of 24: too few to simulate every cheaper
    # candidate, enough for the maximal ones no failure covers.
    by_staircase = 0
    for seed in range(120):
        pools, executor = _world(seed, span=13)
        feasible = [nodes for nodes in _grid(pools) if executor.meets(nodes)]
        answer = _answer(pools, executor, budget=24)
        if not feasible or answer.best is None:
            continue
        across = answer.best.across
        if across.proved:
            assert answer.best.answer.cost == min(_cost(pools, nodes) for nodes in feasible), seed
            by_staircase += not across.every_cheaper
    assert by_staircase >= 30


@pytest.mark.parametrize("seed", range(40))
def test_floor_probes_find_the_fewest_nodes_each_pool_needs_with_the_others_at_their_maximum(seed: int) -> None:
    pools, executor = _world(seed, span=9)
    meeting = [nodes for nodes in _grid(pools) if executor.meets(nodes)]
    if not meeting:
        return
    answer = random.Random(seed).choice(meeting)
    asked = []

    def misses_a_wait(probes):
        asked.extend(probes)
        return [not executor.meets(dict(nodes)) for nodes in probes]

    found = floor_probes(pools, answer, [], misses_a_wait, budget=10_000)
    assert all(not executor.meets(failure) for failure in found)
    low = floors(pools, found)
    for pool in pools:
        top = {p.name: p.maximum for p in pools}
        fewest = min(count for count in range(pool.minimum, answer[pool.name] + 1, pool.granule)
                     if executor.meets({**top, pool.name: count}))
        assert low[pool.name] == fewest, (seed, pool.name)
    # Within a budget: no more simulated than it allows.
    asked.clear()
    floor_probes(pools, answer, [], misses_a_wait, budget=2)
    assert len(asked) <= 2


def test_pools_that_serve_their_own_teams_are_proved_past_the_staircase(monkeypatch: pytest.MonkeyPatch) -> None:
    # Twelve pools of 1-20 nodes, each short of GPUs below its own need: the maximal cheaper
    # candidates are far too many to list, but each pool's floor (one simulation) covers them.
    rng = random.Random(12)
    pools = [PoolSpace(f"p{i:02}", 20, 1, 20, rng.choice([1, 2, 8]), False, price=rng.choice([1.0, 2.5]))
             for i in range(12)]
    needs = [(frozenset({p.name}), rng.randint(1, 20) * p.gpus_per_node) for p in pools]
    fewest = {p.name: -(-need // p.gpus_per_node) for p, (_, need) in zip(pools, needs)}
    answer = _answer(pools, _Monotone(pools, needs), budget=64).best
    assert dict(answer.answer.candidate.nodes) == fewest
    assert answer.across.proved and answer.across.checked <= 64
    # (the positive control: without the floors the cheaper candidates cannot be listed)
    monkeypatch.setattr("compiler.capacity.search.floor_probes", lambda *args: [])
    assert not _answer(pools, _Monotone(pools, needs), budget=64).best.across.proved


def test_the_cli_proves_pools_of_their_own_teams_with_floor_probes_under_a_small_budget() -> None:
    # fixtures/own-pools/cluster.yaml gives the answer by hand: v=4, l=2, h=3, a=5, 29.5/h.
    policy, trace = FIXTURES / "own-pools", FIXTURES / "own-pools.csv"
    flags = ("--target", "within-10m>=100%", "--guarantees", "keep", "--workers", "1", "--format", "json")

    def answer(budget: str) -> dict:
        done = run_cli("capacity", str(policy), "--trace", str(trace), *flags, "--proof-budget", budget)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    proved = answer("8")
    assert {p["pool"]: p["nodes"] for p in proved["answer"]["pools"]} == {"v": 4, "l": 2, "h": 3, "a": 5}
    assert proved["answer"]["costPerHour"] == 29.5
    assert proved["proofAcrossPools"]["proved"] and 0 < proved["proofAcrossPools"]["checked"] <= 8
    # (the control: the staircase the descent leaves holds more than 8, so the floors proved it)
    unproved = answer("0")["proofAcrossPools"]
    assert not unproved["proved"] and unproved["left"] > 8


class _TwoGuarantees(_Monotone):
    """The policy's guarantees (two teams) meet the targets from 6 nodes on; demand's (one team)
    from 3 nodes on, but with more than 2 nodes in p0 they strand jobs, a miss that grows with
    the pools: demand's largest candidate misses, and a smaller one meets."""

    def misses(self, nodes: dict[str, int], policy: bool = True) -> list[Miss]:
        total = nodes["p0"] + nodes["p1"]
        if policy:
            return [] if total >= 6 else [Miss("p95 wait > 30.0 min")]
        found = [] if total >= 3 else [Miss("p95 wait > 30.0 min")]
        return found + ([Miss("jobs on nodes too small for their pods", True)] if nodes["p0"] > 2 else [])

    def evaluate(self, candidates, done, full=False, running=None):
        results = []
        for candidate in candidates:
            nodes = dict(candidate.nodes)
            misses = self.misses(nodes, policy=len(candidate.quotas or ()) != 1)
            results.append(Evaluation(candidate, _cost(self.pools, nodes), {}, not misses, misses))
            done(results[-1])
        return results


def test_each_set_of_guarantees_descends_below_its_own_largest_candidate() -> None:
    pools = [PoolSpace("p0", 4, 1, 4, 1, False), PoolSpace("p1", 4, 1, 4, 1, False)]
    policy = [TeamBase("t", 1, (), ("p0", "p1")), TeamBase("u", 0, (), ("p0", "p1"))]
    space = Space(pools, policy, 1.0, [()], "demand", {(): [TeamBase("t", 1, (), ("p0", "p1"))]})
    answer = Search(space, _TwoGuarantees(pools, []), lambda evaluation, best: None).run()
    assert answer.best.answer.cost == 3.0   # (demand's, below its largest; the policy's cannot go under 6)
    assert "found below a largest candidate" in answer.best.guarantees_note


class _PolicyMeetsLower(_TwoGuarantees):
    """Demand's guarantees (one team) meet the targets from 5 nodes on. The policy's (two teams)
    miss a wait at the largest candidate, and meet it only with at most 1 node in p0 and 3 or
    more in all (as a burst split over flavors by size can make them)."""

    def misses(self, nodes: dict[str, int], policy: bool = True) -> list[Miss]:
        total = nodes["p0"] + nodes["p1"]
        meets = (nodes["p0"] <= 1 and total >= 3) if policy else total >= 5
        return [] if meets else [Miss("p95 wait > 30.0 min")]


def test_guarantees_whose_largest_misses_a_wait_are_searched_below_the_others_answer() -> None:
    pools = [PoolSpace("p0", 4, 1, 4, 1, False), PoolSpace("p1", 4, 1, 4, 1, False)]
    policy = [TeamBase("t", 1, (), ("p0", "p1")), TeamBase("u", 0, (), ("p0", "p1"))]
    space = Space(pools, policy, 1.0, [()], "demand", {(): [TeamBase("t", 1, (), ("p0", "p1"))]})
    answer = Search(space, _PolicyMeetsLower(pools, []), lambda evaluation, best: None).run().best
    assert answer.answer.cost == 3.0 and dict(answer.answer.candidate.nodes) == {"p0": 1, "p1": 2}
    assert "found by simulating every cheaper candidate" in answer.guarantees_note
    # (demand's answer alone would be 5: with no budget the policy's cheaper candidates stay unsimulated)
    unproved = Search(space, _PolicyMeetsLower(pools, []), lambda evaluation, best: None, proof_budget=0).run().best
    assert unproved.answer.cost == 5.0

