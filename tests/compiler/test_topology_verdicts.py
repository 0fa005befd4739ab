"""Verdicts on pools with a topology: the pods are placed on the pool's nodes as Kueue's TAS
places them, so quota alone no longer decides.

Pool h100: 2 racks of 3 hosts x 8 GPUs (48 GPUs). Team a is guaranteed 20 GPUs, team b 28, in one
cohort. Positive control throughout: the same policy without the topology gives the quota-only
verdicts, which the topology changes."""

from __future__ import annotations

import json
from pathlib import Path

from kp_testing import run_cli
from kp_testing.policies import write_policy

CLUSTER = """\
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  kueueVersion: "0.19"
  gpuAccess: device-plugin
  pools:
    - name: h100
      gpu: H100-80GB
      nodes: 6
      gpusPerNode: 8
      topology:
        levels:
          - {nodeLabel: example.com/rack, holds: 3}
          - {nodeLabel: kubernetes.io/hostname}
  cohorts:
    - name: research
"""

TEAM_A = """\
apiVersion: kueue-policy/v1alpha1
kind: Team
metadata: {name: a}
spec:
  cohort: research
  namespaces: [a]
  gpus: {guaranteed: 20}
  workloads:
    - {name: fits, replicas: 2, gpus: 8, topology: {required: example.com/rack}}
    - {name: odd, replicas: 3, gpus: 6, topology: {required: example.com/rack}}
    - {name: huge, replicas: 4, gpus: 8, topology: {required: example.com/rack}}
    - {name: spread, replicas: 4, gpus: 8, topology: {preferred: example.com/rack}}
"""

TEAM_B = """\
apiVersion: kueue-policy/v1alpha1
kind: Team
metadata: {name: b}
spec:
  cohort: research
  namespaces: [b]
  gpus: {guaranteed: 28}
"""


def _verdicts(root: Path, cluster: str = CLUSTER) -> tuple[dict[str, dict], dict, str]:
    policy = write_policy(root, {"cluster.yaml": cluster, "a.yaml": TEAM_A, "b.yaml": TEAM_B})
    done = run_cli("compile", str(policy), "--out", str(root / "out"), "--allow-inadmissible")
    assert done.returncode == 0, done.stderr
    report = json.loads((root / "out" / "lab" / "report.json").read_text())
    return ({w["name"]: w for w in report["workloads"]}, report,
            (root / "out" / "lab" / "REPORT.md").read_text())


def _quota_only_verdicts(root: Path, monkeypatch) -> dict[str, str]:
    """Positive control: the same policy with the placement step switched off."""
    from compiler.stages import admissibility
    from compiler.stages.pipeline import PolicySource, compile_policy

    monkeypatch.setattr(admissibility, "_with_topology", lambda cluster, build, verdicts, workloads: verdicts)
    policy = write_policy(root, {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A, "b.yaml": TEAM_B})
    result = compile_policy(PolicySource.from_directory(policy))
    report = json.loads(result.clusters["lab"].files["report.json"])
    return {w["name"]: w["verdict"] for w in report["workloads"]}


def test_topology_decides_verdicts_that_quota_alone_gets_wrong(tmp_path: Path, monkeypatch) -> None:
    verdicts, report, markdown = _verdicts(tmp_path / "tas")
    said = {name: v["verdict"] for name, v in verdicts.items()}
    assert _quota_only_verdicts(tmp_path / "plain", monkeypatch) == {
        "fits": "guaranteed", "odd": "guaranteed", "huge": "borrowing", "spread": "borrowing"}
    assert said == {"fits": "guaranteed", "odd": "borrowing", "huge": "never", "spread": "borrowing"}

    # 4 pods of 8 GPUs in one rack of 3 hosts: never, whatever the quota.
    assert verdicts["huge"]["reason"].startswith(
        "Kueue's topology-aware scheduling cannot place it on flavor h100 even with every node free: needs 4 pods x ")
    assert "in one rack; the roomiest rack has room for 3" in verdicts["huge"]["reason"]
    # 18 GPUs within a's 20, but b's 28 GPUs packed (rack 0 full, 4 GPUs on a host of rack 1)
    # leave rack 1 room for only 2 pods of 6 GPUs.
    assert verdicts["odd"]["reason"].startswith("fits the team's own quota on flavor h100, but with every other "
                                                "team using its guarantee (28 of the pool's 48 GPUs taken")
    assert "the roomiest rack has room for 2" in verdicts["odd"]["reason"]
    # REPORT.md and report.json say which placement the verdicts assumed.
    assert report["topologyPlacement"] == [{
        "pool": "h100", "topology": "h100", "levels": ["example.com/rack", "kubernetes.io/hostname"], "nodes": 6,
        "source": "regular", "background": report["topologyPlacement"][0]["background"]}]
    assert "whole-node pods" in report["topologyPlacement"][0]["background"]
    assert "## Topology placement" in markdown and "whole-node pods" in markdown


