"""Kueue's live Topology Aware Scheduling admits TAS jobs into the domains `evaluate` names.

A policy with a regular topology (GB200-like: 2 NVLink cliques of 4 hosts x 4 GPUs) and an
irregular one from a node export (H100 racks of 3, 2 and 3 hosts in two blocks, one host tainted
for maintenance) is compiled and applied to a sandbox; the same Node objects are created on it
(labels, taints, allocatable, a Ready condition: no kubelet runs). Jobs asking for a required
clique / rack / block, a preferred clique, slices of a rack, explicitly unconstrained placement
and no annotation at all (Kueue's implied TAS) are created one by one, so that some cannot fit
in any one domain although the GPUs are there in total. The world is exported with
`kubectl get -o yaml` and `evaluate`, with both engines (Kueue's own code in kueue-oracle, and
kueue-policy's), must say what the live Kueue did: the same
`topologyAssignment` for every admitted pod set, Kueue's own message for every pending one.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from kp_testing import run_cli
from kp_testing.live_nodes import LiveNode, create_nodes, expanded_assignment, node_export
from kp_testing.policies import write_policy
from kp_testing.sandbox import LiveCluster, compile_tree, running_sandbox, wait_until

pytestmark = pytest.mark.usefixtures("sandbox_built")

GPU = "nvidia.com/gpu"
CLIQUE, BLOCK, RACK, HOST = "nvidia.com/gpu.clique", "example.com/block", "example.com/rack", "kubernetes.io/hostname"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"

CLUSTER = """\
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata: {name: tas}
spec:
  kubernetesVersion: "1.36"
  kueueVersion: "0.19"
  gpuAccess: device-plugin
  resourcesPerGpu: {cpu: "4", memory: 32Gi}
  pools:
    - name: gb200
      gpu: GB200
      nodes: 8
      gpusPerNode: 4
      topology:
        name: nvlink
        levels:
          - {nodeLabel: nvidia.com/gpu.clique, holds: 4}
          - {nodeLabel: kubernetes.io/hostname}
    - name: h100
      gpu: H100-80GB
      nodes: 8
      gpusPerNode: 8
      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
      topology:
        levels:
          - nodeLabel: example.com/block
          - nodeLabel: example.com/rack
          - nodeLabel: kubernetes.io/hostname
        nodesFrom: nodes/h100.yaml
