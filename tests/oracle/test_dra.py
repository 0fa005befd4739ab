"""DRA: Jobs whose pods claim devices through a ResourceClaimTemplate are charged, by Kueue's
own workload-controller DRA step run in the oracle (oracle/dra.go), count x pods of the
resource the Configuration's deviceClassMappings map the DeviceClass to, as on a live Kueue
v0.19.2. The oracle admits exactly what fits, names nvidia.com/gpu in the pending reason,
keeps the usage of Workloads already holding quota, and requeues a preempted one with its
device requests; `kueue-policy evaluate` (the Python engine) gives the same JSON.

Without the DRA step (the oracle before it) the claims counted for nothing: every Job was
admitted on cpu alone and nothing was preempted, so these tests fail."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml as pyyaml

from kp_testing import run_cli

GPU = "nvidia.com/gpu"
FLAVOR = "h100-ondemand"
CONFIG_TEXT = f"""apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
resources:
  deviceClassMappings:
  - name: {GPU}
    deviceClassNames: [gpu.nvidia.com]
"""


def _config_map() -> dict:
    # kueue-policy's kueue-config/kueue-manager-config.patch.yaml: the ConfigMap Kueue mounts.
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
            "data": {"controller_manager_config.yaml": CONFIG_TEXT}}


def _cluster_queue(preemption: dict | None = None) -> dict:
    spec = {"namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu", GPU], "flavors": [{
                "name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": "64"},
                                              {"name": GPU, "nominalQuota": "16"}]}]}]}
    if preemption:
        spec["preemption"] = preemption
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "gpu-cq"}, "spec": spec}


def _pod_spec() -> dict:
    return {"restartPolicy": "Never",
            "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}],
            "containers": [{"name": "trainer", "image": "trainer:1",
                            "resources": {"requests": {"cpu": "4"}, "claims": [{"name": "gpus"}]}}]}


def _job(name: str, pods: int, created: str, priority_class: str | None = None) -> dict:
    labels = {"kueue.x-k8s.io/queue-name": "team-a"}
    if priority_class:
        labels["kueue.x-k8s.io/priority-class"] = priority_class
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "team-a", "labels": labels, "creationTimestamp": created},
            "spec": {"parallelism": pods, "completions": pods, "suspend": True,
                     "template": {"spec": _pod_spec()}}}


def _held(name: str, pods: int, priority: int = 0) -> dict:
    """A Workload holding quota, as a live cluster's export shows it: status.admission carries
    the device resource the DRA step charged (8 per pod)."""
    when = "2026-01-01T00:00:30Z"
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": "team-a", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"queueName": "team-a", "priority": priority,
                 "podSets": [{"name": "main", "count": pods, "template": {"spec": _pod_spec()}}]},
        "status": {
            "admission": {"clusterQueue": "gpu-cq", "podSetAssignments": [{
                "name": "main", "count": pods, "flavors": {"cpu": FLAVOR, GPU: FLAVOR},
                "resourceUsage": {"cpu": str(4 * pods), GPU: str(8 * pods)}}]},
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                 "message": "Quota reserved in ClusterQueue gpu-cq", "lastTransitionTime": when},
                {"type": "Admitted", "status": "True", "reason": "Admitted",
                 "message": "The workload is admitted", "lastTransitionTime": when}]}}


def _world(tmp_path: Path, *objects: dict, preemption: dict | None = None) -> list[str]:
    base = [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
         "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "eight-gpus", "namespace": "team-a"},
         "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
             "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 8}}]}}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}},
        _cluster_queue(preemption),
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
         "metadata": {"name": "team-a", "namespace": "team-a"}, "spec": {"clusterQueue": "gpu-cq"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
         "metadata": {"name": "urgent"}, "value": 1000},
        *objects,
    ]
    world = tmp_path / "world.yaml"
    world.write_text(pyyaml.safe_dump_all(base, sort_keys=False))
    config = tmp_path / "kueue-manager-config.patch.yaml"
    config.write_text(pyyaml.safe_dump(_config_map(), sort_keys=False))
    return [str(world), str(config)]


def _both(oracle_bin: Path, files: list[str]) -> dict:
    """The oracle's JSON, after checking the Python engine prints the same bytes."""
    kueue = subprocess.run([str(oracle_bin), *files], capture_output=True, text=True, timeout=300, check=False)
    assert kueue.returncode == 0, kueue.stderr
    python = run_cli("evaluate", *files, "--format", "json")
    assert python.returncode == 0, python.stderr
    assert json.loads(kueue.stdout) == json.loads(python.stdout)
    assert kueue.stdout.strip() == python.stdout.strip()
    return json.loads(kueue.stdout)


