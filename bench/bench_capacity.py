"""Benchmark: `kueue-policy capacity` on the MIG benchmark (bench/data/mig-mixed, made by
bench/generate_mig_trace.py): the measured MIG claim and the sweep's scaling over workers.

1. GPUs needed: the cheapest pool that keeps every team's p95 wait within the target, with
   whole GPUs (`--mig h100=none`: a job asking for GPU memory takes one GPU) and with the pool
   cut by the MIG planner (`--mig h100=planned`), and each team's p95 wait in both answers.
2. Scaling: a search whose simulations are long enough to measure (the same generator, 10,000
   jobs, whole GPUs) with 1, 2 and more workers; the answers must be byte-identical (but for the
   `workers` field), the wall time is what changes.

    python bench/bench_capacity.py [--target 'p95-wait<=30m'] [--workers 1 2 4] [--scaling-jobs 10000] [--full-runs]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXE = str(Path(sys.executable).parent / "kueue-policy")
DATA = Path(__file__).resolve().parent / "data" / "mig-mixed"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)   # the CLI and its reaped workers
    return usage.ru_utime + usage.ru_stime


def capacity(*arguments: str, data: Path = DATA) -> tuple[dict, float]:
    start = time.perf_counter()
    done = subprocess.run([EXE, "capacity", str(data / "policy"), "--trace", str(data / "trace.csv"),
                           "--format", "json", "--quiet", *arguments], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(done.stderr)
    return json.loads(done.stdout), wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default="p95-wait<=30m")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--scaling-jobs", type=int, default=10_000)
    parser.add_argument("--cuts", nargs="*", default=["none", "planned"], help="the MIG comparison's cuts (none: skip)")
    parser.add_argument("--full-runs", action="store_true",
                        help="capacity --full-runs: every candidate simulated to the end (what the sweep cost before "
                             "failing candidates stopped early)")
    args = parser.parse_args()
    full = ("--full-runs",) if args.full_runs else ()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"trace: {DATA / 'trace.csv'} ({sum(1 for _ in open(DATA / 'trace.csv')) - 1} jobs); target {args.target}")
    for cut in args.cuts:
        data, wall = capacity("--target", args.target, "--mig", f"h100={cut}", "--workers", "2", *full)
        answer = data["answer"]
        pool = answer["pools"][0]
        waits = ", ".join(f"{t['team']} {t['wait']['p95'] / 60:.1f} min" for t in answer["teams"])
        layouts = "; ".join(f"{l['count']} x {l['profiles']}" for l in pool["migLayouts"]) or "whole GPUs"
        print(f"mig {cut:7}: {pool['gpus']} GPUs ({data['evaluated']} candidates, {wall:.1f} s); p95 waits: {waits}; "
              f"{layouts}; one fewer: " + " | ".join("; ".join(p["misses"]) for p in data["proof"]))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from generate_mig_trace import generate

    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp), args.scaling_jobs, 28, 9.0)
        reference = None
        for workers in args.workers:
            cpu = _cpu()
            data, wall = capacity("--target", args.target, "--mig", "h100=none", "--workers", str(workers), *full,
                                  data=Path(tmp))
            data.pop("workers")
            same = reference is None or data == reference
            reference = reference or data
            print(f"{args.scaling_jobs} jobs, --workers {workers}: {wall:6.1f} s wall, {_cpu() - cpu:6.1f} s CPU "
                  f"for {data['evaluated']} "
                  f"candidates; answer {data['answer']['candidate']}; {'same answer' if same else 'DIFFERENT ANSWER'}",
                  f"; load average {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
