"""Benchmark: `kueue-policy capacity` on the MIG benchmark (bench/data/mig-mixed, made by
bench/generate_mig_trace.py): the measured MIG claim and the sweep's scaling over workers.

1. GPUs needed: the cheapest pool that keeps every team's p95 wait within the target, with
   whole GPUs (`--mig h100=none`: a job asking for GPU memory takes one GPU) and with the pool
   cut by the MIG planner (`--mig h100=planned`), and each team's p95 wait in both answers.
2. Scaling: the same search (`--mig h100=both`) with 1, 2 and more workers; the answers must be
   byte-identical (but for the `workers` field), the wall time is what changes.

    python bench/bench_capacity.py [--target 'p95-wait<=30m'] [--workers 1 2 4]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

EXE = str(Path(sys.executable).parent / "kueue-policy")
DATA = Path(__file__).resolve().parent / "data" / "mig-mixed"


def capacity(*arguments: str) -> tuple[dict, float]:
    start = time.perf_counter()
    done = subprocess.run([EXE, "capacity", str(DATA / "policy"), "--trace", str(DATA / "trace.csv"),
                           "--format", "json", "--quiet", *arguments], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(done.stderr)
    return json.loads(done.stdout), wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default="p95-wait<=30m")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"trace: {DATA / 'trace.csv'} ({sum(1 for _ in open(DATA / 'trace.csv')) - 1} jobs); target {args.target}")
    for cut in ("none", "planned"):
        data, wall = capacity("--target", args.target, "--mig", f"h100={cut}", "--workers", "2")
        answer = data["answer"]
        pool = answer["pools"][0]
        waits = ", ".join(f"{t['team']} {t['wait']['p95'] / 60:.1f} min" for t in answer["teams"])
        layouts = "; ".join(f"{l['count']} x {l['profiles']}" for l in pool["migLayouts"]) or "whole GPUs"
        print(f"mig {cut:7}: {pool['gpus']} GPUs ({data['evaluated']} candidates, {wall:.1f} s); p95 waits: {waits}; "
              f"{layouts}; one fewer: " + " | ".join("; ".join(p["misses"]) for p in data["proof"]))
    reference = None
    for workers in args.workers:
        data, wall = capacity("--target", args.target, "--mig", "h100=both", "--workers", str(workers))
        data.pop("workers")
        same = reference is None or data == reference
        reference = reference or data
        print(f"--workers {workers}: {wall:6.1f} s wall for {data['evaluated']} candidates; "
              f"answer {data['answer']['candidate']}; {'same answer' if same else 'DIFFERENT ANSWER'}")


if __name__ == "__main__":
    main()
