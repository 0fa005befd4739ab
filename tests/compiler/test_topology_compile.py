"""What a policy with topology compiles to: one Kueue Topology per distinct level list, the
flavors' topologyName, the pod-set annotations in REPORT.md and report.json, byte-stable."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from compiler.stages.pipeline import PolicySource, compile_policy
from compiler.language.policy import WorkloadTopology
from compiler.stages.topology import podset_annotations
from compiler.verify import verify_objects

FIXTURE = Path(__file__).parent / "topology_policies" / "nvl72"


def _compiled(root: Path = FIXTURE):
    return compile_policy(PolicySource.from_directory(root))


def _objects(result, kind: str) -> dict[str, dict]:
    return {b.name: b.obj for b in result.clusters["gb"].objects if b.kind == kind}


def test_topologies_and_flavors(tmp_path):
    result = _compiled()
    topologies = _objects(result, "Topology")
    assert {name: [level["nodeLabel"] for level in t["spec"]["levels"]] for name, t in topologies.items()} == {
        "nvlink": ["nvidia.com/gpu.clique", "kubernetes.io/hostname"],
        "h100": ["example.com/block", "example.com/rack", "kubernetes.io/hostname"]}
    assert all(t["apiVersion"] == "kueue.x-k8s.io/v1beta2" for t in topologies.values())
    flavors = _objects(result, "ResourceFlavor")
    assert flavors["gb200"]["spec"] == {"nodeLabels": {"kueue-policy.io/pool": "gb200"}, "topologyName": "nvlink"}
    assert flavors["h100"]["spec"]["topologyName"] == "h100"
    files = result.clusters["gb"].files
    assert "kueue/topologies/nvlink.yaml" in yaml.safe_load(files["kustomization.yaml"])["resources"]
    # The verifier (Kueue's CRD rules) accepts them; positive control: the same Topology with the
    # hostname level first is refused.
    assert verify_objects(list(topologies.values()) + list(flavors.values()), "1.34", "0.19") == []
    broken = json.loads(json.dumps(topologies["h100"]))
    broken["spec"]["levels"].reverse()
    assert [p.message for p in verify_objects([broken], "1.34", "0.19")] == [
        'levels: Invalid value: "array": the kubernetes.io/hostname label can only be used at the lowest level of '
        'topology']


def test_pools_with_the_same_levels_share_one_topology(tmp_path):
    root = tmp_path / "p"
    shutil.copytree(FIXTURE, root)
    cluster = root / "cluster.yaml"
    data = yaml.safe_load(cluster.read_text())
    twin = json.loads(json.dumps(data["spec"]["pools"][0]))
    twin["name"], twin["capacity"] = "gb200-spot", "spot"
    del twin["topology"]["name"]
    data["spec"]["pools"].append(twin)
    cluster.write_text(yaml.safe_dump(data, sort_keys=False))
    result = _compiled(root)
    assert sorted(_objects(result, "Topology")) == ["h100", "nvlink"]
    assert _objects(result, "ResourceFlavor")["gb200-spot"]["spec"]["topologyName"] == "nvlink"


def test_a_policy_without_topology_emits_none():
    result = compile_policy(PolicySource.from_directory(Path(__file__).parents[2] / "policies"))
    for cluster in result.clusters.values():
        assert not [b for b in cluster.objects if b.kind == "Topology"]
        assert all("topologyName" not in b.obj["spec"] for b in cluster.objects if b.kind == "ResourceFlavor")
        assert "topologyRequests" not in cluster.report and "## Topology" not in cluster.files["REPORT.md"]


def test_annotations_per_request_form():
    def shown(**fields):
        return podset_annotations(WorkloadTopology(**fields))
    assert shown(required="example.com/rack") == {"kueue.x-k8s.io/podset-required-topology": "example.com/rack"}
    assert shown(preferred="example.com/rack", slices=[{"level": "kubernetes.io/hostname", "size": 2}]) == {
        "kueue.x-k8s.io/podset-preferred-topology": "example.com/rack",
        "kueue.x-k8s.io/podset-slice-required-topology": "kubernetes.io/hostname",
        "kueue.x-k8s.io/podset-slice-size": "2"}
    layered = shown(slices=[{"level": "example.com/block", "size": 8}, {"level": "example.com/rack", "size": 4}])
    assert json.loads(layered["kueue.x-k8s.io/podset-slice-required-topology-constraints"]) == [
        {"topology": "example.com/block", "size": 8}, {"topology": "example.com/rack", "size": 4}]
    assert podset_annotations(None) == {}


def test_report_shows_the_topologies_and_the_annotations():
    cluster = _compiled().clusters["gb"]
    pools = {p["name"]: p for p in cluster.report["pools"]}
    assert pools["h100"]["topology"] == {
        "name": "h100", "levels": ["example.com/block", "example.com/rack", "kubernetes.io/hostname"],
        "shape": "nvl72/nodes/h100.yaml", "nodes": 8,
        "domains": {"example.com/block": 2, "example.com/rack": 3, "kubernetes.io/hostname": 8}}
    assert pools["gb200"]["topology"]["domains"] == {"nvidia.com/gpu.clique": 2, "kubernetes.io/hostname": 36}
    requests = {r["workload"]: r["annotations"] for r in cluster.report["topologyRequests"]}
    assert set(requests) == {"pretrain", "finetune", "sharded"}  # eval declares no topology
    markdown = cluster.files["REPORT.md"]
    assert "| llm | pretrain | `kueue.x-k8s.io/podset-required-topology: nvidia.com/gpu.clique` |" in markdown
    assert "| gb200 | nvlink | `nvidia.com/gpu.clique` > `kubernetes.io/hostname` | regular | 36 | 2 / 36 |" in markdown


def test_output_is_byte_stable(tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(FIXTURE, root)
    first, second = _compiled().clusters["gb"].files, _compiled(root).clusters["gb"].files
    assert first.keys() == second.keys()
    # Same bytes; only the display path of the policy folder differs (its last segment is the same).
    assert all(first[k] == second[k].replace("copy/", "nvl72/") for k in first)
