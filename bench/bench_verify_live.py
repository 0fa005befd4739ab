"""How often `verify` and a live API server with Kueue's webhooks agree on random one-field
mutations of a compiled tree (the sandbox must be built: `make sandbox`).

    .venv/bin/python bench/bench_verify_live.py [--seeds 1 2 3] [--count 300] [--policy policies]

For each seed: the mutants, how many the live server refused, how many verify judged alike, and
each disagreement with the documented difference it is an instance of (docs/how-to/sandbox.md),
or UNEXPLAINED.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from kp_testing.live_verify import explained, judge_all  # noqa: E402
from kp_testing.sandbox import compile_tree  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--policy", type=Path, default=REPO / "policies")
    args = parser.parse_args()
    unexplained = 0
    with tempfile.TemporaryDirectory(prefix="kp-bench-verify-live-") as tmp:
        tree = compile_tree(args.policy, Path(tmp) / "out")
        for seed in args.seeds:
            judged = judge_all(tree, Path(tmp) / f"sandbox-{seed}", seed, args.count)
            agree = sum(j.verify_refuses == j.live_refuses for j in judged)
            refused = sum(j.live_refuses for j in judged)
            print(f"seed {seed}: {len(judged)} mutants, live refused {refused}, agree {agree} "
                  f"({100 * agree / len(judged):.1f}%)", flush=True)
            for j in judged:
                if j.verify_refuses != j.live_refuses:
                    why = explained(j)
                    unexplained += why is None
                    print(f"  {why or 'UNEXPLAINED'}: {j.mutant.obj['kind']} {j.mutant.description[:80]}")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
