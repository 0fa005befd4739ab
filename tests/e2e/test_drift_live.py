"""`kueue-policy drift --kubeconfig` on a live sandbox (etcd, kube-apiserver, Kueue's manager):
the synced example has no drift; then a quota edited with kubectl, a LocalQueue's ClusterQueue
deleted, an extra labelled object, a Node removed, the Kueue Configuration changed and a queue
paused are each named, and the queue Kueue deactivates shows as a health problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kp_testing import REPO_ROOT, run_cli
from kp_testing.sandbox import LiveCluster, compile_tree, running_sandbox, wait_until

pytestmark = pytest.mark.usefixtures("sandbox_built")

POLICY = REPO_ROOT / "policies"


def _nodes(cluster: LiveCluster, tree: Path, pool: str, count: int) -> None:
    """The pool's nodes as Node objects: labelled as its flavor selects, Ready (no kubelet runs,
    so the status is written through the status subresource)."""
    flavor = yaml.safe_load((tree / "kueue" / "resourceflavors" / f"{pool}.yaml").read_text())
    for index in range(count):
        name = f"{pool}-{index}"
        cluster.create([{"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": name, "labels": dict(flavor["spec"].get("nodeLabels") or {})}}])
        cluster.kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(
            {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                        "message": "ready", "lastHeartbeatTime": "2026-12-01T10:00:00Z",
                                        "lastTransitionTime": "2026-12-01T10:00:00Z"}]}}))


def _drift(cluster: LiveCluster) -> tuple[int, dict]:
    done = run_cli("drift", str(POLICY), "--kubeconfig", str(cluster.kubeconfig), "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_drift_names_each_change_on_a_live_cluster(tmp_path: Path) -> None:
    tree = compile_tree(POLICY, tmp_path / "out")
    with running_sandbox(tmp_path / "sandbox", tree) as cluster:
        cluster.apply([yaml.safe_load((tree / "kueue-config" / "kueue-manager-config.patch.yaml").read_text())])
        for pool, count in {"h100-ondemand": 8, "h100-spot": 4, "l40s-ondemand": 4, "h100-mig": 2}.items():
            _nodes(cluster, tree, pool, count)

        code, report = _drift(cluster)
        assert (code, report["objects"], report["health"]) == (0, [], []), json.dumps(report, indent=1)[:6000]
        assert report["unreadKinds"] == []

        # A quota raised by hand, as `kubectl edit` would.
        cluster.kubectl("patch", "clusterqueue", "alpha", "--type=json", "-p", json.dumps(
            [{"op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/2/nominalQuota", "value": "40"}]))
        # A node of the spot pool removed.
        cluster.kubectl("delete", "node", "h100-spot-3")
        # An object labelled as the tool's that the policy no longer compiles.
        retired = yaml.safe_load((tree / "kueue" / "localqueues" / "beta.default.yaml").read_text())
        retired["metadata"]["name"] = "retired"
        cluster.apply([retired])
        # The manager's Configuration changed in place.
        configmap = yaml.safe_load((tree / "kueue-config" / "kueue-manager-config.patch.yaml").read_text())
        config = yaml.safe_load(configmap["data"]["controller_manager_config.yaml"])
        config["clientConnection"]["qps"] = 50
        configmap["data"]["controller_manager_config.yaml"] = yaml.safe_dump(config)
        cluster.apply([configmap])
        # A ClusterQueue deleted: its LocalQueues point nowhere.
        cluster.kubectl("delete", "clusterqueue", "delta")

        code, report = _drift(cluster)
        assert code == 1
        objects = {(o["kind"], o["namespace"], o["name"]): o for o in report["objects"]}
        assert objects[("ClusterQueue", None, "alpha")]["changes"] == [
            {"path": "spec.resourceGroups[0].flavors[h100-ondemand].resources[nvidia.com/gpu].nominalQuota",
             "desired": "32", "live": "40"}]
        assert objects[("ClusterQueue", None, "delta")]["state"] == "missing"
        assert objects[("LocalQueue", "beta", "retired")]["state"] == "extra"
        assert objects[("ConfigMap", "kueue-system", "kueue-manager-config")]["changes"] == [
            {"path": "data.controller_manager_config.yaml: clientConnection.qps", "desired": 300, "live": 50}]
        assert set(objects) == {("ClusterQueue", None, "alpha"), ("ClusterQueue", None, "delta"),
                                ("LocalQueue", "beta", "retired"),
                                ("ConfigMap", "kueue-system", "kueue-manager-config")}
        problems = {(h["problem"], h["name"]) for h in report["health"]}
        assert ("fewer-nodes", "h100-spot") in problems
        assert ("dangling-localqueue", "delta-sweeps/default") in problems

        # A queue paused by hand: Kueue deactivates it, which drift sees and Argo CD's health does not.
        cluster.kubectl("patch", "clusterqueue", "gamma", "--type=merge", "-p", '{"spec":{"stopPolicy":"Hold"}}')

        def inactive():
            _, now = _drift(cluster)
            return [h for h in now["health"] if h["problem"] == "inactive"] or None
        found = wait_until("Kueue to deactivate a ClusterQueue", inactive, timeout=60, interval=1)
        assert [h["name"] for h in found] == ["gamma"] and "Stopped" in found[0]["detail"], found
        _, report = _drift(cluster)
        gamma = next(o for o in report["objects"] if o["name"] == "gamma")
        assert gamma["changes"] == [{"path": "spec.stopPolicy", "desired": None, "live": "Hold"}]
