"""`kueue-policy drift --live EXPORT`, run as a subprocess on the example policy and an export
made from its own compile (what a cluster holds right after Argo CD synced it), then edited the
way people and controllers edit clusters."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from kp_testing import REPO_ROOT, run_cli

POLICY = REPO_ROOT / "policies"
POOL_NODES = {"h100-ondemand": 8, "h100-spot": 4, "l40s-ondemand": 4, "h100-mig": 2}


@pytest.fixture(scope="module")
def synced(tmp_path_factory) -> list[dict]:
    """The compiled example as the cluster holds it once synced: every object, Kueue's
    ConfigMap, the defaults Kueue writes, Active ClusterQueues and the pools' Ready nodes."""
    out = tmp_path_factory.mktemp("out")
    done = run_cli("compile", str(POLICY), "--out", str(out), "-q")
    assert done.returncode == 0, done.stderr
    tree = out / "gpu-east"
    items = [yaml.safe_load((tree / r).read_text())
             for r in yaml.safe_load((tree / "kustomization.yaml").read_text())["resources"]]
    for item in items:
        item["metadata"].update(uid="0f3c", resourceVersion="812", creationTimestamp="2026-12-01T10:00:00Z",
                                managedFields=[{"manager": "argocd-controller"}])
        if item["kind"] == "ClusterQueue":
            item["spec"].setdefault("stopPolicy", "None")
            item["spec"].setdefault("flavorFungibility", {"whenCanBorrow": "MayStopSearch",
                                                          "whenCanPreempt": "TryNextFlavor"})
            item["status"] = {"conditions": [{"type": "Active", "status": "True", "reason": "Ready"}]}
        if item["kind"] == "LocalQueue":
            item["spec"].setdefault("stopPolicy", "None")
    items.append(yaml.safe_load((tree / "kueue-config" / "kueue-manager-config.patch.yaml").read_text()))
    flavors = {i["metadata"]["name"]: i for i in items if i["kind"] == "ResourceFlavor"}
    for pool, count in POOL_NODES.items():
        labels = flavors[pool]["spec"].get("nodeLabels", {})
        for index in range(count):
            items.append({"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": f"{pool}-{index}", "labels": dict(labels)},
                          "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    return items


def _export(tmp_path: Path, items: list[dict], name: str = "live.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}, sort_keys=False))
    return path


def _drift(export: Path, *extra: str):
    return run_cli("drift", str(POLICY), "--live", str(export), *extra)


def _find(items: list[dict], kind: str, name: str) -> dict:
    return next(i for i in items if i["kind"] == kind and i["metadata"]["name"] == name)


def test_a_synced_cluster_has_no_drift(tmp_path, synced):
    done = _drift(_export(tmp_path, synced), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["drift"] is False and report["objects"] == [] and report["health"] == []
    assert report["compared"] > 40


def test_a_quota_raised_with_kubectl_edit_is_named_field_by_field(tmp_path, synced):
    live = copy.deepcopy(synced)
    alpha = _find(live, "ClusterQueue", "alpha")
    flavor = next(f for f in alpha["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "h100-ondemand")
    gpu = next(r for r in flavor["resources"] if r["name"] == "nvidia.com/gpu")
    gpu["nominalQuota"] = 48
    done = _drift(_export(tmp_path, live), "--format", "json")
    assert done.returncode == 1, done.stderr
    objects = json.loads(done.stdout)["objects"]
    assert objects == [{"kind": "ClusterQueue", "group": "kueue.x-k8s.io", "namespace": None, "name": "alpha",
                        "state": "changed", "source": objects[0]["source"],
                        "changes": [{"path": "spec.resourceGroups[0].flavors[h100-ondemand].resources"
                                             "[nvidia.com/gpu].nominalQuota", "desired": "32", "live": 48}]}]
    assert objects[0]["source"].endswith("teams/alpha.yaml")


def test_a_field_only_the_cluster_has_is_drift_unless_it_is_a_default(tmp_path, synced):
    live = copy.deepcopy(synced)
    beta = _find(live, "ClusterQueue", "beta")
    beta["spec"]["stopPolicy"] = "Hold"                   # not the default None: someone paused it
    resources = beta["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    mig = next(r for r in resources if "borrowingLimit" not in r)
    mig["borrowingLimit"] = "4"
    done = _drift(_export(tmp_path, live))
    assert done.returncode == 1
    assert "spec.stopPolicy: (absent) -> Hold (live)" in done.stdout
    assert f"[{mig['name']}].borrowingLimit: (absent) -> 4 (live)" in done.stdout
    # The defaults Kueue writes (stopPolicy None, flavorFungibility) are not drift: the fixture
    # carries them on every queue, and only beta's two edits are reported.
    assert done.stdout.count("ClusterQueue") == 1


def test_missing_extra_and_unlabelled_objects(tmp_path, synced):
    live = [i for i in synced if not (i["kind"] == "LocalQueue" and i["metadata"]["namespace"] == "beta")]
    old = copy.deepcopy(_find(synced, "ClusterQueue", "alpha"))
    old["metadata"]["name"] = "retired-team"
    handmade = copy.deepcopy(old)
    handmade["metadata"]["name"] = "handmade"
    del handmade["metadata"]["labels"]
    done = _drift(_export(tmp_path, live + [old, handmade]), "--format", "json")
    assert done.returncode == 1
    states = {(o["kind"], o["name"]): o["state"] for o in json.loads(done.stdout)["objects"]}
    assert states == {("LocalQueue", "default"): "missing", ("ClusterQueue", "retired-team"): "extra"}


def test_live_health_the_gitops_tool_does_not_see(tmp_path, synced):
    live = copy.deepcopy(synced)
    gamma = _find(live, "ClusterQueue", "gamma")
    gamma["status"]["conditions"] = [{"type": "Active", "status": "False", "reason": "FlavorNotFound",
                                      "message": "Can't admit new workloads: references missing ResourceFlavor(s)"}]
    orphan = copy.deepcopy(_find(live, "LocalQueue", "default"))
    orphan["metadata"].update(name="orphan", namespace="scratch")
    orphan["metadata"].pop("labels")
    orphan["spec"]["clusterQueue"] = "nobody"
    live = [i for i in live if i["metadata"]["name"] not in ("h100-spot-0", "h100-spot-1")] + [orphan]
    _find(live, "Node", "h100-spot-2")["spec"] = {"unschedulable": True}
    done = _drift(_export(tmp_path, live), "--format", "json")
    assert done.returncode == 1
    details = [h["detail"] for h in json.loads(done.stdout)["health"]]
    assert details == [
        "ClusterQueue gamma is not Active (FlavorNotFound: Can't admit new workloads: references missing "
        "ResourceFlavor(s))",
        "LocalQueue scratch/orphan points at ClusterQueue nobody, which does not exist: its jobs wait forever",
        "ResourceFlavor h100-spot: 1 Ready node(s) carry its nodeLabels (1 more not Ready or cordoned); "
        "pool h100-spot declares 4"]


def test_a_changed_kueue_configuration_is_named_by_its_field(tmp_path, synced):
    live = copy.deepcopy(synced)
    configmap = _find(live, "ConfigMap", "kueue-manager-config")
    config = yaml.safe_load(configmap["data"]["controller_manager_config.yaml"])
    config["waitForPodsReady"] = {"enable": True, "timeout": "5m"}
    configmap["data"]["controller_manager_config.yaml"] = yaml.safe_dump(config)
    done = _drift(_export(tmp_path, live), "--format", "markdown")
    assert done.returncode == 1
    assert "## Drift on cluster `gpu-east`" in done.stdout
    assert "| ConfigMap `kueue-system/kueue-manager-config` | changed | " \
           "`data.controller_manager_config.yaml: waitForPodsReady.timeout` | `(absent)` | `5m` |" in done.stdout


def test_kinds_not_in_the_export_are_said_not_compared(tmp_path, synced):
    live = [i for i in synced if i["kind"] != "MutatingAdmissionPolicy"]
    done = _drift(_export(tmp_path, live))
    assert done.returncode == 0, done.stdout
    assert "note     MutatingAdmissionPolicy: not read from the cluster" in done.stdout


def test_bad_input(tmp_path, synced):
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: List\nitems:\n  - {kind: Node\n")
    done = _drift(broken)
    assert done.returncode == 1 and f"{broken}:" in done.stderr and "Traceback" not in done.stderr
    done = _drift(tmp_path / "nowhere.yaml")
    assert done.returncode == 1 and "no such file" in done.stderr
    done = run_cli("drift", str(POLICY), "--live", str(_export(tmp_path, synced)), "--context", "prod")
    assert done.returncode == 2 and "one or the other" in done.stderr
    done = run_cli("drift", str(POLICY), "--cluster", "gpu-west", "--live", str(_export(tmp_path, synced)))
    assert done.returncode == 1 and "gpu-west" in done.stderr


def test_an_unreachable_cluster_is_an_environment_failure(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    done = run_cli("drift", str(POLICY), "--kubeconfig", str(kubeconfig))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "KP540" in done.stderr and "Traceback" not in done.stderr
