"""Pools state their nodes' size (`allocatable`, or a node export), and verdicts use it: a pod that
fits no node of a pool is `never` there, saying why. Positive controls: the same policies without
a node size keep the verdicts they had (`guaranteed`), which is what made the check necessary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kp_testing import run_cli
from kp_testing.policies import snapshot, team, write_policy

CLUSTER = """\
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  pools:
    - name: l4
      gpu: L4
      nodes: 16
      gpusPerNode: 4
      nodeLabels: {example.com/pool: l4}
      allocatable: {cpu: "48", memory: 192Gi}
    - name: h100
      gpu: H100-80GB
      nodes: 2
      gpusPerNode: 8
      nodeLabels: {example.com/pool: h100}
      allocatable: {cpu: "190", memory: 1900Gi}
  resourcesPerGpu: {cpu: "8", memory: 32Gi}
"""
HUGE_POD = "{name: huge-pod, replicas: 1, gpus: 1, cpu: \"200\", memory: 1500Gi}"


def _team(models: str, workloads: list[str], guaranteed: int = 64) -> str:
    lines = "\n".join(f"  - {w}" for w in workloads)
    return team("a", f"namespaces: [a]\ngpus: {{guaranteed: {guaranteed}}}\nmodels: {models}\nworkloads:\n{lines}",
                cluster="lab")


def _verdicts(folder: Path) -> dict[str, dict]:
    done = run_cli("check", str(folder), "--format", "json", "--allow-inadmissible")
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    return {w["name"]: w for w in json.loads(done.stdout)["workloads"]}


def test_a_pod_bigger_than_every_node_is_never_saying_why(tmp_path: Path) -> None:
    folder = write_policy(tmp_path, {"cluster.yaml": CLUSTER,
                                     "a.yaml": _team("[L4]", [HUGE_POD, "{name: fits, gpus: 1, cpu: \"40\"}"])})
    verdicts = _verdicts(folder)
    assert verdicts["huge-pod"]["verdict"] == "never"
    assert verdicts["huge-pod"]["reason"].startswith(
        "a pod asks 200 cpu and 1500Gi memory; pool l4's nodes have 48 cpu and 192Gi memory")
    assert verdicts["fits"]["verdict"] == "guaranteed"
    # The CLI: exit 1, the workload's line.
    done = run_cli("check", str(folder))
    assert done.returncode == 1
    assert "a.yaml:11:" in done.stderr and "pool l4's nodes have 48 cpu" in done.stderr, done.stderr


def test_positive_control_without_node_size_the_same_pod_is_guaranteed(tmp_path: Path) -> None:
    """Backwards compatible: no `allocatable`, no fit check beyond GPUs per node (64 GPUs of quota
    bring 512 cpu, so Kueue admits the 200-cpu pod from the team's own quota)."""
    cluster = "\n".join(line for line in CLUSTER.splitlines() if "allocatable" not in line) + "\n"
    folder = write_policy(tmp_path, {"cluster.yaml": cluster, "a.yaml": _team("[L4]", [HUGE_POD])})
    assert _verdicts(folder)["huge-pod"]["verdict"] == "guaranteed"


def test_kueue_picking_a_pool_whose_nodes_are_too_small_is_never(tmp_path: Path) -> None:
    """l4 comes first in the team's order and has the quota, so Kueue admits there; the pod fits
    only the h100 nodes. The verdict says where Kueue puts it and why it cannot start."""
    folder = write_policy(tmp_path, {"cluster.yaml": CLUSTER, "a.yaml": _team(
        "[L4, H100-80GB]", ["{name: wide-cpu, gpus: 1, cpu: \"100\", memory: 100Gi}"])})
    verdict = _verdicts(folder)["wide-cpu"]
    assert verdict["verdict"] == "never"
    assert verdict["reason"] == ("Kueue would admit it on flavor l4, the first in the team's order with quota for "
                                 "it, but a pod asks 100 cpu; pool l4's nodes have 48 cpu: the pods would wait "
                                 "forever")


NODES = {"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "Node",
     "metadata": {"name": f"l4-{i}", "labels": {"example.com/pool": "l4"}},
     "status": {"allocatable": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": "4"}}}
    for i, (cpu, memory) in enumerate([("47500m", "180Gi")] * 15 + [("95", "370Gi")])]}


def test_node_size_from_a_node_export(tmp_path: Path) -> None:
    """`allocatable.nodesFrom`: each node with its own allocatable; a pod fits if one node holds it."""
    cluster = CLUSTER.replace('allocatable: {cpu: "48", memory: 192Gi}', "allocatable: {nodesFrom: nodes/l4.yaml}")
    folder = write_policy(tmp_path, {"cluster.yaml": cluster, "nodes/l4.yaml": yaml.safe_dump(NODES),
                                     "a.yaml": _team("[L4]", [HUGE_POD, "{name: big, gpus: 1, cpu: \"90\"}"])})
    verdicts = _verdicts(folder)
    assert verdicts["huge-pod"]["verdict"] == "never"
    assert verdicts["huge-pod"]["reason"].startswith(
        "a pod asks 200 cpu and 1500Gi memory; pool l4's nodes have at most 95 cpu and 370Gi memory")
    assert verdicts["big"]["verdict"] == "guaranteed"   # only the one larger node holds it


def test_the_default_share_of_a_full_node_pod_that_fits_no_node_is_a_warning(tmp_path: Path) -> None:
    cluster = CLUSTER.replace('{cpu: "48", memory: 192Gi}', '{cpu: "30", memory: 192Gi}')
    folder = write_policy(tmp_path, {"cluster.yaml": cluster, "a.yaml": _team("[L4]", ["{name: one, gpus: 1}"])})
    done = run_cli("validate", str(folder))
    assert done.returncode == 0, done.stderr
    assert "warning[KP340]" in done.stderr
    assert "a pod asking all 4 GPUs of a node comes with 32 cpu by default (resourcesPerGpu), more than its " \
           "nodes' 30" in done.stderr, done.stderr


BAD = {
    "negative cpu": ('{cpu: "48", memory: 192Gi}', '{cpu: "-4", memory: 192Gi}', "cluster.yaml:11:",
                     "quantity -4 is negative"),
    "not a quantity": ('{cpu: "48", memory: 192Gi}', '{cpu: "48", memory: lots}', "cluster.yaml:11:",
                       "not a Kubernetes quantity"),
    "zero memory": ('{cpu: "48", memory: 192Gi}', '{cpu: "48", memory: 0}', "cluster.yaml:11:", "is zero"),
    "both forms": ('{cpu: "48", memory: 192Gi}', '{cpu: "48", nodesFrom: n.yaml}', "cluster.yaml:11:",
                   "not both"),
    "empty": ('{cpu: "48", memory: 192Gi}', "{}", "cluster.yaml:11:", "needs cpu, memory or nodesFrom"),
    "export missing": ('{cpu: "48", memory: 192Gi}', "{nodesFrom: nodes/none.yaml}", "cluster.yaml:11:",
                       "allocatable.nodesFrom: policies/nodes/none.yaml is not a node export"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_node_sizes_are_refused_at_their_line(tmp_path: Path, case: str) -> None:
    old, new, where, words = BAD[case]
    folder = write_policy(tmp_path, {"cluster.yaml": CLUSTER.replace(old, new, 1),
                                     "a.yaml": _team("[L4]", ["{name: one, gpus: 1}"])})
    out = tmp_path / "out"
    before = snapshot(tmp_path)
    done = run_cli("compile", str(folder), "--out", str(out))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    line = next(l for l in done.stderr.splitlines() if "error[" in l)
    assert where in line and words in line, done.stderr
    assert not out.exists() and snapshot(tmp_path) == before
