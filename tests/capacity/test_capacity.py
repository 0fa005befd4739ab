"""`kueue-policy capacity` end to end: the answer an exhaustive search finds, figures that equal
`simulate` on the written policy, the same answer on any number of workers."""

from __future__ import annotations

import difflib
import itertools
import json
import math
import shutil
from pathlib import Path

from conftest import lab_trace, with_nodes
from kp_testing import run_cli

from compiler.simulate.runner import simulate_policy
from compiler.stages.pipeline import PolicySource

COST = {"ondemand": 2.5 * 4, "spot": 1.0 * 4}   # per node and hour: GPUs per node x price
TARGET_SECONDS = 30 * 60


def _p95_with_never_started(summary: dict, team: str) -> float:
    waits = sorted(math.inf if j["waited"] is None else j["waited"] for j in summary["jobs"] if j["team"] == team)
    rank = max(1, math.ceil(0.95 * len(waits)))
    return waits[rank - 1]


def test_answer_is_the_cheapest_of_an_exhaustive_search(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "trace.csv")
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p95-wait<=30m",
                   "--nodes", "ondemand=1..4", "--nodes", "spot=1..5", "--guarantees", "keep",
                   "--workers", "2", "--format", "json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["answer"]
    # Every candidate of the space, simulated by `simulate`'s runner on a copy edited by hand.
    feasible = {}
    for ondemand, spot in itertools.product(range(1, 5), range(1, 6)):
        folder = tmp_path / f"c-{ondemand}-{spot}"
        shutil.copytree(lab, folder)
        with_nodes(folder, {"ondemand": ondemand, "spot": spot})
        summary = simulate_policy(PolicySource.from_directory(folder), trace).summary
        if all(_p95_with_never_started(summary, team) <= TARGET_SECONDS for team in ("team-a", "team-b")):
            feasible[(ondemand, spot)] = ondemand * COST["ondemand"] + spot * COST["spot"]
    assert feasible, "the space must hold an answer for the test to mean anything"
    cheapest = min(feasible.values())
    nodes = {p["pool"]: p["nodes"] for p in answer["pools"]}
    assert answer["costPerHour"] == cheapest
    assert (nodes["ondemand"], nodes["spot"]) in feasible


def test_reported_figures_equal_simulate_on_the_written_policy(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "trace.csv", seed=11)
    before = {p.name: p.read_text() for p in sorted(lab.rglob("*.yaml"))}
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p95-wait<=30m",
                   "--target", "team-a:within-10m>=80%", "--write", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    answer = data["answer"]
    assert data["written"], "the answer changes the policy"
    # The written policy, simulated by the other command, gives exactly the reported figures.
    simulated = run_cli("simulate", str(lab), "--trace", str(trace), "--format", "json")
    assert simulated.returncode == 0, simulated.stderr
    summary = json.loads(simulated.stdout)
    by_team = {t["team"]: t for t in summary["teams"]}
    for row in answer["teams"]:
        team = by_team[row["team"]]
        assert row["wait"] == team["wait"]
        assert row["gpuHours"] == team["gpuHours"]
        assert row["neverStarted"] == team["neverStarted"]
        assert row["preemptionsSuffered"] == team["preemptionsSuffered"]
    pools = {p["pool"]: p for p in summary["pools"] if p["resource"] == "nvidia.com/gpu"}
    for row in answer["pools"]:
        assert row["gpus"] == pools[row["pool"]]["capacity"]
        assert row["usedGpuHours"] == pools[row["pool"]]["usedHours"]
        assert row["idleGpuHours"] == pools[row["pool"]]["idleHours"]
    assert answer["run"] == summary["run"]
    # Round-trip editing: comments survive and only the numbers the answer changes differ.
    after = {p.name: p.read_text() for p in sorted(lab.rglob("*.yaml"))}
    cluster_diff = [line for line in difflib.unified_diff(before["cluster.yaml"].splitlines(),
                                                          after["cluster.yaml"].splitlines(), lineterm="", n=0)
                    if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert cluster_diff and all("nodes:" in line for line in cluster_diff), cluster_diff
    assert "cost: 2.5   # per GPU hour" in after["cluster.yaml"]


def test_same_answer_whatever_the_worker_count(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "trace.csv", seed=3)
    answers = []
    for workers in ("1", "2"):
        done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p90-wait<=1h",
                       "--workers", workers, "--format", "json")
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        data.pop("workers")
        answers.append(data)
    assert answers[0] == answers[1]


def test_the_answer_is_proved_by_its_failing_neighbours(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "trace.csv")
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p95-wait<=30m",
                   "--guarantees", "keep", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    nodes = {p["pool"]: p["nodes"] for p in data["answer"]["pools"]}
    assert len(data["proof"]) == sum(1 for n in nodes.values() if n > 1)
    for neighbour in data["proof"]:
        assert not neighbour["meets"] and neighbour["misses"]
        assert neighbour["costPerHour"] < data["answer"]["costPerHour"]
    assert data["evaluated"] == len(data["candidates"])
    answer = data["answer"]   # (its cost over the trace is over its own run, not the policy's)
    assert answer["costOverTrace"] == round(answer["costPerHour"] * answer["run"]["makespan"] / 3600, 3)


def test_html_page_has_one_point_per_candidate(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "trace.csv")
    page = tmp_path / "frontier.html"
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p95-wait<=30m",
                   "--html", str(page), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    html = page.read_text()
    island = html.split('<script type="application/json" id="data">', 1)[1].split("</script>", 1)[0]
    assert len(json.loads(island)["candidates"]) == data["evaluated"]
    assert "http" not in island and "src=" not in html
