"""The pod specs of docs/how-to/gpu-pod-specs.md are what they say: evaluated against the example
policy's compiled tree (dra-claims) with its Kueue Configuration, each Job is admitted and charged
the quota the page names."""

from __future__ import annotations

import json
import re

import yaml

from kp_testing import REPO_ROOT, run_cli

PAGE = REPO_ROOT / "docs" / "how-to" / "gpu-pod-specs.md"
TREE = REPO_ROOT / "out" / "gpu-east"


def test_every_pod_spec_on_the_page_is_admitted_with_the_quota_it_names(tmp_path):
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", PAGE.read_text(), re.S)]
    assert len(blocks) == 5 and all(b["kind"] == "Job" for b in blocks)
    for index, job in enumerate(blocks):  # one name each: several examples share theirs
        job["metadata"]["name"] += f"-{index}"
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text("\n---\n".join(json.dumps(b) for b in blocks))
    tree = [str(p) for p in sorted(TREE.rglob("*.yaml"))
            if p.name != "kustomization.yaml" and "kueue-config" not in p.parts]
    result = run_cli("evaluate", *tree, str(TREE / "kueue-config" / "kueue-manager-config.patch.yaml"), str(jobs),
                     "--format", "json")
    assert result.returncode == 0, result.stderr
    workloads = json.loads(result.stdout)["workloads"]
    assert len(workloads) == 5
    for workload in workloads:
        assert workload["status"] == "admitted", workload
    charged = [{r for per in w["assignment"].values() for r in per} for w in workloads]
    # Three whole-GPU examples (device plugin, one claim of 8, DRA extended resource), two MIG ones.
    assert sum("nvidia.com/gpu" in c for c in charged) == 3
    assert sum("nvidia.com/mig-1g.10gb" in c for c in charged) == 2
