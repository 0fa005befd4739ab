"""The escape hatch written by hand: each field compiles to the same Kueue field, and what would
make a quota the ClusterQueue does not hold is refused at its line."""

from __future__ import annotations

from pathlib import Path

import yaml

from kp_testing import run_cli
from kp_testing.policies import write_policy

CLUSTER = """\
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  rootCohort: false
  namespaces: external
  pools:
    - name: default-flavor
      gpu: L4
      nodes: 2
      gpusPerNode: 4
      flavorSpec: {}
    - {name: l4, gpu: L4, nodes: 2, gpusPerNode: 4, nodeLabels: {pool: l4}}
  cohorts:
    - name: org
      resourceGroups:
      - coveredResources: [cpu]
        flavors: [{name: default-flavor, resources: [{name: cpu, nominalQuota: "10"}]}]
  kueueTopologies:
    - {name: racks, levels: [example.com/rack, kubernetes.io/hostname]}
"""

TEAM = """\
apiVersion: kueue-policy/v1alpha1
kind: Team
metadata: {{name: team-a-cq}}
spec:
  cohort: org
  {extra}
  kueue:
    namespaceSelector: {{}}
    stopPolicy: Hold
    flavorFungibility: {{whenCanBorrow: TryNextFlavor, whenCanPreempt: MayStopSearch}}
    localQueues: [{{namespace: team-a, name: user-queue, stopPolicy: HoldAndDrain}}]
    resourceGroups:
    - coveredResources: [cpu, memory]
      flavors: [{{name: default-flavor, resources: [{{name: cpu, nominalQuota: "36"}}, {{name: memory, nominalQuota: 200Gi}}]}}]
    - coveredResources: [nvidia.com/gpu]
      flavors: [{{name: l4, resources: [{{name: nvidia.com/gpu, nominalQuota: "4", borrowingLimit: "2"}}]}}]
"""


def _compiled(tmp_path: Path, extra: str = "") -> tuple[int, str, Path]:
    policy = write_policy(tmp_path, {"cluster.yaml": CLUSTER, "teams/a.yaml": TEAM.format(extra=extra)})
    done = run_cli("compile", str(policy), "--out", str(tmp_path / "out"))
    return done.returncode, done.stderr, tmp_path / "out" / "lab"


def test_each_field_compiles_to_the_same_kueue_field(tmp_path: Path) -> None:
    code, stderr, out = _compiled(tmp_path)
    assert code == 0, stderr
    queue = yaml.safe_load((out / "kueue" / "clusterqueues" / "team-a-cq.yaml").read_text())["spec"]
    assert queue["namespaceSelector"] == {} and queue["stopPolicy"] == "Hold"
    assert queue["flavorFungibility"] == {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "MayStopSearch"}
    assert [g["coveredResources"] for g in queue["resourceGroups"]] == [["cpu", "memory"], ["nvidia.com/gpu"]]
    local = yaml.safe_load((out / "kueue" / "localqueues" / "team-a.user-queue.yaml").read_text())
    assert local["spec"] == {"clusterQueue": "team-a-cq", "stopPolicy": "HoldAndDrain"}
    assert not (out / "kueue" / "localqueues" / "team-a.default.yaml").exists()
    flavor = yaml.safe_load((out / "kueue" / "resourceflavors" / "default-flavor.yaml").read_text())
    assert flavor["spec"] == {}
    cohort = yaml.safe_load((out / "kueue" / "cohorts" / "org.yaml").read_text())["spec"]
    assert cohort["resourceGroups"][0]["flavors"][0]["resources"] == [{"name": "cpu", "nominalQuota": "10"}]
    assert "parentName" not in cohort and not (out / "kueue" / "cohorts" / "lab.yaml").exists()  # rootCohort: false
    topology = yaml.safe_load((out / "kueue" / "topologies" / "racks.yaml").read_text())
    assert topology["spec"]["levels"] == [{"nodeLabel": "example.com/rack"}, {"nodeLabel": "kubernetes.io/hostname"}]


def test_budget_and_written_quota_together_are_refused(tmp_path: Path) -> None:
    code, stderr, out = _compiled(tmp_path, "gpus: {guaranteed: 4}")
    assert code == 1 and "teams/a.yaml:" in stderr and "not both" in stderr, stderr
    assert not out.exists()


def test_a_team_without_namespaces_needs_a_selector(tmp_path: Path) -> None:
    policy = write_policy(tmp_path, {"cluster.yaml": CLUSTER, "teams/b.yaml": (
        "apiVersion: kueue-policy/v1alpha1\nkind: Team\nmetadata: {name: b}\nspec:\n  cohort: org\n")})
    done = run_cli("validate", str(policy))
    assert done.returncode == 1 and "teams/b.yaml:" in done.stderr and "namespaceSelector" in done.stderr
