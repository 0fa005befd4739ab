"""The Python engine side by side with the oracle (Kueue's own scheduler, `kueue-oracle`) on
the same input file: wall and CPU time of each command, and how many workloads get the same
outcome (status, ClusterQueue, flavors, counts, preemptor).

    .venv/bin/python bench/bench_engines.py --sizes 500 2000 [--setting LowerPriority/Any | --matrix]
        [--oracle PATH]   # default: oracle/bin/kueue-oracle (built by `make oracle`)

`--matrix` runs every preemption setting (and fair sharing) in turn; the Python engine's
decisions per CPU second are measured in-process on the same world (bench_evaluate.one).

The world is bench_evaluate.generate() with every queue preempting (issue 8's world when the
setting is LowerPriority/Any). Both commands are run as a user would run them; the times are
those of the whole command (reading the YAML included).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_evaluate import SETTINGS, one, options, write_world  # noqa: E402

FIELDS = ("status", "clusterQueue", "assignment", "count", "preemptedBy")


def timed(command: list[str]) -> tuple[dict, float, float]:
    """(JSON output, wall seconds, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({out.returncode}): {out.stderr.strip()[:500]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(out.stdout), wall, cpu


def agreement(ours: dict, theirs: dict) -> tuple[int, int, list[str]]:
    a = {w["name"]: w for w in ours["workloads"]}
    b = {w["name"]: w for w in theirs["workloads"]}
    names = sorted(set(a) | set(b))
    differ = [n for n in names if any(a.get(n, {}).get(f) != b.get(n, {}).get(f) for f in FIELDS)]
    return len(names) - len(differ), len(names), differ


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--setting", default="LowerPriority/Any", choices=SETTINGS)
    parser.add_argument("--matrix", action="store_true", help="every setting in turn")
    parser.add_argument("--oracle", default=os.environ.get("KUEUE_ORACLE", str(HERE.parent / "oracle/bin/kueue-oracle")))
    args = parser.parse_args()
    if not Path(args.oracle).is_file():
        print(f"no oracle binary at {args.oracle} (build it with `make oracle`)")
        return 1
    python = [sys.executable, "-m", "compiler", "evaluate"]
    with tempfile.TemporaryDirectory() as tmp:
        for setting in (SETTINGS if args.matrix else [args.setting]):
            for size in args.sizes:
                if not side_by_side(setting, size, tmp, python, args.oracle):
                    return 1
    return 0


def side_by_side(setting: str, size: int, tmp: str, python: list[str], oracle: str) -> bool:
    """Both engines on one world file; prints one line; True when every outcome agrees."""
    world = os.path.join(tmp, f"world-{size}.yaml")
    write_world(world, size, **options(setting, True))
    ours, our_wall, our_cpu = timed(python + [world, "--format", "json"])
    theirs, their_wall, their_cpu = timed([oracle, world])
    same, total, differ = agreement(ours, theirs)
    engine = one(size, setting, True)  # the evaluation alone, in-process: decisions per CPU second
    print(f"{setting} {size} workloads: python {our_wall:.2f}s wall {our_cpu:.2f}s CPU "
          f"({engine['decisions'] / engine['evaluate_cpu_s']:,.0f} decisions/s, {engine['cycles']} cycles); "
          f"kueue-oracle {their_wall:.2f}s wall {their_cpu:.2f}s CPU; "
          f"wall ratio oracle/python {their_wall / our_wall:.1f}; same outcome {same}/{total}"
          + (f" (differ: {', '.join(differ[:5])}{' ...' if len(differ) > 5 else ''})" if differ else ""),
          flush=True)
    return same == total


if __name__ == "__main__":
    sys.exit(main())
