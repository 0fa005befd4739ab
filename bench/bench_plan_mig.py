"""Benchmark of the exact MIG planner (compiler.mig.planner.plan_mig).

    .venv/bin/python bench/bench_plan_mig.py [--demands 100] [--instances 1000] [--repeat 3]
                                             [--markdown bench/results-mig.md]

A seeded generator splits `--instances` MIG instances at random over the six H100-80GB profiles
without +me (1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb). For every demand it records
the wall time of plan_mig (median of --repeat runs), the optimum, the closed-form lower bound,
the lower bound with the LP relaxation, and the GPUs a first-fit-decreasing baseline needs.
A second, small-demand set (10-40 instances) is where bounds and heuristics differ most.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compiler.mig.planner import first_fit_decreasing, plan_mig  # noqa: E402

PROFILES = ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]
CLOSED_FORM = ("compute", "memory", "halfGpu", "perProfile", "mediaExtension")


def generate(rng: random.Random, instances: int) -> dict[str, int]:
    cuts = sorted(rng.randint(0, instances) for _ in range(len(PROFILES) - 1))
    sizes = [b - a for a, b in zip([0] + cuts, cuts + [instances])]
    return dict(zip(PROFILES, sizes))


def run_set(label: str, demands: list[dict[str, int]], repeat: int) -> dict:
    rows = []
    for demand in demands:
        times, optimum_times = [], []
        for _ in range(repeat):
            start = time.perf_counter()
            result = plan_mig("H100-80GB", demand)
            times.append(time.perf_counter() - start)
            optimum_times.append(result.optimum_seconds)
        ffd = len(first_fit_decreasing("H100-80GB", demand))
        closed = max(result.bounds[k] for k in CLOSED_FORM)
        rows.append({"time": statistics.median(times), "optimum_time": statistics.median(optimum_times),
                     "gpus": result.gpus, "closed": closed,
                     "lb": result.lower_bound, "ffd": ffd, "layouts": len(result.layouts),
                     "proven": result.secondary_proven})
    times = sorted(r["time"] for r in rows)
    optimum_times = sorted(r["optimum_time"] for r in rows)
    return {
        "optimum_median": statistics.median(optimum_times), "optimum_max": optimum_times[-1],
        "label": label, "count": len(rows),
        "time_median": statistics.median(times), "time_p95": times[int(0.95 * (len(times) - 1))],
        "time_max": times[-1],
        "gpus_total": sum(r["gpus"] for r in rows),
        "gap_closed_zero": sum(r["gpus"] == r["closed"] for r in rows),
        "gap_closed_max": max(r["gpus"] - r["closed"] for r in rows),
        "gap_closed_total": sum(r["gpus"] - r["closed"] for r in rows),
        "gap_lb_zero": sum(r["gpus"] == r["lb"] for r in rows),
        "gap_lb_max": max(r["gpus"] - r["lb"] for r in rows),
        "ffd_total": sum(r["ffd"] for r in rows),
        "ffd_worse": sum(r["ffd"] > r["gpus"] for r in rows),
        "ffd_saved_max": max(r["ffd"] - r["gpus"] for r in rows),
        "layouts_mean": statistics.mean(r["layouts"] for r in rows),
        "secondary_proven": sum(r["proven"] for r in rows),
    }


def markdown(results: list[dict], args: argparse.Namespace, elapsed: float) -> str:
    lines = [
        "# plan-mig benchmark",
        "",
        f"Command: `.venv/bin/python bench/bench_plan_mig.py --demands {args.demands} --instances "
        f"{args.instances} --small {args.small} --repeat {args.repeat} --seed {args.seed}`",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Machine: 2 cores / 24 GiB, "
        f"Python {platform.python_version()}, scipy HiGHS (milp). Wall time of one plan_mig call "
        f"(median of {args.repeat} runs per demand). 'GPU optimum' = from the call until the fewest "
        f"GPUs are proven (layout enumeration, bounds, first integer program); 'full plan' adds the "
        f"secondary stages (fewest distinct layouts, shipped configs). Total run "
        f"{elapsed:.0f} s. The machine was shared with other jobs while this ran.",
        "",
        "Demands: a seeded random split of N instances over the six H100-80GB profiles without +me.",
        "",
        "| set | demands | GPU optimum: median / max | full plan: median | p95 | max | optimum = closed-form LB | max gap closed-form | "
        "optimum = LB (with LP) | max gap (with LP) | GPUs optimal / FFD | FFD worse on | max GPUs saved | "
        "secondary proven |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['label']} | {r['count']} | {r['optimum_median'] * 1000:.0f} / {r['optimum_max'] * 1000:.0f} ms | "
            f"{r['time_median'] * 1000:.0f} ms | {r['time_p95'] * 1000:.0f} ms | "
            f"{r['time_max'] * 1000:.0f} ms | {r['gap_closed_zero']}/{r['count']} | {r['gap_closed_max']} | "
            f"{r['gap_lb_zero']}/{r['count']} | {r['gap_lb_max']} | {r['gpus_total']} / {r['ffd_total']} "
            f"({r['ffd_total'] - r['gpus_total']} saved) | {r['ffd_worse']}/{r['count']} | {r['ffd_saved_max']} | "
            f"{r['secondary_proven']}/{r['count']} |")
    lines += [
        "",
        "Closed-form LB = max(compute, memory, half-GPU, per-profile, +me) bounds; LB (with LP) also "
        "takes the ceiling of the LP relaxation of the set-cover model, which is what `lowerBound` "
        "in the JSON output reports. FFD = first-fit-decreasing (biggest instances first, each on "
        "the first GPU where a placement exists). 'secondary proven' = the fewest-distinct-layouts "
        "and shipped-config stages finished within their node limit (the GPU count is always proven).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demands", type=int, default=100)
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--small", type=int, default=200, help="demands in the small set (10-40 instances)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--markdown", type=Path, default=None)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    plan_mig("H100-80GB", {"1g.10gb": 1})     # warm-up: imports, layout enumeration cache
    started = time.perf_counter()
    large = [generate(rng, args.instances) for _ in range(args.demands)]
    small = [generate(rng, rng.randint(10, 40)) for _ in range(args.small)]
    results = [run_set(f"{args.instances} instances", large, args.repeat),
               run_set("10-40 instances", small, args.repeat)]
    text = markdown(results, args, time.perf_counter() - started)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
