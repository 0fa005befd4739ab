"""`verify` against the live API server and Kueue's webhooks, on random mutations of a compiled
tree (kp_testing.tree_mutations): wherever verify passes a mutant, the live server accepts it;
wherever verify refuses it, the live server refuses it too, or the difference is one that
docs/how-to/sandbox.md explains. A fixed seed here; `KUEUE_POLICY_MUTATION_SEED` and
`KUEUE_POLICY_MUTATIONS` choose others by hand. bench/bench_verify_live.py reports the rate."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kp_testing import REPO_ROOT
from kp_testing.live_verify import explained, judge_all
from kp_testing.sandbox import compile_tree

pytestmark = pytest.mark.usefixtures("sandbox_built")

SEED = int(os.environ.get("KUEUE_POLICY_MUTATION_SEED", "20261203"))
COUNT = int(os.environ.get("KUEUE_POLICY_MUTATIONS", "150"))


def test_verify_and_the_live_api_server_agree_on_mutated_trees(tmp_path: Path) -> None:
    tree = compile_tree(REPO_ROOT / "policies", tmp_path / "out")
    judged = judge_all(tree, tmp_path / "sandbox", SEED, COUNT)
    refused = [j for j in judged if j.live_refuses]
    assert 0.2 * COUNT < len(refused) < 0.95 * COUNT   # the mutations are a mix of both
    disagreements = [f"{j.mutant.obj['kind']} {j.mutant.description}: verify "
                     f"{'refuses (' + j.verify_says + ')' if j.verify_refuses else 'passes'}, the API server "
                     f"{'refuses (' + j.live_says[:300] + ')' if j.live_refuses else 'accepts'}"
                     for j in judged if j.verify_refuses != j.live_refuses and explained(j) is None]
    assert disagreements == []
    # The agreement is mostly outright: the documented differences are a few of the mutants.
    assert sum(j.verify_refuses == j.live_refuses for j in judged) >= 0.9 * COUNT
