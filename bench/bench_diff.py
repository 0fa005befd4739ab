"""Benchmark `kueue-policy diff` between two git revisions of a 1,000-team policy.

    .venv/bin/python bench/bench_diff.py [--teams 1000] [--changed 50] [--runs 3]

Builds a real git repository in a temporary folder: revision A is a generated policy (one
Cluster, 1,000 Team files), revision B changes `--changed` teams (guarantee, a namespace, a
workload). Times, median over the runs:
  - the in-process path of `diff A B`: read both revisions with GitPython, compile both, diff,
    render markdown and json (with the split between compiling and diffing/rendering);
  - the real console script `kueue-policy diff A B --format json` as a subprocess.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import git

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from compiler.core import git_ops
from compiler.deliver.render import render_diff  # noqa: E402
from compiler.deliver.semantic_diff import diff_sides  # noqa: E402
from compiler.deliver.sides import compile_revision  # noqa: E402

COHORTS = 20


def cluster_yaml(teams: int) -> str:
    on_demand_nodes = max(2, teams * 2 // 8 + 2)
    cohorts = "\n".join(f"    - {{name: dept-{d:02d}}}" for d in range(COHORTS))
    return f"""apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata:
  name: bench
spec:
  kubernetesVersion: "1.34"
  kueueVersion: "0.19"
  gpuAccess: device-plugin
  gitops: argocd
  pools:
    - {{name: h100-ondemand, gpu: H100-80GB, nodes: {on_demand_nodes}, gpusPerNode: 8, capacity: on-demand}}
    - {{name: h100-spot, gpu: H100-80GB, nodes: {max(2, teams // 8)}, gpusPerNode: 8, capacity: spot}}
  cohorts:
{cohorts}
  priorities:
    - {{name: high, value: 1000}}
    - {{name: normal, value: 100, default: true}}
"""


def team_yaml(index: int, changed: bool) -> str:
    guaranteed = 1 if changed else 2
    namespaces = f"[team-{index:04d}, team-{index:04d}-eval]" if changed else f"[team-{index:04d}]"
    extra = "\n    - {name: huge, replicas: 64, gpus: 8}" if changed else ""
    return f"""apiVersion: kueue-policy/v1alpha1
kind: Team
metadata:
  name: team-{index:04d}
spec:
  cluster: bench
  cohort: dept-{index % COHORTS:02d}
  namespaces: {namespaces}
  gpus: {{guaranteed: {guaranteed}, burst: 4}}
  workloads:
    - {{name: train, replicas: 1, gpus: 2}}
    - {{name: notebook, replicas: 1, gpus: 1}}{extra}
"""


def make_repo(root: Path, teams: int, changed: int) -> tuple[str, str]:
    repo = git.Repo.init(root, initial_branch="main")
    policies = root / "policies"
    (policies / "teams").mkdir(parents=True)
    (policies / "cluster.yaml").write_text(cluster_yaml(teams))
    for index in range(teams):
        (policies / "teams" / f"team-{index:04d}.yaml").write_text(team_yaml(index, False))
    actor = git.Actor("bench", "bench@example.com")
    repo.index.add(["policies"])
    first = repo.index.commit("A", author=actor, committer=actor).hexsha
    for index in range(0, teams, max(1, teams // changed))[:changed]:
        (policies / "teams" / f"team-{index:04d}.yaml").write_text(team_yaml(index, True))
    repo.index.add(["policies"])
    second = repo.index.commit("B", author=actor, committer=actor).hexsha
    return first, second


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--teams", type=int, default=1000)
    parser.add_argument("--changed", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cli-runs", type=int, default=None,
                        help="subprocess runs of the real CLI (default: --runs; 0 to skip)")
    args = parser.parse_args()
    cli_runs = args.runs if args.cli_runs is None else args.cli_runs
    scratch = Path(tempfile.mkdtemp(prefix="bench-diff-"))
    try:
        first, second = make_repo(scratch, args.teams, args.changed)
        repo = git_ops.open_repository(scratch)
        compile_times, diff_times, totals = [], [], []
        summary = None
        for _ in range(args.runs):
            start = time.perf_counter()
            before = compile_revision(repo, first, "policies")
            after = compile_revision(repo, second, "policies")
            compiled = time.perf_counter()
            diff = diff_sides(before, after)
            render_diff(diff, "markdown")
            render_diff(diff, "json")
            done = time.perf_counter()
            compile_times.append(compiled - start)
            diff_times.append(done - compiled)
            totals.append(done - start)
            summary = diff.summary
            print(f"  run: compile both {compiled - start:.2f} s, diff+render {(done - compiled) * 1000:.0f} ms",
                  flush=True)
        exe = shutil.which("kueue-policy", path=str(Path(sys.executable).parent)) or "kueue-policy"
        cli_times = []
        for _ in range(cli_runs):
            start = time.perf_counter()
            subprocess.run([exe, "diff", first, second, "--format", "json"], cwd=scratch, check=True,
                           capture_output=True)
            cli_times.append(time.perf_counter() - start)
        print(f"teams={args.teams} changed={args.changed} runs={args.runs}")
        print(f"summary: {summary}")
        print(f"in-process diff A B (read + compile both + diff + render): median {statistics.median(totals):.2f} s")
        print(f"  of which compiling both revisions:  median {statistics.median(compile_times):.2f} s")
        print(f"  of which semantic diff + rendering: median {statistics.median(diff_times) * 1000:.0f} ms")
        if cli_times:
            print(f"CLI `kueue-policy diff A B --format json` (subprocess): median {statistics.median(cli_times):.2f} s")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
