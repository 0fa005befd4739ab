"""The busy cluster of issue 28: a 200-team policy with demand about 80% of 3,200 GPUs, and its trace.

Policy: 4 H100 pools of 100 nodes x 8 GPUs (3,200 GPUs, on-demand), 200 teams with 12
guaranteed GPUs each and burst 12, 10 cohorts of 20 teams, `reclaimWithinCohort: Any`,
`withinClusterQueue: LowerPriority`, two priorities (high 1000, standard 100 the default).

Trace: Poisson arrivals at 580 an hour; each job 1-2 pods of 1, 2, 4 or 8 GPUs (3.75 GPUs a pod
on average), a quarter high priority, log-normal run times (sigma 1) with a mean of 47 minutes,
so the offered load is 580 x 1.5 x 3.75 x 0.78 h = about 2,550 GPUs busy, 80% of 3,200.

    python bench/generate_busy_trace.py OUT [--jobs 100000] [--seed 28]

writes OUT/policy/ and OUT/trace.csv; the same options give the same bytes.
"""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path

TEAMS, COHORTS, POOLS, NODES, GPUS_PER_NODE = 200, 10, 4, 100, 8
RATE_PER_HOUR = 580
MEAN_SECONDS = 47 * 60
SIGMA = 1.0


def write_policy(root: Path, burst: int | None = 12) -> None:
    (root / "teams").mkdir(parents=True, exist_ok=True)
    lines = ["apiVersion: kueue-policy/v1alpha1", "kind: Cluster", "metadata:", "  name: busy", "spec:", "  pools:"]
    for p in range(POOLS):
        lines.append(f"    - {{name: h100-{p}, gpu: H100-80GB, nodes: {NODES}, gpusPerNode: {GPUS_PER_NODE}, "
                     f"nodeLabels: {{example.com/pool: h100-{p}}}}}")
    lines.append("  cohorts:")
    lines += [f"    - name: cohort-{c:02d}" for c in range(COHORTS)]
    lines += ["  priorities:", "    - {name: high, value: 1000}", "    - {name: standard, value: 100, default: true}",
              "  preemption:", "    withinClusterQueue: LowerPriority", "    reclaimWithinCohort: Any"]
    (root / "cluster.yaml").write_text("\n".join(lines) + "\n")
    per_cohort = TEAMS // COHORTS
    for t in range(TEAMS):
        (root / "teams" / f"team-{t:03d}.yaml").write_text(
            "apiVersion: kueue-policy/v1alpha1\nkind: Team\n"
            f"metadata: {{name: team-{t:03d}}}\n"
            f"spec:\n  cohort: cohort-{t // per_cohort:02d}\n  namespaces: [team-{t:03d}]\n"
            "  gpus: {guaranteed: 12" + ("" if burst is None else f", burst: {burst}") + "}\n")


def write_trace(path: Path, jobs: int, seed: int, rate: float = RATE_PER_HOUR) -> None:
    rng = random.Random(seed)
    mu = math.log(MEAN_SECONDS) - SIGMA ** 2 / 2
    rows = ["team,name,at,duration,replicas,gpus,priority"]
    at = 0.0
    for index in range(jobs):
        at += rng.expovariate(rate / 3600.0)
        team = f"team-{rng.randrange(TEAMS):03d}"
        duration = max(60, min(10**6, int(rng.lognormvariate(mu, SIGMA))))
        priority = "high" if rng.random() < 0.25 else ""
        rows.append(f"{team},j{index},{int(at)},{duration},{rng.choice((1, 2))},{rng.choice((1, 2, 4, 8))},{priority}")
    path.write_text("\n".join(rows) + "\n")


def burst_option(text: str) -> int | None:
    return None if text == "none" else int(text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--burst", type=burst_option, default=12, help="team burst, or none (default 12)")
    args = parser.parse_args()
    write_policy(args.out / "policy", args.burst)
    write_trace(args.out / "trace.csv", args.jobs, args.seed)


if __name__ == "__main__":
    main()
