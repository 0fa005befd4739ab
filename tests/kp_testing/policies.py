"""Small policies written to real files, for the compiler's tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

CLUSTER = """\
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata:
  name: lab
spec:
  kubernetesVersion: "1.34"
  kueueVersion: "0.19"
  resourcesPerGpu: {cpu: "16", memory: 128Gi}
  pools:
    - {name: od, gpu: H100-80GB, nodes: 2, gpusPerNode: 8, capacity: on-demand}
    - {name: spot, gpu: H100-80GB, nodes: 1, gpusPerNode: 8, capacity: spot}
  cohorts:
    - name: research
  priorities:
    - {name: high, value: 100}
    - {name: low, value: 0, default: true}
  preemption:
    withinClusterQueue: LowerPriority
    reclaimWithinCohort: Any
"""

TEAM_A = """\
apiVersion: kueue-policy/v1alpha1
kind: Team
metadata:
  name: a
spec:
  cluster: lab
  namespaces: [a]
  gpus: {guaranteed: 8}
"""


def pools_cluster(pools: list[str], cohorts: tuple[str, ...] = ("all",)) -> str:
    """The cluster `lab` with these pools (flow-mapping YAML, one a pool) and cohorts, and
    nothing else: for tests of where guarantees go."""
    return ("apiVersion: kueue-policy/v1alpha1\nkind: Cluster\nmetadata: {name: lab}\nspec:\n"
            '  kubernetesVersion: "1.34"\n  kueueVersion: "0.19"\n  resourcesPerGpu: {cpu: "16", memory: 128Gi}\n'
            "  pools:\n" + "".join(f"    - {pool}\n" for pool in pools)
            + ("  cohorts:\n" + "".join(f"    - name: {c}\n" for c in cohorts) if cohorts else ""))


def write_policy(root: Path, files: dict[str, str]) -> Path:
    """Write {relative path: YAML text} under root/policies and return that folder."""
    folder = root / "policies"
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(textwrap.dedent(text))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def team(name: str, body: str, cluster: str = "lab") -> str:
    """A Team document; `body` is the spec's YAML (indented by 2 in the result)."""
    spec = textwrap.indent(textwrap.dedent(body).strip("\n"), "  ")
    return (f"apiVersion: kueue-policy/v1alpha1\nkind: Team\nmetadata:\n  name: {name}\n"
            f"spec:\n  cluster: {cluster}\n{spec}\n")


def compile_cluster(root: Path, cluster: str, teams: dict[str, str]):
    """The compiled artifacts of a one-cluster policy written under `root` (teams by name ->
    spec body)."""
    from compiler.stages.pipeline import PolicySource, compile_policy

    files = {"cluster.yaml": cluster} | {f"{name}.yaml": team(name, body) for name, body in teams.items()}
    result = compile_policy(PolicySource.from_directory(write_policy(root, files)))
    return next(iter(result.clusters.values()))


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under folder with its bytes, to prove that nothing was written."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
