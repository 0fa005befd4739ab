"""`burst` is a team-wide ceiling (docs/concepts.md, Ceilings): a team guaranteed 48 GPUs with a
burst of 24 on two pools runs at most 72, on the admission engine, whatever the pools have free.

The positive control is the ClusterQueue the compiler emitted before: `burst` as the borrowing
limit of every flavor, on which the same jobs run 96 GPUs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from kp_testing import run_cli
from kp_testing.ceiling_policies import BURST, CEILING, GUARANTEED, ceiling_policy, gpu_job

GPU = "nvidia.com/gpu"
JOBS = 14  # 14 x 8 = 112 GPUs asked: more than both pools hold


def _compile(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    done = run_cli("compile", str(ceiling_policy(tmp_path)), "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out / "ceil"


def _admitted_gpus(tmp_path: Path, tree: Path, queue: dict | None = None) -> tuple[dict[str, int], list[dict]]:
    """Run `evaluate` on the tree (with `queue` in place of team t's ClusterQueue) and JOBS jobs of
    8 GPUs: GPUs admitted per flavor, and the pending workloads."""
    manifests = [p for p in sorted((tree / "kueue").rglob("*.yaml")) if not (queue and p.name == "t.yaml"
                                                                              and p.parent.name == "clusterqueues")]
    extra = tmp_path / "world.yaml"
    documents = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}}]
    documents += [gpu_job(f"job-{i:02d}", "t", 8, f"2026-11-30T10:{i:02d}:00Z") for i in range(JOBS)]
    if queue is not None:
        documents.append(queue)
    extra.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    done = run_cli("evaluate", *map(str, manifests), str(extra), "--format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    per_flavor: dict[str, int] = {}
    for workload in result["workloads"]:
        if workload["status"] == "admitted":
            flavor = workload["assignment"]["main"][GPU]
            per_flavor[flavor] = per_flavor.get(flavor, 0) + 8 * workload["count"]["main"]
    return per_flavor, [w for w in result["workloads"] if w["status"] != "admitted"]


def test_the_team_runs_at_most_guaranteed_plus_burst(tmp_path: Path) -> None:
    tree = _compile(tmp_path)
    per_flavor, pending = _admitted_gpus(tmp_path, tree)
    assert sum(per_flavor.values()) == CEILING == 72
    assert per_flavor == {"od": 72}
    assert len(pending) == JOBS - CEILING // 8
    # Kueue's own reason: on od the team holds all it may (72), spot is shut to it (0). The
    # jobs of the same shape behind the one tried are set aside with it, untried (no reason).
    tried = [w for w in pending if w["reason"] != "Waiting to be scheduled"]
    assert tried
    for workload in tried:
        assert "insufficient unused quota for nvidia.com/gpu in flavor od, 8 more needed" in workload["reason"]
        assert ("insufficient quota for nvidia.com/gpu in flavor spot, previously considered podsets requests (0) "
                "+ current podset request (8) > maximum capacity (0)") in workload["reason"]
    # What report.json says the team can reach is what it reached.
    report = json.loads((tree / "report.json").read_text())
    team = report["teams"][0]
    assert team["ceiling"] == {"guaranteed": GUARANTEED, "reachable": CEILING, "lendable": GUARANTEED}
    assert [(f["flavor"], f["guaranteed"], f["burst"], f["reachable"]) for f in team["flavors"]] == [
        ("od", 48, 24, 72), ("spot", 0, 0, 0)]


def test_positive_control_burst_on_every_flavor_runs_96(tmp_path: Path) -> None:
    """The emission before the fix: the same borrowing limit on each flavor (cpu and memory with
    it). The engine then admits 48 + 24 on one pool and 24 on the other."""
    tree = _compile(tmp_path)
    queue = copy.deepcopy(yaml.safe_load((tree / "kueue" / "clusterqueues" / "t.yaml").read_text()))
    per_gpu = {"cpu": 16, "memory": 128, GPU: 1}
    for flavor in queue["spec"]["resourceGroups"][0]["flavors"]:
        for resource in flavor["resources"]:
            unit = "Gi" if resource["name"] == "memory" else ""
            resource["borrowingLimit"] = f"{BURST * per_gpu[resource['name']]}{unit}"
    per_flavor, _ = _admitted_gpus(tmp_path, tree, queue)
    assert per_flavor == {"od": 72, "spot": 24}
    assert sum(per_flavor.values()) == 96 > CEILING


def test_the_burst_sits_first_where_the_guarantee_is(tmp_path: Path) -> None:
    """A team whose guarantee lands on its second pool (the first is full): its burst goes there
    first, so a job of guaranteed + burst GPUs fits one flavor (Kueue gives a pod set one)."""
    from kp_testing.policies import team, write_policy
    folder = write_policy(tmp_path, {
        "cluster.yaml": CLUSTER_TWO_POOLS,
        "full.yaml": team("full", "cohort: lab\nnamespaces: [full]\ngpus: {guaranteed: 16}\ncapacity: on-demand-only",
                          cluster="ceil"),
        "t.yaml": team("t", "cohort: lab\nnamespaces: [t]\ngpus: {guaranteed: 8, burst: 8}\n"
                       "workloads:\n  - {name: both, replicas: 2, gpus: 8}", cluster="ceil")})
    out = tmp_path / "out"
    done = run_cli("compile", str(folder), "--out", str(out))
    assert done.returncode == 0, done.stderr
    queue = yaml.safe_load((out / "ceil" / "kueue" / "clusterqueues" / "t.yaml").read_text())
    limits = {f["name"]: next(r for r in f["resources"] if r["name"] == GPU)
              for f in queue["spec"]["resourceGroups"][0]["flavors"]}
    assert limits["spot"] == {"name": GPU, "nominalQuota": "8", "borrowingLimit": "8"}
    assert limits["od"] == {"name": GPU, "nominalQuota": "0", "borrowingLimit": "0"}
    verdicts = json.loads((out / "ceil" / "report.json").read_text())["workloads"]
    assert [(w["name"], w["verdict"], w["flavor"]) for w in verdicts] == [("both", "borrowing", "spot")]


CLUSTER_TWO_POOLS = """\
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata: {name: ceil}
spec:
  pools:
    - {name: od, gpu: H100-80GB, nodes: 2, gpusPerNode: 8, capacity: on-demand}
    - {name: spot, gpu: H100-80GB, nodes: 2, gpusPerNode: 8, capacity: spot}
  cohorts:
    - name: lab
"""


def test_simulate_never_runs_the_team_past_its_ceiling(tmp_path: Path) -> None:
    """The issue's own setting, `simulate`: 14 jobs of 8 GPUs arrive at once; at no moment do the
    team's running jobs hold more than guaranteed + burst (the pre-fix compile ran 96)."""
    trace = tmp_path / "trace.yaml"
    trace.write_text(yaml.safe_dump({"jobs": [{"team": "t", "name": f"j{i}", "at": 0, "duration": 3600, "gpus": 8}
                                              for i in range(JOBS)]}))
    done = run_cli("simulate", str(ceiling_policy(tmp_path)), "--trace", str(trace), "--format", "json")
    assert done.returncode == 0, done.stderr
    jobs = json.loads(done.stdout)["jobs"]
    moments = sorted({job["started"] for job in jobs})
    peak = max(sum(8 for job in jobs if job["started"] <= now < job["finished"]) for now in moments)
    assert peak == CEILING
    assert all(job["finished"] is not None for job in jobs)   # the rest run once the first finish
