"""`simulate` against a live replay: the same trace, the same starts, finishes, preemptions and
flavors as a live Kueue gives when the jobs are created at their arrival and completed after
their run time (kp_testing.live_replay)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from kp_testing import run_cli
from kp_testing.live_policies import small_policy
from kp_testing.live_replay import ReplayJob, replay
from kp_testing.live_verdicts import read_live_quota
from kp_testing.sandbox import compile_tree, running_sandbox

pytestmark = pytest.mark.usefixtures("sandbox_built")

GI = 1024 ** 3
# name, team, arrival (s), run time (s), pods, GPUs a pod, priority class. Moments are 10 s
# apart or more; queueing, borrowing, reclaim and priority preemption all happen.
TRACE = [
    ("a-train", "a", 0, 100, 1, 8, None),
    ("a-spot", "a", 0, 100, 1, 8, None),
    ("a-borrow", "a", 10, 100, 1, 8, None),
    ("b-big", "b", 20, 30, 1, 8, None),
    ("b-urgent", "b", 30, 20, 1, 4, "high"),
    ("b-sweep", "b", 40, 40, 4, 1, None),
    ("a-late", "a", 60, 30, 1, 4, "low"),
]


def trace_file(path: Path) -> Path:
    jobs = [{"name": name, "team": team, "at": at, "duration": duration, "replicas": pods, "gpus": gpus,
             "cpu": str(16 * gpus), "memory": f"{128 * gpus}Gi", **({"priority": priority} if priority else {})}
            for name, team, at, duration, pods, gpus, priority in TRACE]
    path.write_text(yaml.safe_dump({"jobs": jobs}, sort_keys=False))
    return path


def replay_jobs() -> list[ReplayJob]:
    return [ReplayJob(name, team, at, duration, pods,
                      {"nvidia.com/gpu": Fraction(gpus), "cpu": Fraction(16 * gpus), "memory": Fraction(128 * gpus * GI)},
                      priority)
            for name, team, at, duration, pods, gpus, priority in TRACE]


def test_simulate_gives_the_starts_preemptions_and_flavors_of_a_live_replay(tmp_path: Path) -> None:
    policy = small_policy(tmp_path)
    simulated = run_cli("simulate", str(policy), "--trace", str(trace_file(tmp_path / "trace.yaml")),
                        "--format", "json")
    assert simulated.returncode == 0, simulated.stderr
    expected = {job["name"]: job for job in json.loads(simulated.stdout)["jobs"]}
    assert sum(job["preemptions"] for job in expected.values()) > 0   # the trace exercises preemption
    assert any(job["waited"] > 0 for job in expected.values())
    tree = compile_tree(policy, tmp_path / "out")
    with running_sandbox(tmp_path / "sandbox", tree) as cluster:
        live = replay(cluster, read_live_quota(cluster, []), replay_jobs())
    got = {job.name: {"started": job.started, "finished": job.finished, "preemptions": job.preemptions,
                      "flavor": job.flavor} for job in live}
    want = {name: {key: job[key] for key in ("started", "finished", "preemptions", "flavor")}
            for name, job in expected.items()}
    assert got == want
