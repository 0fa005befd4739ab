"""Topology placement speed: compiler.evaluator.topology against Kueue's own TAS (kueue-oracle)
on the same input, a 1,000-node topology (10 blocks x 10 racks x 10 hosts, a few nodes tainted,
not Ready or unschedulable) and 10,000 pod-set requests of every form, placed in order (each
placement's usage taken before the next, as Kueue admits them one per cycle).

    .venv/bin/python bench/bench_tas.py [--requests N] [--runs R] [--no-oracle]

Prints the Python figures (median of R runs), the oracle's (one run: the whole binary, YAML
reading and every scheduling cycle included) and whether both placed every request alike.
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
from differential.tas_harness import differences, oracle_placements, python_placements  # noqa: E402
from differential.tas_worlds import TasWorkload, TasWorld, dump_tas_world, random_node, random_request  # noqa: E402

LEVELS = ("example.com/block", "example.com/rack", "kubernetes.io/hostname")
ORACLE = REPO / "oracle" / "bin" / "kueue-oracle"


def bench_world(requests: int, seed: int = 26) -> TasWorld:
    rng = random.Random(seed)
    nodes = [random_node(rng, (f"b{b}", f"r{b}-{r}"), f"n-{b}-{r}-{h}", LEVELS)
             for b in range(10) for r in range(10) for h in range(10)]
    workloads = [TasWorkload(f"wl-{i:05d}", random_request(rng, LEVELS)) for i in range(requests)]
    return TasWorld(TopologyFlavor("topo", LEVELS, {"pool": "gpu"}), nodes, workloads)


class Timing:
    """Wall and CPU seconds: the machine is shared, so CPU time is the steadier figure."""

    __slots__ = ("wall", "cpu")

    def __init__(self, wall: float, cpu: float) -> None:
        self.wall, self.cpu = wall, cpu

    def describe(self, requests: int) -> str:
        return (f"{self.wall:.2f} s wall, {self.cpu:.2f} s CPU "
                f"({1e6 * self.cpu / requests:.0f} us CPU/request)")


def time_python(world: TasWorld, runs: int) -> tuple[Timing, dict]:
    timings, placed = [], {}
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        placed = python_placements(world)
        timings.append(Timing(time.perf_counter() - wall, time.process_time() - cpu))
    return Timing(statistics.median(t.wall for t in timings), statistics.median(t.cpu for t in timings)), placed


def time_oracle(world: TasWorld) -> tuple[Timing, dict]:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as handle:
        handle.write(dump_tas_world(world))
        handle.flush()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter()
        done = subprocess.run([str(ORACLE), handle.name], capture_output=True, text=True, check=True)
        wall = time.perf_counter() - wall
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return Timing(wall, cpu), oracle_placements(json.loads(done.stdout))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-oracle", action="store_true")
    args = parser.parse_args()
    world = bench_world(args.requests)
    python_seconds, python = time_python(world, args.runs)
    placed = sum(1 for p in python.values() if p)
    print(f"python: {len(world.nodes)} nodes, {args.requests} requests ({placed} placed): "
          f"{python_seconds.describe(args.requests)}, median of {args.runs}")
    if args.no_oracle or not ORACLE.is_file():
        print("oracle: not run" + ("" if args.no_oracle else f" ({ORACLE} not built: make oracle)"))
        return 0
    oracle_seconds, kueue = time_oracle(world)
    found = differences(python, kueue)
    print(f"oracle: the same input: {oracle_seconds.describe(args.requests)}, one run; "
          f"python takes {python_seconds.cpu / oracle_seconds.cpu:.2f}x the oracle's CPU time")
    print(f"agreement: {args.requests - len(found)}/{args.requests} requests placed alike" +
          (f"; first difference: {found[0]}" if found else ""))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
