"""dra-claims: a pod that needs N GPUs lists one claim (a template asking for N devices), and the
admission engine charges it N of the quota name, as Kueue v0.19 does (pkg/dra: an ExactCount
request adds its count to its DeviceClass's mapped resource)."""

from __future__ import annotations

import json

from ruamel.yaml import YAML

from kp_testing import run_cli
from kp_testing.policies import CLUSTER, team, write_policy

yaml = YAML(typ="safe", pure=True)
DRA_CLUSTER = CLUSTER.replace('kueueVersion: "0.19"', 'kueueVersion: "0.19"\n  gpuAccess: dra-claims')
TEAM = team("a", "namespaces: [a]\ngpus: {guaranteed: 16}\n"
                 "workloads:\n  - {name: train, replicas: 2, gpus: 4}\n  - {name: one, replicas: 1, gpus: 1}")


def _compile(tmp_path):
    policies = write_policy(tmp_path, {"cluster.yaml": DRA_CLUSTER, "a.yaml": TEAM})
    result = run_cli("compile", str(policies), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    return tmp_path / "out" / "lab"


def _job(name: str, template: str, parallelism: int = 1) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "a", "labels": {"kueue.x-k8s.io/queue-name": "default"}},
            "spec": {"parallelism": parallelism, "completions": parallelism, "template": {"spec": {
                "restartPolicy": "Never",
                "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": template}],
                "containers": [{"name": "main", "image": "trainer",
                                "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpus"}]}}]}}}}


def test_templates_per_count_the_team_needs(tmp_path):
    folder = _compile(tmp_path)
    templates = {}
    for path in sorted((folder / "dra" / "resourceclaimtemplates").iterdir()):
        obj = yaml.load(path.read_text())
        templates[obj["metadata"]["name"]] = obj["spec"]["spec"]["devices"]["requests"]
    # 1 (any pod), 4 (the declared workload's GPUs per replica), 8 (a whole node of the pools).
    assert sorted(templates) == ["h100-80gb", "h100-80gb-x4", "h100-80gb-x8"]
    for name, count in (("h100-80gb", 1), ("h100-80gb-x4", 4), ("h100-80gb-x8", 8)):
        (request,) = templates[name]
        assert request["exactly"] == {"deviceClassName": "h100-80gb.gpu.kueue-policy.io",
                                      "allocationMode": "ExactCount", "count": count}


def test_one_claim_of_the_x8_template_is_charged_eight_gpus(tmp_path):
    folder = _compile(tmp_path)
    patch = yaml.load((folder / "kueue-config" / "kueue-manager-config.patch.yaml").read_text())
    (tmp_path / "config.yaml").write_text(patch["data"]["controller_manager_config.yaml"])
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(json.dumps(_job("big", "h100-80gb-x8", parallelism=2)) + "\n---\n"
                    + json.dumps(_job("small", "h100-80gb")))
    files = [str(p) for p in sorted(folder.rglob("*.yaml"))
             if p.name != "kustomization.yaml" and "kueue-config" not in p.parts]
    result = run_cli("evaluate", *files, str(tmp_path / "config.yaml"), str(jobs), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    statuses = {w["name"]: w["status"] for w in report["workloads"]}
    assert set(statuses.values()) == {"admitted"}, report
    (queue,) = [q for q in report["clusterQueues"] if q["name"] == "a"]
    used = sum(int(per.get("nvidia.com/gpu", "0")) for per in queue["usage"].values())
    assert used == 2 * 8 + 1   # two pods of one x8 claim each, one pod of one single-GPU claim
