"""A seeded trace of mixed inference, fine-tune and eval jobs that ask for GPU memory, and the
policy it runs on: the measured MIG claim of docs/how-to/capacity.md and BENCHMARKS.md.

The policy: one H100-80GB pool (48 one-GPU nodes, so the search counts GPUs one by one; one
GPU hour costs 1) and three teams in one
cohort, no guarantees (capacity derives them from demand). The jobs (one replica each, GPU
memory per job, Poisson arrivals over a week):

* serving (inference replicas): 6-18 GiB, 1-6 hours, about 45% of the jobs;
* eval (evaluation shards): 4-9 GiB, 10-60 minutes, about 40%;
* finetune (LoRA / small fine-tunes): 30-70 GiB, 2-8 hours, about 15%.

    python bench/generate_mig_trace.py [--out bench/data/mig-mixed] [--jobs 1500] [--seed 28]

The same options give the same bytes.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

CLUSTER = """\
# The MIG benchmark's cluster (bench/generate_mig_trace.py): one H100 pool, whole GPUs as declared;
# `capacity --mig h100=both` compares it with the same pool cut by the MIG planner.
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata:
  name: inference-lab
spec:
  pools:
    - name: h100
      gpu: H100-80GB
      nodes: 48
      gpusPerNode: 1   # one GPU a node: the search counts GPUs one by one
      capacity: on-demand
      cost: 1   # per GPU hour: the answer's cost per hour is its GPUs
  cohorts:
    - name: shared
  priorities:
    - {name: standard, value: 100, default: true}
  preemption:
    withinClusterQueue: LowerPriority
    reclaimWithinCohort: Any
"""

TEAM = """\
apiVersion: kueue-policy/v1alpha1
kind: Team
metadata:
  name: {name}
spec:
  cohort: shared
  namespaces: [{name}]
  gpus: {{guaranteed: 0}}
  models: [H100-80GB]
"""

# team -> (share of jobs, GiB range, minutes range)
KINDS = {"serving": (0.45, (6, 18), (60, 360)), "eval": (0.40, (4, 9), (10, 60)),
         "finetune": (0.15, (30, 70), (120, 480))}


def generate(out: Path, jobs: int, seed: int, rate: float) -> None:
    rng = random.Random(seed)
    (out / "policy" / "teams").mkdir(parents=True, exist_ok=True)
    (out / "policy" / "cluster.yaml").write_text(CLUSTER)
    for team in KINDS:
        (out / "policy" / "teams" / f"{team}.yaml").write_text(TEAM.format(name=team))
    rows = ["team,name,at,duration,replicas,gpuMemory"]
    at = 0.0
    names = list(KINDS)
    weights = [KINDS[n][0] for n in names]
    for index in range(jobs):
        at += rng.expovariate(rate / 3600.0)
        team = rng.choices(names, weights)[0]
        _, (low, high), (short, long) = KINDS[team]
        rows.append(f"{team},{team}-{index},{int(at)},{rng.randint(short, long) * 60},1,{rng.randint(low, high)}Gi")
    (out / "trace.csv").write_text("\n".join(rows) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "data" / "mig-mixed")
    parser.add_argument("--jobs", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--rate", type=float, default=9.0, help="arrivals per hour")
    args = parser.parse_args()
    generate(args.out, args.jobs, args.seed, args.rate)


if __name__ == "__main__":
    main()
