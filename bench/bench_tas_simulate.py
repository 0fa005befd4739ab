"""simulate with topology: jobs placed on a 1,000-node topology as they are admitted, timed.

The policy of bench_tas_verdicts.py (one pool of 1,000 nodes x 8 GPUs, 10 blocks x 10 racks x
10 hosts) with 100 teams, and a trace of N jobs arriving every 3 s, each asking one of the forms
(required rack, preferred block, slices of 2 per rack, none) for 2 to 8 pods of 2 to 8 GPUs,
running 100-3,000 s. The real CLI runs as a subprocess; the figures are its wall and CPU
seconds, and what the run's `topology` summary says (jobs held by topology).

    .venv/bin/python bench/bench_tas_simulate.py [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_tas_verdicts import CLI, generate  # noqa: E402

FORMS = ["{required: example.com/rack}", "{preferred: example.com/block}",
         "{slices: [{level: example.com/rack, size: 2}]}", None]
SHAPES = [(2, 8), (4, 4), (8, 8), (2, 2)]


def trace(path: Path, jobs: int, teams: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    lines = ["jobs:"]
    for i in range(jobs):
        form = FORMS[i % len(FORMS)]
        replicas, gpus = SHAPES[rng.randrange(len(SHAPES))]
        topology = f", topology: {form}" if form else ""
        lines.append(f"  - {{name: j{i}, team: team-{rng.randrange(teams):04d}, at: {i * 3}, "
                     f"duration: {rng.randrange(100, 3000)}, replicas: {replicas}, gpus: {gpus}{topology}}}")
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tas-simulate-") as tmp:
        root = Path(tmp)
        policy = generate(root / "policy", 100, True)
        cluster = policy / "cluster.yaml"
        cluster.write_text(cluster.read_text().replace("nodes: 100\n", "nodes: 1000\n"))
        trace(root / "trace.yaml", args.jobs, 100)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([str(CLI), "simulate", str(policy), "--trace", str(root / "trace.yaml"),
                               "--format", "json"], capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            sys.exit(done.stderr[-3000:])
        summary = json.loads(done.stdout)
        [pool] = summary["topology"]
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        print(f"simulate {args.jobs} jobs on 1,000 nodes: {wall:.1f} s wall, {cpu:.1f} s CPU "
              f"({1000 * cpu / args.jobs:.1f} ms CPU/job); {pool['jobsHeldByTopology']} jobs held by topology, "
              f"{pool['idleGpuHoursWhileHeld']} GPU-hours idle meanwhile")


if __name__ == "__main__":
    main()
