"""Benchmark: compile a generated policy of N teams, 40 pools, 200 cohorts (issue 2).

Runs the real console script as a subprocess (as users and CI do), `--repeat` times per size, and
reports the median wall time and the peak resident memory of the compile process.

    python bench/bench_compile.py [--repeat 3] [--sizes 500 1000]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate_policy import generate  # noqa: E402

EXE = str(Path(sys.executable).parent / "kueue-policy")


def run_once(policy: Path, out: Path) -> tuple[float, float]:
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    process = subprocess.Popen([EXE, "compile", str(policy), "--out", str(out), "--format", "json"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"compile failed: {process.stderr.read().decode()}")
    return elapsed, usage.ru_maxrss / 1024  # MiB (Linux reports KiB)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pools", type=int, default=40)
    parser.add_argument("--cohorts", type=int, default=200)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            policy = generate(Path(tmp) / f"policy-{size}", size, args.pools, args.cohorts)
            runs = [run_once(policy, Path(tmp) / f"out-{size}") for _ in range(args.repeat)]
            wall = statistics.median(r[0] for r in runs)
            peak = max(r[1] for r in runs)
            results[size] = (wall, peak)
            print(f"{size:>5} teams, {args.pools} pools, {args.cohorts} cohorts: "
                  f"median {wall:.2f} s, peak RSS {peak:.0f} MiB ({args.repeat} runs)")
    if len(results) >= 2:
        small, large = sorted(results)[:2]
        print(f"ratio {large}/{small} teams: {results[large][0] / results[small][0]:.2f}x time, "
              f"{results[large][1] / results[small][1]:.2f}x memory")
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}")


if __name__ == "__main__":
    main()
