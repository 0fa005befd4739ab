"""The team-wide ceiling on a live Kueue: team t (guaranteed 48, burst 24, two pools with room
for 112) gets Jobs of 8 GPUs one by one; Kueue's manager admits 9 of them (72 GPUs) and keeps the
10th pending with its own reason, though the spot pool is idle. Positive control: the
ClusterQueue as the compiler emitted it before (burst as every flavor's borrowing limit),
applied over the live one, lets Kueue admit the pending job on spot, past the documented 72."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kp_testing.ceiling_policies import BURST, CEILING, ceiling_policy, gpu_job
from kp_testing.live_verdicts import admitted
from kp_testing.sandbox import LiveCluster, compile_tree, running_sandbox, wait_until

pytestmark = pytest.mark.usefixtures("sandbox_built")

GPU = "nvidia.com/gpu"


def _workload(cluster: LiveCluster, job: str) -> dict | None:
    for workload in cluster.items("namespaces/t/workloads"):
        if any(owner["name"] == job for owner in workload["metadata"].get("ownerReferences") or []):
            return workload
    return None


def _decided(cluster: LiveCluster, job: str) -> dict | None:
    """The job's Workload once Kueue has decided about it (QuotaReserved set either way)."""
    workload = _workload(cluster, job)
    conditions = (workload or {}).get("status", {}).get("conditions") or []
    return workload if any(c["type"] == "QuotaReserved" for c in conditions) else None


def _flavor(workload: dict) -> str:
    return workload["status"]["admission"]["podSetAssignments"][0]["flavors"][GPU]


def test_kueue_holds_the_team_at_guaranteed_plus_burst(tmp_path: Path) -> None:
    tree = compile_tree(ceiling_policy(tmp_path), tmp_path / "out")
    with running_sandbox(tmp_path / "sandbox", tree) as cluster:
        admitted_on: list[str] = []
        for index in range(CEILING // 8 + 1):
            name = f"job-{index:02d}"
            cluster.create([gpu_job(name, "t", 8)])
            workload = wait_until(f"Kueue to decide about {name}", lambda: _decided(cluster, name))
            if admitted(workload):
                admitted_on.append(_flavor(workload))
        assert admitted_on == ["od"] * (CEILING // 8)   # 72 GPUs, all on the preferred pool
        last = f"job-{CEILING // 8:02d}"
        pending = _workload(cluster, last)
        assert not admitted(pending)
        reason = next(c for c in pending["status"]["conditions"] if c["type"] == "QuotaReserved")
        assert reason["status"] == "False" and reason["reason"] == "Pending", reason
        assert "insufficient unused quota for nvidia.com/gpu in flavor od, 8 more needed" in reason["message"], reason
        assert "nvidia.com/gpu in flavor spot, previously considered podsets requests (0) + current podset " \
               "request (8) > maximum capacity (0)" in reason["message"], reason

        # Positive control: burst on every flavor (the old emission) lets the team past 72.
        queue = yaml.safe_load((tree / "kueue" / "clusterqueues" / "t.yaml").read_text())
        per_gpu = {"cpu": "16", "memory": "128Gi", GPU: "1"}
        for flavor in queue["spec"]["resourceGroups"][0]["flavors"]:
            for resource in flavor["resources"]:
                number, unit = per_gpu[resource["name"]].rstrip("Gi"), "Gi" if resource["name"] == "memory" else ""
                resource["borrowingLimit"] = f"{BURST * int(number)}{unit}"
        cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-",
                        input=yaml.safe_dump(queue, sort_keys=False))
        moved = wait_until(f"Kueue to admit {last} once spot may be borrowed",
                           lambda: (lambda w: w if admitted(w) else None)(_workload(cluster, last)))
        assert _flavor(moved) == "spot"