"""

TEAMS = {
    "teams/nvl.yaml": """\
        apiVersion: kueue-policy/v1alpha1
        kind: Team
        metadata: {name: nvl}
        spec:
          namespaces: [nvl]
          models: [GB200]
          gpus: {guaranteed: 32}
          workloads:
            - {name: pretrain, replicas: 3, gpus: 4, topology: {required: nvidia.com/gpu.clique}}
            - {name: finetune, replicas: 3, gpus: 4, topology: {preferred: nvidia.com/gpu.clique}}
            - {name: big, replicas: 2, gpus: 4, topology: {required: nvidia.com/gpu.clique}}
        """,
    "teams/racks.yaml": """\
        apiVersion: kueue-policy/v1alpha1
        kind: Team
        metadata: {name: racks}
        spec:
          namespaces: [racks]
          models: [H100-80GB]
          gpus: {guaranteed: 64}
          workloads:
            - {name: train, replicas: 3, gpus: 8, topology: {required: example.com/rack}}
            - {name: pair, replicas: 2, gpus: 8, topology: {slices: [{level: example.com/rack, size: 2}]}}
            - {name: wide, replicas: 2, gpus: 8, topology: {required: example.com/block}}
        """,
}


def gb200_nodes() -> list[LiveNode]:
    """The regular pool: cliques c0 and c1 of 4 hosts, 4 GPUs each."""
    return [LiveNode(f"gb-{clique}-{host}",
                     {"kueue-policy.io/pool": "gb200", CLIQUE: f"c{clique}", HOST: f"gb-{clique}-{host}"},
                     {"cpu": "64", "memory": "512Gi", GPU: "4", "pods": "110"})
            for clique in range(2) for host in range(4)]


def h100_nodes() -> list[LiveNode]:
    """The irregular pool: block a holds racks r1 (3 hosts) and r2 (2), block b rack r3 (3), whose
    last host is tainted for maintenance; and a CPU node outside the pool."""
    pool_taint = {"key": GPU, "effect": "NoSchedule"}
    nodes = []
    for block, rack, hosts in (("a", "r1", 3), ("a", "r2", 2), ("b", "r3", 3)):
        for host in range(hosts):
            name = f"h100-{rack}-{host}"
            taints = [pool_taint] + ([{"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}]
                                     if (rack, host) == ("r3", 2) else [])
            nodes.append(LiveNode(name, {"kueue-policy.io/pool": "h100", BLOCK: block, RACK: rack, HOST: name},
                                  {"cpu": "128", "memory": "1Ti", GPU: "8", "pods": "110"}, taints))
    nodes.append(LiveNode("cpu-0", {HOST: "cpu-0"}, {"cpu": "32", "memory": "128Gi", "pods": "110"}))
    return nodes


@dataclass(frozen=True)
class TasJob:
    team: str
    name: str
    replicas: int
    gpus: int
    annotations: dict[str, str] | None = None   # None: the ones REPORT.md gives the declared workload


# Created in this order, each after Kueue decided about the one before (a second apart: both
# Kueue and evaluate order pending workloads by creation time, which has a one-second resolution).
WORLD = [
    TasJob("nvl", "pretrain", 3, 4),                         # one clique: 3 of its 4 hosts
    TasJob("nvl", "finetune", 3, 4),                         # preferred: the other clique
    TasJob("nvl", "big", 2, 4),                              # 8 GPUs free, but 1 host per clique: pending
    TasJob("racks", "train", 3, 8),                          # required rack: only r1 has 3 usable hosts
    TasJob("racks", "pair", 2, 8),                           # a slice of 2 pods in one rack
    TasJob("racks", "small", 1, 4, {UNCONSTRAINED: "true"}),  # anywhere: the fullest domain first
    TasJob("racks", "probe", 1, 4, {}),                      # no annotation: Kueue's implied TAS
    TasJob("racks", "wide", 2, 8),                           # required block: none has 2 usable hosts left
]
# A pending job comes last in its queue: Kueue keeps the message of its last attempt, which a
# later admission in the same queue would make stale, while evaluate says why it waits now.

EXPORTED = ["namespaces", "nodes", "topologies.kueue.x-k8s.io", "resourceflavors.kueue.x-k8s.io",
            "cohorts.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io",
            "workloadpriorityclasses.kueue.x-k8s.io", "workloads.kueue.x-k8s.io"]


def tas_policy(root: Path) -> Path:
    nodes = h100_nodes()
    return write_policy(root, {"cluster.yaml": CLUSTER, **TEAMS, "nodes/h100.yaml": node_export(nodes)})


def job_manifest(job: TasJob, annotations: dict[str, str]) -> dict:
    resources = {"requests": {"cpu": "1", GPU: str(job.gpus)}, "limits": {GPU: str(job.gpus)}}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": job.name, "namespace": job.team, "labels": {"kueue.x-k8s.io/queue-name": "default"}},
            "spec": {"parallelism": job.replicas, "completions": job.replicas, "suspend": True, "template": {
                "metadata": {"annotations": annotations},
                "spec": {"restartPolicy": "Never",
                         "containers": [{"name": "main", "image": "trainer", "resources": resources}]}}}}


def decided(cluster: LiveCluster, job: TasJob) -> dict | None:
    """The job's Workload once Kueue tried to admit it (QuotaReserved written, either way)."""
    for workload in cluster.items(f"namespaces/{job.team}/workloads"):
        if workload["metadata"]["ownerReferences"][0]["name"] == job.name and any(
                c["type"] == "QuotaReserved" for c in (workload.get("status") or {}).get("conditions", [])):
            return workload
    return None


def build_world(cluster: LiveCluster, tree: Path, world: list[TasJob] = WORLD) -> dict[str, dict]:
    report = json.loads((tree / "report.json").read_text())
    declared = {(r["team"], r["workload"]): r["annotations"] for r in report["topologyRequests"]}
    for job in world:
        annotations = declared[(job.team, job.name)] if job.annotations is None else job.annotations
        cluster.create([job_manifest(job, annotations)])
        wait_until(f"Kueue to decide about {job.name}", lambda: decided(cluster, job))
        time.sleep(1.1)
    time.sleep(3)   # requeued workloads get another look; none may change
    return {f"{w['metadata']['namespace']}/{w['metadata']['name']}": w for w in cluster.workloads()}


def holds_quota(workload: dict) -> bool:
    return any(c["type"] == "QuotaReserved" and c["status"] == "True"
               for c in (workload.get("status") or {}).get("conditions", []))


def live_reason(workload: dict) -> str:
    return next(c["message"] for c in workload["status"]["conditions"] if c["type"] == "QuotaReserved")


def live_assignments(workload: dict) -> dict[str, dict]:
    return {a["name"]: expanded_assignment(a["topologyAssignment"])
            for a in workload["status"]["admission"]["podSetAssignments"]}


def mismatches(live: dict[str, dict], said: dict[str, dict]) -> list[str]:
    """Where `evaluate`'s report (workload name -> its entry) differs from the live Kueue."""
    found = []
    for name, workload in sorted(live.items()):
        entry = said.get(name)
        if entry is None:
            found.append(f"{name}: not in the report")
        elif holds_quota(workload):
            if entry["status"] != "running":
                found.append(f"{name}: live admitted, evaluate says {entry['status']}: {entry.get('reason')}")
            elif entry.get("topologyAssignment") != live_assignments(workload):
                found.append(f"{name}: live {live_assignments(workload)}, evaluate {entry.get('topologyAssignment')}")
        elif entry["status"] not in ("pending", "inadmissible") or entry["reason"] != live_reason(workload):
            found.append(f"{name}: live pending ({live_reason(workload)}), evaluate {entry['status']}: {entry['reason']}")
    return found


