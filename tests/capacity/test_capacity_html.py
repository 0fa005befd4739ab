"""The frontier page of `capacity --html` in a real browser: one point per candidate, the
candidates stopped at a certain miss drawn hollow, those that do not compile drawn as such, the
user's text (names, compile messages) shown as text, never run as HTML, no script error."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import LAB, lab_trace
from kp_testing import run_cli
from kp_testing.browser import CHROMIUM, console_errors, dump_dom

from compiler.capacity.html import write_page

needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
# Markup a policy folder, a team or a pool could be named with: shown as these characters, it
# neither draws a heading nor runs its handler (which would mark the page).
INJECTED = '<img src=x onerror="document.body.dataset.injected=1"><h1 style=color:red>INJECTED'


@needs_chromium
def test_the_frontier_draws_every_candidate_and_the_stopped_ones_hollow(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "trace.csv", seed=4, jobs=120)
    page = tmp_path / "frontier.html"
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p95-wait<=20m",
                   "--workers", "2", "--html", str(page), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    stopped = sum(1 for c in data["candidates"] if c["stoppedAt"] is not None)
    assert stopped, "the run must stop some candidate for the page to show one"
    result = dump_dom(page, tmp_path / "profile")
    dom = result.stdout
    circles = re.findall(r"<circle [^>]*>", dom)
    assert len(re.findall(r"<(?:circle|path) [^>]*data-state=", dom)) == data["evaluated"], result.stderr[-2000:]
    assert sum(1 for c in circles if 'fill="none"' in c) == stopped
    assert sum(1 for c in circles if 'r="7"' in c) == 1   # the answer, ringed
    assert f"answer: {data['answer']['candidate']}" in dom
    assert console_errors(result.stderr) == []


@pytest.fixture(scope="module")
def unbuildable(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, Path]:
    """A run of the lab, in a folder named with markup, where a team declares a workload of 12
    GPUs on spot: a candidate with fewer spot GPUs makes it inadmissible, so it does not compile.
    (The page, the JSON answer, the folder.)"""
    base = tmp_path_factory.mktemp("unbuildable")
    folder = base / f"lab{INJECTED}"
    shutil.copytree(LAB, folder)
    with (folder / "teams" / "team-b.yaml").open("a") as team:
        team.write("  workloads:\n    - {name: sweep, replicas: 3, gpus: 4}\n")
    trace = lab_trace(base / "trace.csv", seed=7, jobs=60)
    page = base / "frontier.html"
    done = run_cli("capacity", str(folder), "--trace", str(trace), "--target", "p95-wait<=20m", "--workers", "2",
                   "--html", str(page), "--format", "json", "--quiet")
    assert done.returncode == 0, done.stderr
    return page, json.loads(done.stdout), base


@needs_chromium
def test_a_candidate_that_does_not_compile_is_drawn_as_such_not_as_never_started(unbuildable) -> None:
    page, data, base = unbuildable
    broken = [c for c in data["candidates"] if any(m.startswith("does not compile: ") for m in c["misses"])]
    assert broken, "the run must have a candidate that does not compile"
    result = dump_dom(page, base / "profile-broken")
    dom = result.stdout
    states = re.findall(r'<(circle|path) [^>]*data-state="([^"]*)"', dom)
    assert len(states) == data["evaluated"], result.stderr[-2000:]
    assert states.count(("path", "does-not-compile")) == len(broken)
    never_started = [c for c in data["candidates"] if c["worstP95Wait"] is None and c["stoppedAt"] is None]
    assert sum(1 for _, state in states if state == "never-started") == len(never_started) - len(broken)
    assert "a grey cross at the top does not compile" in dom
    assert console_errors(result.stderr) == []


@needs_chromium
def test_names_and_messages_are_shown_as_text_never_run_as_html(unbuildable) -> None:
    """Every text the page shows (cluster, candidates, pools, misses and the proof's) carries
    markup, as a policy folder's name does in a compile message: the page shows the characters."""
    _, data, base = unbuildable
    assert data["answer"] is not None and data["proof"], "the page must have tables to fill"
    data = json.loads(json.dumps(data))
    data["cluster"] += INJECTED
    data["answer"]["candidate"] += INJECTED
    for row in data["answer"]["pools"]:
        row["pool"] += INJECTED
        row["mig"] = f"{row['mig']}{INJECTED}"
    for point in data["candidates"] + data["proof"]:
        point["candidate"] += INJECTED
        point["misses"] = [f"does not compile: policy folder '{base}/y{INJECTED}'</script><!--<script>"]
    page = base / "injected.html"
    write_page(page, data)
    result = dump_dom(page, base / "profile-injected")
    dom = result.stdout
    assert "data-injected" not in dom and "<img" not in dom and "<h1 style" not in dom, dom[-3000:]
    shown = INJECTED.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert f"<h1>capacity: lab{shown}</h1>" in dom
    assert f"<td>ondemand{shown}</td>" in dom
    assert f'<span class="miss">does not compile: policy folder \'{base}/y{shown}\'&lt;/script&gt;' in dom
    assert f"answer: {data['answer']['candidate']}".replace("<", "&lt;").replace(">", "&gt;") in dom
    assert len(re.findall(r"<(?:circle|path) [^>]*data-state=", dom)) == data["evaluated"]
    assert console_errors(result.stderr) == []
