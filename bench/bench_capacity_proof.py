"""Benchmark: how often `capacity`'s proof across pools finishes within `--proof-budget`, on
synthetic worlds of many pools, and whether the answers it proves are the cheapest.

The worlds run the search's own code (compiler/capacity/search.py) with the stand-in simulation
the tests use (`_Monotone` in tests/capacity/test_across_pools.py): a candidate meets the targets
when its GPUs cover each of a few needs over groups of pools. Two kinds of world per size:

- *own pools*: most pools have a need of their own (a team that runs on one GPU model only),
  sometimes one need shared by two pools;
- *shared*: one to three needs over random groups of pools (teams that accept several models).

For small grids the proved answers are compared with the cheapest point of the whole grid; the
grid of many pools is too large for that, and the own-pools worlds of 12 pools are compared with
the cheapest computed pool by pool instead.

    python bench/bench_capacity_proof.py [--worlds 40] [--budget 64]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import platform
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "capacity"), str(ROOT / "tests"), str(ROOT)]

from test_across_pools import _Monotone, _answer, _cost, _grid, _pools  # noqa: E402


def world(seed: int, count: int, span: int, own_pools: bool):
    rng = random.Random(seed)
    pools = [dataclasses.replace(p, current=p.maximum) for p in _pools(rng, count, span)]
    names = [p.name for p in pools]
    top = {p.name: p.maximum * p.gpus_per_node for p in pools}
    needs = []
    if own_pools:
        needs = [(frozenset([name]), rng.randint(0, top[name])) for name in names if rng.random() < 0.8]
        if rng.random() < 0.5:
            pair = frozenset(rng.sample(names, 2))
            needs.append((pair, rng.randint(0, sum(top[n] for n in pair))))
    else:
        for _ in range(rng.randint(1, 3)):
            group = frozenset(rng.sample(names, rng.randint(1, len(names))))
            needs.append((group, rng.randint(0, sum(top[n] for n in group))))
    return pools, needs


def cheapest_pool_by_pool(pools, needs) -> float | None:
    """The cheapest candidate meeting single-pool needs and at most one shared pair of pools."""
    pair = next((sorted(group) for group, _ in needs if len(group) > 1), [])
    by_name = {p.name: p for p in pools}
    best = None
    for combo in itertools.product(*(range(by_name[n].minimum, by_name[n].maximum + 1, by_name[n].granule)
                                     for n in pair)):
        nodes = dict(zip(pair, combo))
        for pool in pools:
            if pool.name not in nodes:
                own = [need for group, need in needs if group == frozenset([pool.name])]
                nodes[pool.name] = next((c for c in range(pool.minimum, pool.maximum + 1, pool.granule)
                                         if all(c * pool.gpus_per_node >= need for need in own)), pool.maximum)
        if _Monotone(pools, needs).meets(nodes):
            best = min(best, _cost(pools, nodes)) if best is not None else _cost(pools, nodes)
    return best


def run(count: int, span: int, own_pools: bool, worlds: int, budget: int) -> str:
    proved = wrong = answered = simulated = 0
    checkable = (span + 1) ** count <= 50_000 or own_pools
    started = time.perf_counter()
    for seed in range(worlds):
        pools, needs = world(seed, count, span, own_pools)
        executor = _Monotone(pools, needs)
        answer = _answer(pools, executor, budget=budget).best
        if answer is None:
            continue
        answered += 1
        simulated += executor.simulated
        if not answer.across.proved:
            continue
        proved += 1
        if (span + 1) ** count <= 50_000:
            truth = min(_cost(pools, n) for n in _grid(pools) if executor.meets(n))
        elif own_pools:
            truth = cheapest_pool_by_pool(pools, needs)
        else:
            continue   # (too large to check: the column says so)
        wrong += answer.answer.cost != truth
    seconds = time.perf_counter() - started
    kind = "own pools" if own_pools else "shared"
    return (f"| {count} | {span + 1} | {kind} | {proved} of {answered} | {wrong if checkable else 'not checked'} | "
            f"{simulated / max(answered, 1):.1f} | {seconds:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=40)
    parser.add_argument("--budget", type=int, default=64)
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, budget {args.budget}")
    print("| pools | values a pool | needs | proved | proved but not the cheapest | simulations a search | s |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for count, span in ((5, 6), (6, 15), (12, 20)):
        for own_pools in (True, False):
            print(run(count, span, own_pools, args.worlds, args.budget), flush=True)


if __name__ == "__main__":
    main()
