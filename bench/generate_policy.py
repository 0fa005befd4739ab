"""Generate a large, valid policy: N teams over P pools and C cohorts (for benchmarks)."""

from __future__ import annotations

import argparse
from pathlib import Path

MODELS = ["H100-80GB", "A100-80GB", "L40S", "H200-141GB"]


# The declared workloads of every team, in order; `workloads=N` keeps the first N.
WORKLOADS = ["{name: train, replicas: 1, gpus: 8}", "{name: sweep, replicas: 4, gpus: 1}",
             "{name: big, replicas: 2, gpus: 8}"]


def generate(root: Path, teams: int, pools: int, cohorts: int, *, gpus_per_team: int = 8,
             workloads: int = len(WORKLOADS)) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    # Size pools so that every guarantee fits with room to spare (x1.5).
    needed = teams * gpus_per_team * 3 // 2
    per_pool_nodes = max(1, -(-needed // (pools * 8)))
    lines = ["apiVersion: kueue-policy/v1alpha1", "kind: Cluster", "metadata:", "  name: big", "spec:",
             '  kubernetesVersion: "1.34"', '  kueueVersion: "0.19"', "  gitops: argocd", "  pools:"]
    for p in range(pools):
        model = MODELS[p % len(MODELS)]
        capacity = "spot" if p % 3 == 2 else "on-demand"
        lines.append(f"    - {{name: pool-{p:03d}, gpu: {model}, nodes: {per_pool_nodes}, gpusPerNode: 8, "
                     f"capacity: {capacity}, nodeLabels: {{example.com/pool: pool-{p:03d}}}}}")
    lines.append("  cohorts:")
    roots = max(1, cohorts // 10)
    for c in range(cohorts):
        if c < roots:
            lines.append(f"    - {{name: cohort-{c:03d}}}")
        else:
            lines.append(f"    - {{name: cohort-{c:03d}, parent: cohort-{c % roots:03d}}}")
    lines += ["  priorities:", "    - {name: high, value: 1000}", "    - {name: normal, value: 100, default: true}",
              "  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}",
              "  fairSharing: {enabled: true}"]
    (root / "cluster.yaml").write_text("\n".join(lines) + "\n")
    teams_dir = root / "teams"
    teams_dir.mkdir(exist_ok=True)
    for t in range(teams):
        model = MODELS[t % len(MODELS)]
        capacity = ["on-demand-first", "spot-first", "on-demand-only"][t % 3]
        declared = "".join(f"\n    - {w}" for w in WORKLOADS[:workloads])
        text = f"""apiVersion: kueue-policy/v1alpha1
kind: Team
metadata:
  name: team-{t:04d}
spec:
  cluster: big
  cohort: cohort-{t % cohorts:03d}
  namespaces: [team-{t:04d}-train, team-{t:04d}-eval]
  gpus: {{guaranteed: {gpus_per_team}, burst: {gpus_per_team}, lend: {gpus_per_team // 2}}}
  capacity: {capacity}
  models: [{model}]
  workloads:{declared or " []"}
"""
        (teams_dir / f"team-{t:04d}.yaml").write_text(text)
    return root


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--teams", type=int, default=1000)
    parser.add_argument("--pools", type=int, default=40)
    parser.add_argument("--cohorts", type=int, default=200)
    parser.add_argument("--workloads", type=int, default=len(WORKLOADS), help="declared workloads per team")
    args = parser.parse_args()
    generate(args.out, args.teams, args.pools, args.cohorts, workloads=args.workloads)