def _by_job(result: dict) -> dict[str, dict]:
    # Job Workloads are named job-<name>-<hash>; held ones keep their own name.
    out = {}
    for wl in result["workloads"]:
        name = wl["name"].split("/", 1)[1]
        out[name.rsplit("-", 1)[0].removeprefix("job-") if name.startswith("job-") else name] = wl
    return out


def test_claims_are_charged_so_exactly_what_fits_is_admitted(oracle_bin, tmp_path):
    files = _world(tmp_path, _held("running", 1),
                   _job("train-1", 1, "2026-01-01T00:01:00Z"),
                   _job("train-2", 2, "2026-01-01T00:02:00Z"),
                   _job("train-3", 1, "2026-01-01T00:03:00Z"))
    result = _both(oracle_bin, files)
    wls = _by_job(result)
    assert {name: wl["status"] for name, wl in wls.items()} == {
        "running": "running", "train-1": "admitted", "train-2": "pending", "train-3": "pending"}
    # 8 held + 8 admitted = the quota of 16: train-2 needs 2 pods x 8, train-3 1 x 8.
    assert wls["train-2"]["reason"] == (
        f"couldn't assign flavors to pod set main: insufficient unused quota for {GPU} in flavor "
        f"{FLAVOR}, 16 more needed")
    assert wls["train-3"]["reason"] == (
        f"couldn't assign flavors to pod set main: insufficient unused quota for {GPU} in flavor "
        f"{FLAVOR}, 8 more needed")
    assert wls["train-1"]["assignment"] == {"main": {"cpu": FLAVOR, GPU: FLAVOR}}
    (cq,) = result["clusterQueues"]
    assert cq["usage"] == {FLAVOR: {"cpu": "8", GPU: "16"}}   # the held Workload keeps its 8


def test_a_preempted_workload_is_requeued_with_its_device_requests(oracle_bin, tmp_path):
    files = _world(tmp_path, _held("low", 2),
                   _job("urgent-1", 1, "2026-01-01T00:01:00Z", priority_class="urgent"),
                   preemption={"withinClusterQueue": "LowerPriority"})
    result = _both(oracle_bin, files)
    wls = _by_job(result)
    assert wls["urgent-1"]["status"] == "admitted"
    assert wls["low"]["status"] == "preempted"
    assert wls["low"]["preemptedBy"] == wls["urgent-1"]["name"]
    (cq,) = result["clusterQueues"]
    # Back in its queue, the victim asks for its 16 again: only 8 are free.
    assert cq["usage"] == {FLAVOR: {"cpu": "4", GPU: "8"}}


def test_a_claim_charges_what_the_same_request_written_directly_charges(oracle_bin, tmp_path):
    """The DRA step's 8 devices per pod count exactly as a device-plugin request of 8
    nvidia.com/gpu per pod: the oracle prints the same bytes for both worlds."""
    def objects(direct: bool) -> list[dict]:
        objs = [_held("running", 1), _job("train-1", 1, "2026-01-01T00:01:00Z"),
                _job("train-2", 2, "2026-01-01T00:02:00Z"), _job("train-3", 1, "2026-01-01T00:03:00Z")]
        for obj in objs if direct else []:
            spec = (obj["spec"]["podSets"][0] if obj["kind"] == "Workload" else obj["spec"])["template"]["spec"]
            del spec["resourceClaims"]
            resources = spec["containers"][0]["resources"]
            del resources["claims"]
            resources["requests"][GPU] = "8"
        return objs

    outputs = []
    for direct in (False, True):
        folder = tmp_path / ("direct" if direct else "claims")
        folder.mkdir()
        files = _world(folder, *objects(direct))
        done = subprocess.run([str(oracle_bin), *files], capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert f'"{GPU}": "16"' in outputs[0]
