"""`evaluate` on a live cluster's export says what the live Kueue did.

A world is built on a sandbox running the example tree: Jobs are created one by one and Kueue
admits what fits. Its Workloads and queues are exported with `kubectl get -o yaml`, as a user
asking "why is my job pending?" would, and both engines must agree with the live Kueue: the
same workloads hold quota, with the same flavors and counts, and each pending one has Kueue's
own reason."""

from __future__ import annotations

import json
import time
from fractions import Fraction
from pathlib import Path

import pytest

from kp_testing import REPO_ROOT, run_cli
from kp_testing.live_policies import small_policy
from kp_testing.live_verdicts import admitted, job_manifest, read_live_quota
from kp_testing.sandbox import LiveCluster, compile_tree, mappings, running_sandbox, wait_until

pytestmark = pytest.mark.usefixtures("sandbox_built")

GPU, CPU, MEMORY = "nvidia.com/gpu", "cpu", "memory"
GI = 1024 ** 3

# (queue, job, replicas, one pod's request): created in this order, a second apart (Kueue and
# evaluate both order pending workloads by creation time, which has a one-second resolution).
EXAMPLE_WORLD = [
    ("alpha", "pretrain", 4, {GPU: 8, CPU: 128, MEMORY: 1024 * GI}),
    ("beta", "notebook", 1, {GPU: 1, CPU: 8, MEMORY: 64 * GI}),
    ("delta", "sweep", 4, {GPU: 1, CPU: 16, MEMORY: 128 * GI}),
    ("alpha", "long-context", 6, {GPU: 8, CPU: 128, MEMORY: 1024 * GI}),
    ("gamma", "too-big", 3, {GPU: 8, CPU: 128, MEMORY: 1024 * GI}),
    ("beta", "detector", 3, {GPU: 8, CPU: 128, MEMORY: 1024 * GI}),
]
# The small policy (kp_testing.live_policies): a 8+8, b 8; 16 on-demand and 8 spot GPUs.
SMALL_WORLD = [
    ("b", "sweep", 4, {GPU: 1, CPU: 16, MEMORY: 128 * GI}),
    ("a", "train", 1, {GPU: 8, CPU: 128, MEMORY: 1024 * GI}),
    ("a", "wide", 2, {GPU: 8, CPU: 128, MEMORY: 1024 * GI}),
    ("b", "more", 1, {GPU: 4, CPU: 64, MEMORY: 512 * GI}),
    ("b", "huge", 3, {GPU: 8, CPU: 128, MEMORY: 1024 * GI}),
]
EXPORTED = ["namespaces", "resourceflavors.kueue.x-k8s.io", "cohorts.kueue.x-k8s.io",
            "clusterqueues.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io",
            "workloadpriorityclasses.kueue.x-k8s.io", "workloads.kueue.x-k8s.io",
            "deviceclasses.resource.k8s.io", "resourceclaimtemplates.resource.k8s.io"]


def build_world(cluster: LiveCluster, tree: Path, world: list) -> dict[str, dict]:
    quota = read_live_quota(cluster, mappings(tree))
    for queue, name, replicas, request in world:
        manifest = job_manifest(quota, queue, name, replicas,
                                {r: Fraction(v) for r, v in request.items()}, use_claims=True)
        cluster.create([manifest])
        namespace = manifest["metadata"]["namespace"]
        wait_until(f"Kueue to decide about {name}", lambda: next(
            (w for w in cluster.items(f"namespaces/{namespace}/workloads")
             if w["metadata"]["ownerReferences"][0]["name"] == name
             and any(c["type"] == "QuotaReserved" for c in w.get("status", {}).get("conditions", []))), None))
        time.sleep(1.1)
    time.sleep(3)   # requeued workloads get another look when quota frees; none should change
    return {f"{w['metadata']['namespace']}/{w['metadata']['name']}": w for w in cluster.workloads()}


def live_reason(workload: dict) -> str:
    return next(c["message"] for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved")


def example_policy(_root: Path) -> Path:
    return REPO_ROOT / "policies"


def device_plugin_policy(root: Path) -> Path:
    return small_policy(root, access="device-plugin")


@pytest.mark.parametrize("make_policy, world", [(example_policy, EXAMPLE_WORLD), (device_plugin_policy, SMALL_WORLD)],
                         ids=["example-dra-claims", "device-plugin"])
def test_evaluate_reports_what_the_live_kueue_did(tmp_path: Path, make_policy, world) -> None:
    tree = compile_tree(make_policy(tmp_path), tmp_path / "out")
    with running_sandbox(tmp_path / "sandbox", tree) as cluster:
        live = build_world(cluster, tree, world)
        held = {name for name, w in live.items() if admitted(w)}
        assert 0 < len(held) < len(live)   # a world with both kinds, or it proves little
        export = tmp_path / "export.yaml"
        export.write_text(cluster.export(*EXPORTED))
        configuration = tree / "kueue-config" / "kueue-manager-config.patch.yaml"
        inputs = [str(export)] + ([str(configuration)] if configuration.is_file() else [])
        for engine in ("python", "kueue"):
            done = run_cli("evaluate", *inputs, "--format", "json", "--engine", engine)
            assert done.returncode == 0, done.stderr
            report = {w["name"]: w for w in json.loads(done.stdout)["workloads"]}
            assert set(report) == set(live), engine
            for name, workload in live.items():
                said = report[name]
                if name in held:
                    assert said["status"] == "running", (engine, name, said)
                    for assignment in workload["status"]["admission"]["podSetAssignments"]:
                        assert said["assignment"][assignment["name"]] == assignment["flavors"], (engine, name)
                        assert said["count"][assignment["name"]] == assignment["count"], (engine, name)
                else:
                    assert said["status"] in ("pending", "inadmissible"), (engine, name, said)
                    assert said["reason"] == live_reason(workload), (engine, name)
