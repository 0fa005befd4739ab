"""TAS verdicts: 1,000 teams on a 1,000-node topology, timed.

One pool of 1,000 nodes x 8 GPUs with a regular topology (10 blocks x 10 racks x 10 hosts),
1,000 teams of 8 guaranteed GPUs in 10 cohorts, each with one declared workload whose topology
request cycles through the forms (required rack, preferred block, slices of 2 per rack, none:
Kueue's implied TAS; 2 to 8 pods of 1 to 4 GPUs, within the team's 8). The compile (the real CLI as a subprocess)
is timed with the topology and with the same policy without it (no topology on the pool or the
workloads: the quota-only verdicts), and the placement step itself in-process.

    .venv/bin/python bench/bench_tas_verdicts.py [--teams N] [--repeat R] [--varied]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CLI = REPO / ".venv" / "bin" / "kueue-policy"

FORMS = ["{required: example.com/rack}", "{preferred: example.com/block}",
         "{slices: [{level: example.com/rack, size: 2}]}", None]
SHAPES = [(2, 4), (2, 2), (4, 2), (8, 1)]   # within the 8 guaranteed GPUs: both worlds are placed


def generate(root: Path, teams: int, topology: bool, varied: bool = False) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = ["apiVersion: kueue-policy/v1alpha1", "kind: Cluster", "metadata: {name: tas}", "spec:",
             '  kueueVersion: "0.19"', "  gpuAccess: device-plugin", "  pools:",
             f"    - name: h100\n      gpu: H100-80GB\n      nodes: {teams}\n      gpusPerNode: 8"]
    if topology:
        lines.append("      topology:\n        levels:\n          - {nodeLabel: example.com/block, holds: 10}\n"
                     "          - {nodeLabel: example.com/rack, holds: 10}\n"
                     "          - {nodeLabel: kubernetes.io/hostname}")
    lines.append("  cohorts:")
    lines += [f"    - {{name: cohort-{c}}}" for c in range(10)]
    (root / "cluster.yaml").write_text("\n".join(lines) + "\n")
    folder = root / "teams"
    folder.mkdir(exist_ok=True)
    for t in range(teams):
        form = FORMS[t % len(FORMS)] if topology else None
        replicas, gpus = SHAPES[(t // len(FORMS)) % len(SHAPES)]
        workload = f"{{name: job, replicas: {replicas}, gpus: {gpus}" + (f", topology: {form}}}" if form else "}")
        (folder / f"team-{t:04d}.yaml").write_text(
            "apiVersion: kueue-policy/v1alpha1\nkind: Team\n"
            f"metadata: {{name: team-{t:04d}}}\nspec:\n  cohort: cohort-{t % 10}\n  namespaces: [ns-{t:04d}]\n"
            f"  gpus: {{guaranteed: {4 + t % 9 if varied else 8}}}\n  workloads:\n    - {workload}\n")
    return root


def compile_once(policy: Path, out: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([str(CLI), "compile", str(policy), "--out", str(out), "--allow-inadmissible"],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(done.stderr[-3000:])
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def placement_step(policy: Path) -> tuple[float, dict[str, int]]:
    """CPU seconds of the verdicts' placement step alone, in-process, and the verdict counts."""
    sys.path.insert(0, str(REPO))
    from compiler.stages import admissibility
    from compiler.stages.pipeline import PolicySource, compile_policy

    spent = [0.0]
    original = admissibility._with_topology

    def timed(*args):
        start = time.process_time()
        try:
            return original(*args)
        finally:
            spent[0] += time.process_time() - start

    admissibility._with_topology = timed
    try:
        result = compile_policy(PolicySource.from_directory(policy))
    finally:
        admissibility._with_topology = original
    import json
    report = json.loads(next(iter(result.clusters.values())).files["report.json"])
    counts: dict[str, int] = {}
    for workload in report["workloads"]:
        counts[workload["verdict"]] = counts.get(workload["verdict"], 0) + 1
    return spent[0], dict(sorted(counts.items()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--teams", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--varied", action="store_true",
                        help="guarantees of 4 to 12 GPUs (9 distinct backgrounds) instead of 8 for every team")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tas-verdicts-") as tmp:
        root = Path(tmp)
        with_topology = generate(root / "tas", args.teams, True, args.varied)
        without = generate(root / "plain", args.teams, False, args.varied)
        for label, policy in (("with topology", with_topology), ("quota only", without)):
            runs = [compile_once(policy, root / f"out-{label[:4]}-{i}") for i in range(args.repeat)]
            walls = [w for w, _ in runs]
            print(f"compile, {label}: median {statistics.median(walls):.2f} s wall, "
                  f"{statistics.median(c for _, c in runs):.2f} s CPU (runs: {', '.join(f'{w:.2f}' for w in walls)})")
        cpu, counts = placement_step(with_topology)
        print(f"placement step of the verdicts ({args.teams} teams, {args.teams} nodes): {cpu:.3f} s CPU; "
              f"verdicts {counts}")


if __name__ == "__main__":
    main()
