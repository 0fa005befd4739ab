"""Benchmark: `simulate` on a generated 200-team policy with synthetic traces of growing size.

Generates the policy (bench/generate_policy.py: 200 teams, 10 pools, 20 cohorts), writes a trace
with `kueue-policy trace synth` (Poisson arrivals), then times `kueue-policy simulate --format json`
as a subprocess, the way users run it.

The arrival rate is a share (`--load`) of a basis:
- `quota` (default, load 0.6): the rate the teams' guaranteed quotas sustain, teams x 8 GPUs
  over the mean GPUs of a job. A cluster that keeps up: the backlog stays bounded, so the cost
  per job should stay flat as the trace grows.
- `pools` (load 0.8): all pool capacity, as if every team could use every GPU. Each team may use
  at most 16 GPUs of the pools of its model, so this cluster is overloaded and the backlog grows
  for the whole trace (the stress case: more waiting jobs at every moment).

`--no-fair-sharing` writes the policy with fair sharing disabled: Kueue's classical preemption.

    python bench/bench_simulate.py [--sizes 25000 50000 100000] [--teams 200] [--basis quota|pools]
                                   [--no-fair-sharing]
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


def _engine() -> str:
    """Which engine the CLI runs: compiled (compiler/speedups) or pure Python."""
    return subprocess.run([sys.executable, "-m", "compiler.speedups", "status"], capture_output=True,
                          text=True, check=True).stdout.splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[25_000, 50_000, 100_000])
    parser.add_argument("--teams", type=int, default=200)
    parser.add_argument("--basis", choices=["quota", "pools"], default="quota",
                        help="what the load is a share of: guaranteed quotas or all pool GPUs")
    parser.add_argument("--load", type=float, default=None,
                        help="share of the basis (default 0.6 of quota, 0.8 of pools)")
    parser.add_argument("--no-fair-sharing", action="store_true",
                        help="the policy with fair sharing disabled (classical preemption)")
    args = parser.parse_args()
    load = args.load if args.load is not None else (0.6 if args.basis == "quota" else 0.8)
    with tempfile.TemporaryDirectory() as tmp:
        policy = generate(Path(tmp) / "policy", args.teams, 10, 20)
        if args.no_fair_sharing:
            cluster = policy / "cluster.yaml"
            text = cluster.read_text()
            if "fairSharing: {enabled: true}" not in text:
                raise SystemExit("generate_policy no longer writes fairSharing: {enabled: true}")
            cluster.write_text(text.replace("fairSharing: {enabled: true}", "fairSharing: {enabled: false}"))
        # generate_policy guarantees 8 GPUs per team and sizes pools at 1.5 x that; its workloads
        # average 28/3 GPUs.
        guaranteed = args.teams * 8
        capacity = guaranteed if args.basis == "quota" else guaranteed * 3 // 2
        rate = load * capacity / (28 / 3)  # jobs per hour with a mean run of one hour
        print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
        print(_engine())
        print(f"policy: {args.teams} teams, 10 pools, 20 cohorts, fair sharing "
              f"{'off' if args.no_fair_sharing else 'on'}; arrivals {rate:.0f}/h "
              f"({load:g} x {args.basis}), mean run 1 h")
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
