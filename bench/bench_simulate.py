"""Benchmark: `simulate` on a generated 200-team policy with synthetic traces of growing size.

Generates the policy (bench/generate_policy.py: 200 teams, 10 pools, 20 cohorts), writes a trace
with `kueue-policy trace synth` (Poisson arrivals at a rate that keeps the cluster about 80 % busy),
then times `kueue-policy simulate --format json` as a subprocess, the way users run it.

    python bench/bench_simulate.py [--sizes 25000 50000 100000] [--teams 200]
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
from generate_policy import generate  # noqa: E402

EXE = str(Path(sys.executable).parent / "kueue-policy")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[25_000, 50_000, 100_000])
    parser.add_argument("--teams", type=int, default=200)
    parser.add_argument("--load", type=float, default=0.8, help="target share of GPUs busy")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        policy = generate(Path(tmp) / "policy", args.teams, 10, 20)
        # generate_policy sizes pools at 1.5 x 8 GPUs per team; its workloads average 28/3 GPUs.
        capacity = args.teams * 8 * 3 // 2
        rate = args.load * capacity / (28 / 3)  # jobs per hour with a mean run of one hour
        print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
        print(f"policy: {args.teams} teams, 10 pools, 20 cohorts; arrivals {rate:.0f}/h, mean run 1 h")
        rows = []
        for size in args.sizes:
            trace = Path(tmp) / f"trace-{size}.csv"
            subprocess.run([EXE, "trace", "synth", str(policy), "--jobs", str(size), "--seed", "1",
                            "--rate", f"{rate:.3f}", "--out", str(trace)], check=True)
            # CPU time (user + sys of the child) as well as wall time: the machine is shared,
            # and wall time there says more about the neighbours than about the simulator.
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            out = subprocess.run([EXE, "simulate", str(policy), "--trace", str(trace), "--format", "json"],
                                 check=True, capture_output=True, text=True).stdout
            elapsed = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            run = json.loads(out)["run"]
            rows.append((size, cpu))
            print(f"{size:>7} jobs: {elapsed:7.1f} s wall, {cpu:7.1f} s CPU  ({size / cpu:,.0f} jobs per CPU-s; "
                  f"{run['preemptions']} preemptions, makespan {run['makespan'] / 3600:.0f} h)", flush=True)
        for (small, t_small), (big, t_big) in zip(rows, rows[1:]):
            print(f"cpu({big}) / cpu({small}) = {t_big / t_small:.2f} (jobs x{big / small:g})")


if __name__ == "__main__":
    main()