def evaluate(inputs: list[str], engine: str) -> dict[str, dict]:
    done = run_cli("evaluate", *inputs, "--format", "json", "--engine", engine)
    assert done.returncode == 0, done.stderr
    return {w["name"]: w for w in json.loads(done.stdout)["workloads"]}


def test_kueue_admits_tas_jobs_into_the_domains_evaluate_names(tmp_path: Path) -> None:
    tree = compile_tree(tas_policy(tmp_path), tmp_path / "out")
    with running_sandbox(tmp_path / "sandbox", tree) as cluster:
        create_nodes(cluster, gb200_nodes() + h100_nodes())
        live = build_world(cluster, tree)
        export = tmp_path / "export.yaml"
        export.write_text(cluster.export(*EXPORTED))

    jobs = {w["metadata"]["ownerReferences"][0]["name"]: name for name, w in live.items()}
    assert sorted(jobs) == sorted(job.name for job in WORLD)
    pending = sorted(job for job, name in jobs.items() if not holds_quota(live[name]))
    # The world is the one described: the two jobs that fit no single domain wait (although the
    # GPUs are free in total), every other one was placed by TAS.
    assert pending == ["big", "wide"], {name: live_reason(w) for name, w in live.items() if not holds_quota(w)}
    for name, workload in live.items():
        if holds_quota(workload):
            assert all(a.get("topologyAssignment") for a in workload["status"]["admission"]["podSetAssignments"]), name
    configuration = tree / "kueue-config" / "kueue-manager-config.patch.yaml"
    inputs = [str(export)] + ([str(configuration)] if configuration.is_file() else [])

    for engine in ("kueue", "python"):   # Kueue's own code (the oracle) and kueue-policy's engine
        assert mismatches(live, evaluate(inputs, engine)) == [], engine
    said = evaluate(inputs, "python")

    # Positive control: one wrong domain in what evaluate said is caught.
    placed = next(name for name in sorted(live) if holds_quota(live[name]))
    wrong = json.loads(json.dumps(said))
    podset = next(iter(wrong[placed]["topologyAssignment"]))
    wrong[placed]["topologyAssignment"][podset]["domains"][0]["values"][-1] += "-elsewhere"
    assert mismatches(live, wrong) == [f"{placed}: live {live_assignments(live[placed])}, "
                                       f"evaluate {wrong[placed]['topologyAssignment']}"]
    # ... and so is a pending workload said to be admitted.
    waiting = next(name for name in sorted(live) if not holds_quota(live[name]))
    wrong = dict(said, **{waiting: dict(said[waiting], status="running")})
    assert len(mismatches(live, wrong)) == 1


def outside_pod(name: str, node: str, gpus: int) -> dict:
    """A pod bound to a node without Kueue (a notebook, a DaemonSet's pod): no kubelet runs, so
    it stays Pending on its node, which is what Kueue's non-TAS usage controller counts."""
    resources = {"requests": {"cpu": "1", GPU: str(gpus)}, "limits": {GPU: str(gpus)}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "monitoring"},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "x", "resources": resources}]}}


def test_pods_outside_tas_take_the_room_evaluate_counts(tmp_path: Path) -> None:
    """Two pods outside Kueue hold two hosts of clique c0: the live Kueue places the 3-host
    job in c1 and the 2-host job beside the pods, and `evaluate` of the export (pods included)
    says the same with both engines; without the pods in the export it would not."""
    world = [TasJob("nvl", "pretrain", 3, 4), TasJob("nvl", "big", 2, 4), TasJob("nvl", "finetune", 3, 4)]
    tree = compile_tree(tas_policy(tmp_path), tmp_path / "out")
    with running_sandbox(tmp_path / "sandbox", tree) as cluster:
        create_nodes(cluster, gb200_nodes())
        cluster.create([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}},
                        outside_pod("notebook", "gb-0-0", 4), outside_pod("exporter", "gb-0-1", 4)])
        time.sleep(1)   # the non-TAS usage controller sees the pods before the first job
        live = build_world(cluster, tree, world)
        export = tmp_path / "export.yaml"
        export.write_text(cluster.export(*EXPORTED, "pods"))
        without_pods = tmp_path / "export-without-pods.yaml"
        without_pods.write_text(cluster.export(*EXPORTED))

    by_job = {w["metadata"]["ownerReferences"][0]["name"]: w for w in live.values()}
    hosts = {job: sorted(d["values"][-1] for a in live_assignments(w).values() for d in a["domains"])
             for job, w in by_job.items() if holds_quota(w)}
    assert hosts == {"pretrain": ["gb-1-0", "gb-1-1", "gb-1-2"], "big": ["gb-0-2", "gb-0-3"]}, hosts
    configuration = tree / "kueue-config" / "kueue-manager-config.patch.yaml"
    extra = [str(configuration)] if configuration.is_file() else []
    for engine in ("kueue", "python"):
        assert mismatches(live, evaluate([str(export)] + extra, engine)) == [], engine
    # Positive control: the same export without the pods gives other domains.
    assert mismatches(live, evaluate([str(without_pods)] + extra, "python")) != []
