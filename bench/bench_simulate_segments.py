"""Benchmark: where `simulate`'s time goes along a trace. The busy cluster's trace
(bench/generate_busy_trace.py) is replayed in this process, and the CPU time is cut into
segments of N arrivals, each with the mean number of jobs waiting at its moments (the backlog).

Why: the busy trace's backlog is not stationary at first (it grows from about 100 waiting jobs
in the first 10,000 arrivals to about 480 by 125,000, then levels off), so the CPU a job costs
over a whole trace depends on how long the trace is. Segment by segment it shows what the cost a
job follows (`--jobs 250000 --segment 25000` shows the levelling off).

    python bench/bench_simulate_segments.py [--jobs 100000] [--segment 10000] [--seed 28] [--rate 580]
                                            [--policy DIR --trace FILE]
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from generate_busy_trace import RATE_PER_HOUR, write_policy, write_trace  # noqa: E402

from compiler.simulate import runner  # noqa: E402
from compiler.simulate.driver import Simulation  # noqa: E402
from compiler.stages.pipeline import PolicySource  # noqa: E402


@dataclass
class Segment:
    """One run of N arrivals: the CPU its moments took, how many there were, and the jobs
    waiting at them (summed, for the mean)."""

    cpu: float = 0.0
    moments: int = 0
    waiting: int = 0


def measure(policy: Path, trace_path: Path, size: int) -> tuple[list[Segment], float]:
    artifacts = runner.compiled_cluster(PolicySource.from_directory(policy), None)
    trace, _ = runner.load_trace(trace_path, artifacts)
    simulation = Simulation(artifacts.cluster, [o.obj for o in artifacts.objects], trace, str(trace_path),
                            artifacts.kueue_configuration)
    arrivals = sorted(run.job.at for run in simulation.runs)
    # the arrival times where a segment ends (a moment at or after one starts the next segment)
    ends = [arrivals[i] for i in range(size, len(arrivals), size)] + [float("inf")]
    segments = [Segment()]
    clock = [time.process_time()]

    def observe(phase: str, now: int, loop) -> None:
        if phase != "before":
            return
        while now >= ends[len(segments) - 1]:
            tick = time.process_time()
            segments[-1].cpu += tick - clock[0]
            clock[0] = tick
            segments.append(Segment())
        engine = loop.engine
        segments[-1].moments += 1
        segments[-1].waiting += len(engine.infos) - sum(len(held) for held in engine.admitted.values())

    start = time.process_time()
    simulation.run(observe)
    segments[-1].cpu += time.process_time() - clock[0]
    return segments, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--segment", type=int, default=10_000, help="arrivals per segment")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--policy", type=Path, help="a policy folder (default: the busy cluster's)")
    parser.add_argument("--trace", type=Path, help="a trace (default: the busy trace of --jobs jobs)")
    parser.add_argument("--rate", type=float, default=RATE_PER_HOUR,
                        help="arrivals an hour of the generated busy trace (default: the issue's 580)")
    args = parser.parse_args()
    engine = subprocess.run([sys.executable, "-m", "compiler.speedups", "status"], capture_output=True, text=True,
                            check=True).stdout.splitlines()[-1]
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}; {engine}")
    with tempfile.TemporaryDirectory() as tmp:
        policy = args.policy or Path(tmp) / "policy"
        trace = args.trace or Path(tmp) / "trace.csv"
        if args.policy is None:
            write_policy(policy)
        if args.trace is None:
            write_trace(trace, args.jobs, args.seed, args.rate)
        segments, total = measure(policy, trace, args.segment)
    print(f"engine run: {total:.1f} s CPU (the trace read and the compile not counted)")
    print("| arrivals | CPU | moments | mean jobs waiting | CPU a job |")
    print("|---|---:|---:|---:|---:|")
    for index, segment in enumerate(segments):
        first = index * args.segment
        mean = segment.waiting / max(1, segment.moments)
        last = "end" if index == len(segments) - 1 else f"{first + args.segment:,}"
        print(f"| {first:,}-{last} | {segment.cpu:.2f} s | {segment.moments:,} | {mean:.0f} | "
              f"{1000 * segment.cpu / args.segment:.3f} ms |")


if __name__ == "__main__":
    main()
