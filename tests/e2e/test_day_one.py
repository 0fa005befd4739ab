"""A compiled tree on a fresh cluster with Kueue: it applies, every ClusterQueue goes Active, and
the compiler's verdicts are what the live Kueue does with the Jobs teams write."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kp_testing import REPO_ROOT, run_cli
from kp_testing.live_verdicts import check_verdicts, declared_jobs
from kp_testing.live_policies import small_policy
from kp_testing.sandbox import LiveCluster, compile_tree, mappings, running_sandbox, wait_until

pytestmark = pytest.mark.usefixtures("sandbox_built")


def all_active(cluster: LiveCluster) -> list[str]:
    return [q["metadata"]["name"] for q in cluster.items("clusterqueues")
            if any(c["type"] == "Active" and c["status"] == "True" for c in q["status"]["conditions"])]


def test_the_example_policy_applies_and_every_verdict_holds_on_kueue(tmp_path: Path) -> None:
    tree = compile_tree(REPO_ROOT / "policies", tmp_path / "out")
    with running_sandbox(tmp_path / "sandbox", tree) as cluster:
        assert sorted(all_active(cluster)) == ["alpha", "beta", "delta", "gamma"]
        jobs = declared_jobs(REPO_ROOT / "policies")
        assert {job.verdict for job in jobs} == {"guaranteed", "borrowing"}
        assert any(job.gang for job in jobs)   # submitted as a JobSet
        assert check_verdicts(cluster, jobs, mappings(tree), use_claims=True) == []
        # The check can fail: a borrowing workload declared guaranteed, and a guaranteed one
        # declared never, are both caught by the live Kueue.
        borrowing = next(job for job in jobs if job.verdict == "borrowing")
        guaranteed = next(job for job in jobs if job.verdict == "guaranteed")
        lies = [dataclasses.replace(borrowing, verdict="guaranteed"),
                dataclasses.replace(guaranteed, verdict="never")]
        wrong = check_verdicts(cluster, lies, mappings(tree), use_claims=True)
        assert len(wrong) == 2, wrong
        assert "borrowing" in wrong[0] and "admitted it on an idle cluster" in wrong[1]
        every_mig_slice_is_claimable(cluster)


def every_mig_slice_is_claimable(cluster: LiveCluster) -> None:
    """A pod claiming one slice of each MIG profile the pool's layout cuts (its team's claim
    template) is charged that profile's quota by Kueue: admitted, or pending for that quota,
    never refused for an unmapped DeviceClass."""
    templates = [t for t in cluster.items("namespaces/gamma-batch/resourceclaimtemplates",
                                          api="/apis/resource.k8s.io/v1")
                 if ".mig." in t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"]]
    profiles = sorted(t["metadata"]["name"].removeprefix("h100-80gb-") for t in templates)
    assert profiles == ["1g-10gb", "1g-20gb", "2g-20gb", "3g-40gb"]
    for template in templates:
        name = "slice-" + template["metadata"]["name"]
        cluster.create([{"apiVersion": "batch/v1", "kind": "Job",
                         "metadata": {"name": name, "namespace": "gamma-batch",
                                      "labels": {"kueue.x-k8s.io/queue-name": "default"}},
                         "spec": {"template": {"spec": {
                             "restartPolicy": "Never",
                             "resourceClaims": [{"name": "slice", "resourceClaimTemplateName": template["metadata"]["name"]}],
                             "containers": [{"name": "main", "image": "x", "resources": {
                                 "requests": {"cpu": "1"}, "claims": [{"name": "slice"}]}}]}}}}])
    for template in templates:
        name = "slice-" + template["metadata"]["name"]
        resource = "nvidia.com/mig-" + template["metadata"]["name"].removeprefix("h100-80gb-").replace("-", ".", 1)

        def decided() -> dict | None:
            workload = next((w for w in cluster.items("namespaces/gamma-batch/workloads")
                             if w["metadata"]["ownerReferences"][0]["name"] == name), None)
            return workload if workload and any(c["type"] == "QuotaReserved" for c in
                                                workload.get("status", {}).get("conditions", [])) else None
        workload = wait_until(f"Kueue to decide about {name}", decided)
        admission = workload["status"].get("admission")
        if admission:
            assert resource in admission["podSetAssignments"][0]["resourceUsage"], admission
        else:
            reason = next(c["message"] for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved")
            assert resource in reason and "not mapped" not in reason, reason


@pytest.mark.parametrize("access", ["device-plugin", "dra-claims", "dra-extended-resource"])
def test_each_gpu_access_mode_applies_and_its_verdicts_hold(tmp_path: Path, access: str) -> None:
    policy = small_policy(tmp_path, access=access)
    tree = compile_tree(policy, tmp_path / "out")
    with running_sandbox(tmp_path / "sandbox", tree) as cluster:
        assert sorted(all_active(cluster)) == ["a", "b"]
        jobs = declared_jobs(policy)
        assert {job.verdict for job in jobs} >= {"guaranteed", "borrowing", "never"}
        assert check_verdicts(cluster, jobs, mappings(tree), use_claims=access == "dra-claims") == []


def test_an_older_kueue_version_applies_as_v1beta1_through_kueues_conversion(tmp_path: Path) -> None:
    tree = compile_tree(small_policy(tmp_path, kueue="0.14"), tmp_path / "out")
    queue = yaml.safe_load((tree / "kueue" / "clusterqueues" / "a.yaml").read_text())
    assert queue["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    with running_sandbox(tmp_path / "sandbox", tree) as cluster:
        assert sorted(all_active(cluster)) == ["a", "b"]
        # Stored as v1beta2 by Kueue's conversion webhook: the cohort field was renamed.
        assert cluster.get("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/a")["spec"]["cohortName"] == "research"


def _objects(tree: Path) -> list[dict]:
    built = subprocess.run(["kubectl", "kustomize", str(tree)], capture_output=True, text=True, check=True)
    return [doc for doc in yaml.safe_load_all(built.stdout) if doc]


def test_argocd_sync_waves_apply_in_order_on_a_fresh_cluster(tmp_path: Path) -> None:
    """Argo CD applies wave by wave, each wave once the one before is healthy: each wave of the
    tree, applied alone in that order, is accepted (namespaces before what lives in them,
    flavors and cohorts before the queues that name them)."""
    tree = compile_tree(small_policy(tmp_path, gitops="argocd", access="dra-claims"), tmp_path / "out")
    waves: dict[int, list[dict]] = {}
    for obj in _objects(tree):
        wave = int(obj["metadata"].get("annotations", {}).get("argocd.argoproj.io/sync-wave", "0"))
        waves.setdefault(wave, []).append(obj)
    assert min(waves) < 0 and all(o["kind"] == "Namespace" for o in waves[min(waves)])
    with running_sandbox(tmp_path / "sandbox") as cluster:
        for wave in sorted(waves):
            done = cluster.apply(waves[wave], check=False)
            assert done.returncode == 0, f"wave {wave}: {done.stderr}"
        wait_until("every ClusterQueue Active", lambda: sorted(all_active(cluster)) == ["a", "b"])


def test_flux_kustomization_waits_for_kueue_and_the_tree_applies(tmp_path: Path) -> None:
    out = tmp_path / "out"
    tree = compile_tree(small_policy(tmp_path, gitops="flux"), out)
    flux = [doc for path in sorted((out / "flux").glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text()) if doc]
    kustomization = next(doc for doc in flux if doc["kind"] == "Kustomization")
    # Flux applies the tree only once Kueue's own Kustomization is ready (CRDs, webhook), and
    # waits on the objects' health.
    assert kustomization["spec"].get("dependsOn"), kustomization["spec"]
    assert kustomization["spec"]["path"].endswith(tree.name)
    with running_sandbox(tmp_path / "sandbox", tree) as cluster:
        assert sorted(all_active(cluster)) == ["a", "b"]


def _priority_of(cluster: LiveCluster, namespace: str, job: str) -> int | None:
    """The priority Kueue gave the Job's Workload (0 when it wrote none), None while it has none."""
    for workload in cluster.items(f"namespaces/{namespace}/workloads"):
        if workload["metadata"]["ownerReferences"][0]["name"] == job:
            return workload["spec"].get("priority", 0)
    return None