def test_a_workload_only_uses_flavors_with_its_levels(tmp_path: Path) -> None:
    """Kueue's flavor assigner skips a flavor whose Topology lacks the requested level: the
    NVL72 fixture's finetune (preferred rack, 8 GPUs per pod) goes to h100, not gb200."""
    fixture = Path(__file__).parent / "topology_policies" / "nvl72"
    done = run_cli("compile", str(fixture), "--out", str(tmp_path / "out"), "--allow-inadmissible")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "gb" / "report.json").read_text())
    finetune = next(w for w in report["workloads"] if w["name"] == "finetune")
    assert (finetune["verdict"], finetune["flavor"]) == ("borrowing", "h100"), finetune


IRREGULAR = """\
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  kueueVersion: "0.19"
  gpuAccess: device-plugin
  pools:
    - name: h100
      gpu: H100-80GB
      nodes: 6
      gpusPerNode: 8
      topology:
        levels:
          - nodeLabel: example.com/rack
          - nodeLabel: kubernetes.io/hostname
        nodesFrom: nodes/h100.yaml
  cohorts:
    - name: research
"""


def _node(name: str, rack: str, ready: bool = True, taint: bool = False) -> str:
    taints = "  spec: {taints: [{key: example.com/maintenance, effect: NoSchedule}]}\n" if taint else ""
    return (f"- apiVersion: v1\n  kind: Node\n  metadata:\n    name: {name}\n    labels: {{kueue-policy.io/pool: h100, "
            f"example.com/rack: {rack}, kubernetes.io/hostname: {name}}}\n{taints}"
            f"  status:\n    allocatable: {{cpu: '128', memory: 1Ti, nvidia.com/gpu: '8', pods: '110'}}\n"
            f"    conditions: [{{type: Ready, status: '{ready}'}}]\n")


def _export_verdicts(root: Path, *, broken: bool) -> tuple[dict[str, dict], dict]:
    export = "apiVersion: v1\nkind: List\nitems:\n" + "".join(
        [_node("a-0", "r1"), _node("a-1", "r1"), _node("a-2", "r1", ready=not broken),
         _node("b-0", "r2"), _node("b-1", "r2"), _node("b-2", "r2", taint=broken)])
    team = TEAM_A.replace("gpus: {guaranteed: 20}", "gpus: {guaranteed: 48}")
    policy = write_policy(root, {"cluster.yaml": IRREGULAR, "a.yaml": team, "nodes/h100.yaml": export})
    done = run_cli("compile", str(policy), "--out", str(root / "out"), "--allow-inadmissible")
    assert done.returncode == 0, done.stderr
    report = json.loads((root / "out" / "lab" / "report.json").read_text())
    return {w["name"]: w for w in report["workloads"]}, report


def test_a_node_export_is_placed_as_kueue_reads_it(tmp_path: Path) -> None:
    """Rack r1 has 3 hosts, one not Ready; rack r2 has 3, one tainted: no rack has 3 usable hosts."""
    # Positive control: with every host usable, 3 pods of 6 GPUs fit a rack.
    assert _export_verdicts(tmp_path / "whole", broken=False)[0]["odd"]["verdict"] == "guaranteed"
    verdicts, report = _export_verdicts(tmp_path / "broken", broken=True)
    # 3 pods of 6 GPUs in one rack: each rack has only 2 usable hosts (with all six, it would fit).
    assert verdicts["odd"]["verdict"] == "never", verdicts["odd"]
    assert verdicts["odd"]["reason"].endswith("the roomiest rack has room for 2 (nodes left out: 1 not Ready, "
                                              "1 taint \"example.com/maintenance:NoSchedule\")"), verdicts["odd"]["reason"]
    assert verdicts["fits"]["verdict"] == "guaranteed"
    assert report["topologyPlacement"][0]["source"] == "policies/nodes/h100.yaml"
