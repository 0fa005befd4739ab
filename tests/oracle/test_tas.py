"""Kueue's Topology Aware Scheduling through the oracle: Node and Topology objects in, the
topologyAssignment Kueue writes in status.admission out, for jobs carrying the TAS annotations
(turned into topology requests by Kueue's own job integrations) and for hand-written Workloads."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata: {name: racks}
spec:
  levels:
  - nodeLabel: example.com/block
  - nodeLabel: example.com/rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: gpu}
spec: {nodeLabels: {pool: gpu}, topologyName: racks}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: gpu
      resources: [{name: nvidia.com/gpu, nominalQuota: 1000}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq, namespace: default}
spec: {clusterQueue: cq}
"""


def node(name: str, block: str, rack: str) -> str:
    return f"""---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{pool: gpu, example.com/block: {block}, example.com/rack: {rack}, kubernetes.io/hostname: {name}}}
status:
  allocatable: {{nvidia.com/gpu: "8", pods: "110"}}
  conditions: [{{type: Ready, status: "True"}}]
"""


# Block b1: rack r1 with 2 hosts, rack r2 with 3; block b2: rack r3 with 4 hosts.
NODES = "".join(node(f"{rack}-h{i}", block, rack)
                for block, rack, hosts in (("b1", "r1", 2), ("b1", "r2", 3), ("b2", "r3", 4))
                for i in range(hosts))


def job(name: str, pods: int, annotations: str) -> str:
    return f"""---
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: default
  labels: {{kueue.x-k8s.io/queue-name: lq}}
  creationTimestamp: "2026-01-01T00:00:00Z"
spec:
  parallelism: {pods}
  completions: {pods}
  suspend: true
  template:
    metadata:
      annotations: {{{annotations}}}
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: trainer
        resources: {{requests: {{nvidia.com/gpu: "8"}}}}
"""


def evaluate(oracle_bin: Path, world: str) -> dict:
    done = subprocess.run([str(oracle_bin), "-"], input=world, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def placed_hosts(result: dict) -> list[tuple[str, int]]:
    (wl,) = result["workloads"]
    assert wl["status"] == "admitted", wl["reason"]
    ta = wl["topologyAssignment"]["main"]
    assert ta["levels"][-1] == "kubernetes.io/hostname"
    return [(d["values"][-1], d["count"]) for d in ta["domains"]]


def test_required_rack_annotation_on_a_job_places_in_one_rack(oracle_bin: Path) -> None:
    world = QUEUES + NODES + job("train", 3, "kueue.x-k8s.io/podset-required-topology: example.com/rack")
    hosts = placed_hosts(evaluate(oracle_bin, world))
    assert sum(count for _, count in hosts) == 3
    assert len({host.split("-")[0] for host, _ in hosts}) == 1  # one rack
    assert all(not host.startswith("r1-") for host, _ in hosts)  # r1 has only 2 hosts


def test_required_rack_that_no_rack_holds_is_refused_with_kueues_reason(oracle_bin: Path) -> None:
    world = QUEUES + NODES + job("train", 5, "kueue.x-k8s.io/podset-required-topology: example.com/rack")
    (wl,) = evaluate(oracle_bin, world)["workloads"]
    assert wl["status"] != "admitted"
    assert "topologyAssignment" not in wl
    assert 'topology "racks"' in wl["reason"]


def test_slices_of_two_per_rack_within_a_block(oracle_bin: Path) -> None:
    annotations = ("kueue.x-k8s.io/podset-required-topology: example.com/block, "
                   "kueue.x-k8s.io/podset-slice-required-topology: example.com/rack, "
                   'kueue.x-k8s.io/podset-slice-size: "2"')
    hosts = placed_hosts(evaluate(oracle_bin, QUEUES + NODES + job("train", 4, annotations)))
    per_rack: dict[str, int] = {}
    for host, count in hosts:
        per_rack[host.split("-")[0]] = per_rack.get(host.split("-")[0], 0) + count
    assert all(count % 2 == 0 for count in per_rack.values()), per_rack
    assert sum(per_rack.values()) == 4


def test_without_topology_the_output_has_no_topology_field(oracle_bin: Path) -> None:
    world = QUEUES.replace(", topologyName: racks", "") + NODES + job("train", 3, "")
    (wl,) = evaluate(oracle_bin, world)["workloads"]
    assert wl["status"] == "admitted"
    assert "topologyAssignment" not in wl
