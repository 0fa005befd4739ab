"""The compiled output is what Kueue would be given: the admission engine reads it as a cluster
export and answers "why is my job pending?" for real Job manifests."""

from __future__ import annotations

import json

from kp_testing import REPO_ROOT, run_cli

JOBS = """\
apiVersion: v1
kind: Namespace
metadata: {name: beta, labels: {kubernetes.io/metadata.name: beta}}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: small
  namespace: beta
  labels: {kueue.x-k8s.io/queue-name: default}
  creationTimestamp: "2026-11-30T10:00:00Z"
spec:
  parallelism: 2
  completions: 2
  template:
    spec:
      containers:
      - {name: t, image: x, resources: {requests: {nvidia.com/gpu: "8", cpu: "16", memory: 128Gi}}}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: huge
  namespace: beta
  labels: {kueue.x-k8s.io/queue-name: default}
  creationTimestamp: "2026-11-30T10:01:00Z"
spec:
  parallelism: 6
  completions: 6
  template:
    spec:
      containers:
      - {name: t, image: x, resources: {requests: {nvidia.com/gpu: "8"}}}
"""


def test_jobs_against_the_compiled_example(tmp_path):
    out = tmp_path / "out"
    assert run_cli("compile", "policies", "--out", str(out), cwd=REPO_ROOT).returncode == 0
    manifests = sorted(str(p) for p in (out / "gpu-east" / "kueue").rglob("*.yaml"))
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(JOBS)
    result = run_cli("evaluate", *manifests, str(jobs), "--format", "json")
    assert result.returncode == 0, result.stderr
    outcomes = {w["name"].split("/")[1].split("-")[1]: w for w in json.loads(result.stdout)["workloads"]}
    # beta is spot-first: 16 GPUs on its own spot flavor.
    assert outcomes["small"]["status"] == "admitted"
    assert outcomes["small"]["assignment"] == {"main": {"cpu": "h100-spot", "memory": "h100-spot",
                                                        "nvidia.com/gpu": "h100-spot"}}
    assert outcomes["small"]["borrowing"] is False
    # 48 GPUs is more than beta can ever hold on any flavor (16 guaranteed + 16 burst on spot).
    assert outcomes["huge"]["status"] == "inadmissible"
    assert "maximum capacity (32)" in outcomes["huge"]["reason"]
