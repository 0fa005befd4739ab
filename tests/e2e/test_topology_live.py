"""A policy with topology (the GB200 NVL72 + H100 racks fixture) on a real API server with
Kueue's webhooks: the Topologies and the flavors naming them are accepted, every ClusterQueue
goes Active (Kueue found each flavor's Topology), and what the compiler refuses or warns about
is what the live server refuses (hostname not last; a topology flavor's tolerations changed)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from kp_testing.sandbox import LiveCluster, compile_tree, running_sandbox, wait_until

pytestmark = pytest.mark.usefixtures("sandbox_built")

FIXTURE = Path(__file__).parents[1] / "compiler" / "topology_policies" / "nvl72"


def _active(cluster: LiveCluster) -> list[str] | None:
    queues = cluster.items("clusterqueues")
    active = [q["metadata"]["name"] for q in queues
              if any(c["type"] == "Active" and c["status"] == "True" for c in (q.get("status") or {}).get("conditions", []))]
    return active if queues and len(active) == len(queues) else None


def _job(name: str, annotations: dict[str, str], replicas: int) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "llm", "labels": {"kueue.x-k8s.io/queue-name": "default"}},
            "spec": {"parallelism": replicas, "completions": replicas, "template": {
                "metadata": {"annotations": annotations},
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "main", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}}


def test_topology_objects_are_accepted_and_queues_go_active(tmp_path: Path) -> None:
    tree = compile_tree(FIXTURE, tmp_path / "out")
    with running_sandbox(tmp_path / "sandbox", tree) as cluster:
        topologies = {t["metadata"]["name"]: [level["nodeLabel"] for level in t["spec"]["levels"]]
                      for t in cluster.items("topologies")}
        assert topologies == {"nvlink": ["nvidia.com/gpu.clique", "kubernetes.io/hostname"],
                              "h100": ["example.com/block", "example.com/rack", "kubernetes.io/hostname"]}
        flavors = {f["metadata"]["name"]: f["spec"].get("topologyName") for f in cluster.items("resourceflavors")}
        assert flavors == {"gb200": "nvlink", "h100": "h100"}
        assert wait_until("every ClusterQueue Active", lambda: _active(cluster)) == ["llm"]

        # Positive controls: the live server refuses what the compiler refuses and warns about.
        topology = yaml.safe_load((tree / "kueue" / "topologies" / "h100.yaml").read_text())
        reversed_levels = copy.deepcopy(topology)
        reversed_levels["metadata"]["name"] = "reversed"
        reversed_levels["spec"]["levels"].reverse()
        refused = cluster.apply([reversed_levels], check=False)
        assert refused.returncode != 0 and "lowest level of topology" in refused.stderr, refused.stderr
        flavor = yaml.safe_load((tree / "kueue" / "resourceflavors" / "h100.yaml").read_text())
        flavor["spec"]["tolerations"][0]["effect"] = "NoExecute"
        # As the GitOps tool that owns the flavor would apply it (forcing field ownership).
        refused = cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-",
                                  input=yaml.safe_dump(flavor, sort_keys=False), check=False)
        assert refused.returncode != 0 and "tolerations are immutable" in refused.stderr, refused.stderr

        # The annotations REPORT.md tells each team to put on its jobs pass Kueue's job webhook
        # (which validates topology requests); a slice size without its level does not.
        report = json.loads((tree / "report.json").read_text())
        workloads = yaml.safe_load((FIXTURE / "team.yaml").read_text())["spec"]["workloads"]
        replicas = {w["name"]: w["replicas"] for w in workloads}
        for request in report["topologyRequests"]:
            cluster.create([_job(request["workload"], request["annotations"], replicas[request["workload"]])])
        refused = cluster.create([_job("half", {"kueue.x-k8s.io/podset-slice-size": "2"}, 4)], check=False)
        assert refused.returncode != 0 and "podset-slice-size" in refused.stderr, refused.stderr
