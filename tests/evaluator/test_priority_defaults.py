"""`evaluate` given kueue-policy's team priority policies applies them as the API server would:
an unlabelled job in the team's namespaces runs at the team's priority; a job's own label wins;
without the policies (the positive control) it runs at priority 0, as Kueue would."""

from __future__ import annotations

import json
import re

from kp_testing import REPO_ROOT, run_cli

TREE = REPO_ROOT / "out" / "gpu-east"   # gamma's priority is critical (1000)


def _job(name: str, labels: dict) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "gamma-serving",
                         "labels": {"kueue.x-k8s.io/queue-name": "default", **labels}},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}}


def _priorities(tmp_path, with_policies: bool) -> dict[str, int]:
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(json.dumps(_job("plain", {})) + "\n---\n"
                    + json.dumps(_job("own", {"kueue.x-k8s.io/priority-class": "standard"})))
    tree = [str(p) for p in sorted(TREE.rglob("*.yaml")) if p.name != "kustomization.yaml"
            and "kueue-config" not in p.parts and (with_policies or "admission" not in p.parts)]
    listed = run_cli("evaluate", *tree, str(jobs), "--format", "json")
    assert listed.returncode == 0, listed.stderr
    found = {}
    for workload in json.loads(listed.stdout)["workloads"]:
        explained = run_cli("evaluate", *tree, str(jobs), "--explain", workload["name"])
        assert explained.returncode == 0, explained.stderr
        found[workload["name"].split("/")[1].rsplit("-", 1)[0]] = int(
            re.search(r"priority (-?\d+)", explained.stdout).group(1))
    return found


def test_the_team_priority_policy_labels_unlabelled_jobs(tmp_path):
    assert _priorities(tmp_path, with_policies=True) == {"job-plain": 1000, "job-own": 100}
    assert _priorities(tmp_path, with_policies=False) == {"job-plain": 0, "job-own": 100}


def test_another_mutating_admission_policy_is_reported_not_run(tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text(json.dumps({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
                                 "metadata": {"name": "sidecars"}, "spec": {}}))
    result = run_cli("evaluate", str(other))
    assert result.returncode == 0
    assert "MutatingAdmissionPolicy sidecars" in result.stderr and "does not run its mutations" in result.stderr
