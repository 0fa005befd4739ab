"""MIG in the search: a trace of jobs asking for GPU memory (bench/generate_mig_trace.py) needs
fewer GPUs on a pool cut by the planner, the written policy carries the cut and the guarantees,
and `simulate` on it gives the reported figures."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from kp_testing import REPO_ROOT, run_cli


def _generator():
    spec = importlib.util.spec_from_file_location("generate_mig_trace", REPO_ROOT / "bench" / "generate_mig_trace.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mig_cut_needs_fewer_gpus_and_simulates_as_reported(tmp_path: Path) -> None:
    _generator().generate(tmp_path, jobs=250, seed=4, rate=9.0)
    policy, trace = tmp_path / "policy", tmp_path / "trace.csv"
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=1h",
                   "--nodes", "h100=1..24", "--mig", "h100=both", "--write", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    cuts = {c["mig"]["h100"]: c["costPerHour"] for c in data["cuts"]}
    assert cuts["planned"] < cuts["none"], cuts
    pool = data["answer"]["pools"][0]
    assert pool["mig"] == "planned" and pool["migLayouts"]
    assert sum(layout["count"] for layout in pool["migLayouts"]) == pool["gpus"]
    # A MIG pool's GPU-hours: instances weighed by their memory slices, idle the rest of the pool's.
    hours = data["answer"]["run"]["makespan"] / 3600
    assert pool["usedGpuHours"] > 0
    assert abs(pool["usedGpuHours"] + pool["idleGpuHours"] - pool["gpus"] * hours) < 0.01
    assert "mig: planned" in (policy / "cluster.yaml").read_text()
    assert "mig: {" in (policy / "teams" / "serving.yaml").read_text()
    # The proof: one GPU fewer misses a target.
    assert data["proof"] and all(not n["meets"] for n in data["proof"])
    simulated = run_cli("simulate", str(policy), "--trace", str(trace), "--format", "json")
    assert simulated.returncode == 0, simulated.stderr
    summary = json.loads(simulated.stdout)
    teams = {t["team"]: t for t in summary["teams"]}
    used = sum(p["usedHours"] for p in summary["pools"] if p["resource"].startswith("nvidia.com/mig-"))
    text = " ".join(run_cli("simulate", str(policy), "--trace", str(trace)).stdout.split())   # (rich wraps lines)
    assert f"{used:,.1f} MIG instance-hours used" in text
    for row in data["answer"]["teams"]:
        assert row["wait"] == teams[row["team"]]["wait"]
        assert row["migInstanceHours"] == teams[row["team"]]["migInstanceHours"]
    # The written (MIG) policy meets the targets; comparing whole GPUs alone says why it costs more.
    whole = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=1h",
                    "--nodes", "h100=1..24", "--mig", "h100=none")
    assert whole.returncode == 0, whole.stderr
    assert "its MIG cut is not among those --mig compares" in " ".join(whole.stdout.split())


def test_without_an_answer_every_cut_says_what_its_largest_candidate_misses(tmp_path: Path) -> None:
    _generator().generate(tmp_path, jobs=120, seed=4, rate=9.0)
    done = run_cli("capacity", str(tmp_path / "policy"), "--trace", str(tmp_path / "trace.csv"),
                   "--target", "p95-wait<=1m", "--nodes", "h100=1..1", "--mig", "h100=both", "--workers", "1")
    assert done.returncode == 1, done.stderr
    assert "KP922" in done.stderr and "Traceback" not in done.stderr
    largest = {line.split("the largest (", 1)[1].split(")", 1)[0] for line in done.stderr.splitlines() if "KP922" in line}
    assert largest == {"h100=1; guaranteed 0 GPUs", "h100=1; h100 mig planned; guaranteed 0 GPUs"}   # (whole GPUs: as it is)


def test_demand_guarantees_on_a_fixed_layout_are_what_the_layout_holds(tmp_path: Path) -> None:
    _generator().generate(tmp_path, jobs=10, seed=4, rate=9.0)
    policy = tmp_path / "policy"
    cluster = policy / "cluster.yaml"
    cluster.write_text(cluster.read_text().replace("      cost: 1", "      cost: 1\n      mig: {layout: {3g.40gb: 1, 1g.10gb: 4}}", 1))
    rows = ["team,name,at,duration,replicas,mig"]
    rows += [f"{'serving' if i % 2 else 'eval'},j{i},{i * 300},{3600 + 60 * (i % 7)},1,{'1g.10gb' if i % 2 else '3g.40gb'}"
             for i in range(80)]
    trace = tmp_path / "fixed.csv"
    trace.write_text("\n".join(rows) + "\n")
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=1h", "--workers", "1",
                   "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert not [p for p in data["candidates"] if any("does not compile" in m for m in p["misses"])]
    assert data["cuts"][0]["mig"] == {"h100": "layout"}
    assert data["answer"]["guarantees"].startswith("guarantees from each team's mean")
