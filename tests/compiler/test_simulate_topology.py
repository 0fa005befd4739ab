"""`simulate` on a policy with topology: jobs are placed on the pool's nodes, so a job can wait
although the pool has the GPUs in total (fragmentation), and the metrics and the HTML page show
it per pool and level.

Pool h100: 2 racks of 3 hosts x 8 GPUs; team a is guaranteed all 48 GPUs."""

from __future__ import annotations

import json
from pathlib import Path

from kp_testing import run_cli
from kp_testing.policies import write_policy

CLUSTER = """\
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  kueueVersion: "0.19"
  gpuAccess: device-plugin
  pools:
    - name: h100
      gpu: H100-80GB
      nodes: 6
      gpusPerNode: 8
      topology:
        levels:
          - {nodeLabel: example.com/rack, holds: 3}
          - {nodeLabel: kubernetes.io/hostname}
"""

TEAM = """\
apiVersion: kueue-policy/v1alpha1
kind: Team
metadata: {name: a}
spec:
  namespaces: [a]
  gpus: {guaranteed: 48}
"""

# first and second take 2 hosts of each rack; third fits the quota (16 of the 16 GPUs left) but
# needs 2 hosts in one rack, and each rack has 1 free: it waits for first to end at t=100.
TRACE = """\
jobs:
  - {name: first, team: a, at: 0, duration: 100, replicas: 2, gpus: 8, topology: {required: example.com/rack}}
  - {name: second, team: a, at: 0, duration: 200, replicas: 2, gpus: 8, topology: {required: example.com/rack}}
  - {name: third, team: a, at: 10, duration: 50, replicas: 2, gpus: 8, topology: {required: example.com/rack}}
"""


def _policy(root: Path) -> tuple[Path, Path]:
    policies = write_policy(root, {"cluster.yaml": CLUSTER, "a.yaml": TEAM})
    trace = root / "trace.yaml"
    trace.write_text(TRACE)
    return policies, trace


def test_a_job_waits_for_topology_alone(tmp_path: Path) -> None:
    policies, trace = _policy(tmp_path)
    done = run_cli("simulate", str(policies), "--trace", str(trace), "--format", "json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    jobs = {job["name"]: job for job in summary["jobs"]}
    assert (jobs["first"]["started"], jobs["second"]["started"]) == (0, 0)
    assert (jobs["third"]["started"], jobs["third"]["waited"], jobs["third"]["finished"]) == (100, 90, 150)
    [pool] = summary["topology"]
    assert pool["pool"] == "h100" and pool["jobsHeldByTopology"] == 1 and pool["heldSeconds"] == 90
    # 16 GPUs idle from t=10 to t=100 while third waited: 0.4 GPU-hours lost to fragmentation.
    assert pool["idleGpuHoursWhileHeld"] == 0.4
    rack, host = pool["levels"]
    assert (rack["level"], rack["domains"], host["level"], host["domains"]) == (
        "example.com/rack", 2, "kubernetes.io/hostname", 6)
    assert rack["meanFreeGpusInRoomiestDomain"] < rack["meanFreeGpus"]

    # Positive control: without the engine's placement step (Topology Aware Scheduling in the
    # admission cycle), third starts on arrival (quota alone) and nothing is held by topology.
    from compiler.evaluator import assigner
    from compiler.simulate.runner import simulate_policy
    from compiler.stages.pipeline import PolicySource

    original = assigner.place_pods
    assigner.place_pods = lambda *args: None
    try:
        report = simulate_policy(PolicySource.from_directory(policies), trace)
    finally:
        assigner.place_pods = original
    quota_only = {job["name"]: job for job in report.summary["jobs"]}
    assert quota_only["third"]["started"] == 10
    assert report.summary["topology"][0]["jobsHeldByTopology"] == 0


def test_the_html_page_charts_free_gpus_per_domain(tmp_path: Path) -> None:
    policies, trace = _policy(tmp_path)
    page = tmp_path / "run.html"
    done = run_cli("simulate", str(policies), "--trace", str(trace), "--html", str(page))
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    island = json.loads(text.split('id="simulation-data">', 1)[1].split("</script>", 1)[0])
    [domains] = island["domains"]
    assert domains["pool"] == "h100" and domains["level"] == "example.com/rack"
    assert [s["team"] for s in domains["series"]] == ["h100-0", "h100-1"]
    # Free GPUs (both racks): 16 while first and second run (third, placed at t=100 where first
    # was, leaves the same), 32 once third ends, 48 once second does.
    totals = [sum(s["values"][i] for s in domains["series"]) for i in range(len(domains["times"]))]
    assert (domains["times"], totals) == ([0, 150, 200], [16, 32, 48])
    assert "Free GPUs per domain" in text
