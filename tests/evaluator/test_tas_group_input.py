"""What Kueue's job webhooks refuse about kueue.x-k8s.io/podset-group-name reaches the user of
`evaluate` as a warning naming the file, the line, the job and the cause; the job is skipped and
the rest is evaluated (the real console script on a real YAML file)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from kp_testing import run_cli

QUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 64}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: main, namespace: ml}
spec: {clusterQueue: cq}
"""


def lws(name: str, leader: dict, worker: dict) -> dict:
    def template(annotations: dict) -> dict:
        return {"metadata": {"annotations": annotations},
                "spec": {"containers": [{"name": "c", "image": "x",
                                         "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": "ml", "labels": {"kueue.x-k8s.io/queue-name": "main"}},
            "spec": {"leaderWorkerTemplate": {"size": 3, "leaderTemplate": template(leader),
                                              "workerTemplate": template(worker)}}}


REQ, PREF = "kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology"
GROUP, SLICE = "kueue.x-k8s.io/podset-group-name", "kueue.x-k8s.io/podset-slice-required-topology"


def test_what_the_webhooks_refuse_is_a_warning_with_file_line_and_cause(tmp_path: Path) -> None:
    rack = "example.com/rack"
    docs = [
        ("alone", {REQ: rack}, {REQ: rack, GROUP: "g"}),                      # a group of one
        ("differ", {REQ: rack, GROUP: "g"}, {PREF: rack, GROUP: "g"}),        # different topologies
        ("number", {REQ: rack, GROUP: "7"}, {REQ: rack, GROUP: "7"}),         # a numeric name
        ("bare", {GROUP: "g"}, {GROUP: "g"}),                                 # no required / preferred
        ("sliced", {REQ: rack, GROUP: "g"}, {REQ: rack, GROUP: "g", SLICE: rack,
                                             "kueue.x-k8s.io/podset-slice-size": "2"}),
        ("good", {REQ: rack, GROUP: "g"}, {REQ: rack, GROUP: "g"}),
    ]
    text = QUEUE
    lines = {}
    for name, leader, worker in docs:
        text += "---\n"
        lines[name] = text.count("\n") + 1  # the document's first line
        text += yaml.safe_dump(lws(name, leader, worker), sort_keys=False)
    path = tmp_path / "jobs.yaml"
    path.write_text(text)
    proc = run_cli("evaluate", str(path), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr
    assert "Traceback" not in err
    expected = {
        "alone": "kueue.x-k8s.io/podset-group-name 'g' groups 1 pod set(s) (worker); Kueue allows groups of "
                 "exactly 2 pod sets",
        "differ": "pod sets leader and worker must ask for the same",
        "number": "annotation kueue.x-k8s.io/podset-group-name '7' must not be a number",
        "bare": "may not be set when neither kueue.x-k8s.io/podset-preferred-topology nor "
                "kueue.x-k8s.io/podset-required-topology is specified",
        "sliced": "may not be set when kueue.x-k8s.io/podset-slice-size is specified",
    }
    for name, cause in expected.items():
        found = [line for line in err.splitlines() if f"LeaderWorkerSet ml/{name}" in line]
        assert found, (name, err)
        assert found[0].startswith(f"{path}:{lines[name]}:1: warning"), found[0]
        assert cause in found[0], found[0]
    evaluated = {w["name"] for w in json.loads(proc.stdout)["workloads"]}
    assert any("-good-" in name for name in evaluated), evaluated
    assert not any(f"-{name}-" in w for w in evaluated for name in expected), evaluated
