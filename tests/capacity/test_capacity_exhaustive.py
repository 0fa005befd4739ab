"""`capacity`'s answer against an exhaustive search, on seeded random worlds simulated for real.

Each world: two pools (random models, GPUs per node and prices), one to three teams in a cohort
with random guarantees and bursts, a random trace. Every candidate of the grid is built as the
search builds it (its guarantee scaling) and simulated to the end with `simulate`'s own code; the
target is one that some candidates of the grid meet and some do not. The search, given the grid,
must answer with the cheapest candidate that meets it, and say that it proved so. (Without the
proof across pools, `--proof-budget 0`, 11 of 40 such worlds get a costlier answer.)
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from compiler.capacity import targets as targets_module
from compiler.capacity.evaluate import evaluate
from compiler.capacity.problem import prepare
from compiler.capacity.search import Search
from compiler.capacity.workers import InProcess

PROBE = "p90-wait<=1s"   # (any wait target: its measured value is each candidate's worst p90 wait)


def _world(rng: random.Random, folder: Path) -> tuple[Path, Path, tuple[str, ...]]:
    models = rng.choice([("V100", "V100"), ("V100", "A100-80GB")])
    per_node = [rng.choice([1, 2, 4, 8]) for _ in models]
    policy = folder / "policy"
    (policy / "teams").mkdir(parents=True)
    pools = "".join(f"    - {{name: p{i}, gpu: {model}, nodes: 3, gpusPerNode: {gpus}, cost: {rng.choice([1, 1.5, 2.5, 3])}}}\n"
                    for i, (model, gpus) in enumerate(zip(models, per_node)))
    (policy / "cluster.yaml").write_text("apiVersion: kueue-policy/v1alpha1\nkind: Cluster\nmetadata: {name: w}\n"
                                         f"spec:\n  pools:\n{pools}  cohorts: [{{name: all}}]\n")
    teams = [f"t{i}" for i in range(rng.randint(1, 3))]
    for team in teams:
        burst = rng.choice(["", ", burst: 4", ", burst: 12"])
        (policy / "teams" / f"{team}.yaml").write_text(
            f"apiVersion: kueue-policy/v1alpha1\nkind: Team\nmetadata: {{name: {team}}}\nspec:\n  cohort: all\n"
            f"  namespaces: [{team}]\n  gpus: {{guaranteed: {rng.randint(0, 2)}{burst}}}\n"
            f"  models: [{', '.join(sorted(set(models)))}]\n")
    rows, largest_pod = ["team,name,at,duration,replicas,gpus"], min(per_node)
    for index in range(rng.randint(20, 45)):
        rows.append(f"{rng.choice(teams)},j{index},{rng.randint(0, 4 * 3600)},{rng.randint(600, 5400)},"
                    f"{rng.choice([1, 1, 2])},{rng.choice([g for g in (1, 2, 4) if g <= largest_pod])}")
    trace = folder / "trace.csv"
    trace.write_text("\n".join(rows) + "\n")
    bounds = (f"p0=1..{rng.randint(2, 6)}", f"p1=1..{rng.randint(2, 6)}")
    return policy, trace, bounds


def _grid(policy: Path, trace: Path, bounds: tuple[str, ...], target: str):
    """The problem and space for `target`, and every candidate of the grid simulated to the end."""
    problem, space, _ = prepare(policy, trace, None, targets_module.from_flags((target,), bounds, ()), (), "keep", False)
    builder = Search(space, None, lambda evaluation, best: None)
    counts = itertools.product(*(range(p.minimum, p.maximum + 1) for p in space.pools))
    every = [evaluate(problem, builder.candidate(tuple((p.name, n) for p, n in zip(space.pools, nodes)), (),
                                                  space.teams), full=True) for nodes in counts]
    return problem, space, every


@pytest.mark.parametrize("seed", range(10))   # (worlds whose grids wait differently)
def test_the_answer_is_the_exhaustive_searchs_cheapest(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    policy, trace, bounds = _world(rng, tmp_path)
    # The target: a p90 wait half-way through the grid's (some candidates meet it, some do not).
    _, _, probed = _grid(policy, trace, bounds, PROBE)
    waits = sorted({e.measured[PROBE] for e in probed if e.measured[PROBE] is not None})
    assert len(waits) >= 2, f"world {seed}: every candidate of its grid waits alike, a world with nothing to search"
    target = f"p90-wait<={int(waits[len(waits) // 2 - 1])}s"
    problem, space, every = _grid(policy, trace, bounds, target)
    meeting = [e for e in every if e.meets]
    assert meeting and len(meeting) < len(every)
    answer = Search(space, InProcess(problem), lambda evaluation, best: None).run()
    assert answer.best is not None, f"world {seed}, {target}: no answer; the grid has {len(meeting)}"
    assert answer.best.answer.cost == min(e.cost for e in meeting), (seed, target)
    assert answer.best.across.proved
