"""`evaluate` with Topology Aware Scheduling: the whole admission engine against Kueue's own
scheduler (kueue-oracle) on the same export, 10,000 TAS Workloads (every request form, created one
second apart) on 2,000 nodes (20 blocks x 10 racks x 10 hosts, a few tainted, not Ready or
unschedulable), one ClusterQueue with ample quota: the nodes, not the quota, decide.

    .venv/bin/python bench/bench_tas_evaluate.py [--workloads N] [--runs R] [--no-oracle]

Prints the Python engine's figures (load + evaluate, median of R runs, in this process), the
oracle's (one run of the binary: YAML reading and every scheduling cycle included) and how many
Workloads both answered alike (status, topologyAssignment and reason).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

from compiler.evaluator.topology import TopologyFlavor  # noqa: E402
from differential.engines import python_engine  # noqa: E402
from differential.harness import COMPARED_TAS, compare  # noqa: E402
from differential.tas_worlds import TasWorkload, TasWorld, dump_tas_world, random_node, random_request  # noqa: E402

LEVELS = ("example.com/block", "example.com/rack", "kubernetes.io/hostname")
ORACLE = REPO / "oracle" / "bin" / "kueue-oracle"


def bench_text(workloads: int, seed: int = 26) -> str:
    rng = random.Random(seed)
    nodes = [random_node(rng, (f"b{b}", f"r{b}-{r}"), f"n-{b}-{r}-{h}", LEVELS)
             for b in range(20) for r in range(10) for h in range(10)]
    pending = [TasWorkload(f"wl-{i:05d}", random_request(rng, LEVELS)) for i in range(workloads)]
    return dump_tas_world(TasWorld(TopologyFlavor("topo", LEVELS, {"pool": "gpu"}), nodes, pending))


def cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--no-oracle", action="store_true")
    args = parser.parse_args()
    text = bench_text(args.workloads)
    walls, cpus, python = [], [], {}
    for _ in range(args.runs):
        wall, cpu = time.perf_counter(), time.process_time()
        python = python_engine(text)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    admitted = sum(1 for w in python["workloads"] if w["status"] == "admitted")
    print(f"python: 2000 nodes, {args.workloads} TAS workloads ({admitted} admitted): "
          f"{statistics.median(walls):.1f} s wall, {statistics.median(cpus):.1f} s CPU, median of {args.runs}")
    if args.no_oracle or not ORACLE.is_file():
        print("oracle: not run" + ("" if args.no_oracle else f" ({ORACLE} not built: make oracle)"))
        return 0
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as handle:
        handle.write(text)
        handle.flush()
        before, wall = cpu_children(), time.perf_counter()
        done = subprocess.run([str(ORACLE), handle.name], capture_output=True, text=True, check=True)
        wall, cpu = time.perf_counter() - wall, cpu_children() - before
    kueue = json.loads(done.stdout)
    print(f"oracle: the same input: {wall:.1f} s wall, {cpu:.1f} s CPU, one run; "
          f"python takes {statistics.median(cpus) / cpu:.2f}x the oracle's CPU time")
    found = compare(python, kueue, fields=COMPARED_TAS)
    print(f"agreement: {args.workloads - len({d.split(':')[0] for d in found})}/{args.workloads} workloads alike"
          + (f"; first difference: {found[0][:300]}" if found else ""))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
