"""Benchmark: `simulate` of issue 28's busy cluster (bench/generate_busy_trace.py): 200 teams,
demand about 80% of 3,200 GPUs, preemption on. Complements bench/bench_simulate.py (a lightly
loaded cluster), which stays as it is.

Times `kueue-policy simulate --format json` as a subprocess, the way users run it, once per size
(the machine is shared: each figure is one run, not a median).

    python bench/bench_simulate_busy.py [--sizes 25000 100000] [--seed 28] [--burst 12|none]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate_busy_trace import burst_option, write_policy, write_trace  # noqa: E402

EXE = str(Path(sys.executable).parent / "kueue-policy")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[25_000, 100_000])
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--burst", type=burst_option, default=12, help="team burst, or none (default 12)")
    args = parser.parse_args()
    engine = subprocess.run([sys.executable, "-m", "compiler.speedups", "status"], capture_output=True, text=True,
                            check=True).stdout.splitlines()[-1]
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}; {engine}")
    with tempfile.TemporaryDirectory() as tmp:
        write_policy(Path(tmp) / "policy", args.burst)
        for size in args.sizes:
            trace = Path(tmp) / f"trace-{size}.csv"
            write_trace(trace, size, args.seed)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run([EXE, "simulate", str(Path(tmp) / "policy"), "--trace", str(trace), "--format", "json"],
                                  capture_output=True, text=True)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0:
                sys.exit(done.stderr)
            run = json.loads(done.stdout)["run"]
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            print(f"{size:>7} jobs: {wall:6.1f} s wall, {cpu:6.1f} s CPU, {size / wall:,.0f} jobs/s; "
                  f"{run['preemptions']:,} preemptions, {run['neverStarted']} never started, "
                  f"makespan {run['makespan'] / 3600:,.1f} h, {run['gpuHours']:,.0f} GPU-hours, "
                  f"max RSS {after.ru_maxrss / 1024:,.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