def _job(name: str, namespace: str, labels: dict) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"kueue.x-k8s.io/queue-name": "default", **labels}},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}}


def test_a_teams_priority_is_given_to_its_unlabelled_jobs_by_the_api_server(tmp_path: Path) -> None:
    tree = compile_tree(small_policy(tmp_path), tmp_path / "out")
    with running_sandbox(tmp_path / "sandbox", tree) as cluster:
        cluster.create([_job("plain", "a-train", {}),
                        _job("chosen", "a-train", {"kueue.x-k8s.io/priority-class": "low"}),
                        _job("other-team", "b-one", {})])
        wait_until("three Workloads", lambda: len(cluster.workloads()) == 3)
        assert _priority_of(cluster, "a-train", "plain") == 100      # team a's priority: high
        assert _priority_of(cluster, "a-train", "chosen") == 0       # a label of its own is kept
        assert _priority_of(cluster, "b-one", "other-team") == 0     # b has no priority: the default
        # Without the admission policy the same Job gets none (what the tree did before).
        policies = cluster.items("mutatingadmissionpolicybindings", api="/apis/admissionregistration.k8s.io/v1")
        assert policies
        cluster.kubectl("delete", "mutatingadmissionpolicybindings.admissionregistration.k8s.io", "--all")
        wait_until("the binding to be gone", lambda: not cluster.items(
            "mutatingadmissionpolicybindings", api="/apis/admissionregistration.k8s.io/v1"))

        def unlabelled_priority() -> int:
            name = f"after-{len(cluster.workloads())}"
            cluster.create([_job(name, "a-train", {})])
            return wait_until("its Workload", lambda: (_priority_of(cluster, "a-train", name),)
                              if _priority_of(cluster, "a-train", name) is not None else None)[0]
        # The API server drops a deleted binding from its cache a moment later: ask until it has.
        assert wait_until("a Job created without the policy to keep priority 0",
                          lambda: unlabelled_priority() == 0, timeout=30)


def test_the_benchmark_policy_applies(tmp_path: Path) -> None:
    generate = REPO_ROOT / "bench" / "generate_policy.py"
    policy = tmp_path / "policy"
    done = subprocess.run([sys.executable, str(generate), str(policy), "--teams", "200", "--pools", "40",
                           "--cohorts", "20"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    tree = compile_tree(policy, tmp_path / "out")
    with running_sandbox(tmp_path / "sandbox", tree) as cluster:
        assert len(all_active(cluster)) == 200
        report = json.loads(run_cli("check", str(policy), "--format", "json").stdout)
        assert report["summary"]["guaranteed"] > 0
