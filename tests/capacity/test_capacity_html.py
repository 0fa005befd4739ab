"""The frontier page of `capacity --html` in a real browser: one point per candidate, the
candidates stopped at a certain miss drawn hollow, no script error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import lab_trace
from kp_testing import run_cli
from kp_testing.browser import CHROMIUM, console_errors, dump_dom


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
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
    assert len(circles) == data["evaluated"], result.stderr[-2000:]
    assert sum(1 for c in circles if 'fill="none"' in c) == stopped
    assert sum(1 for c in circles if 'r="7"' in c) == 1   # the answer, ringed
    assert f"answer: {data['answer']['candidate']}" in dom
    assert console_errors(result.stderr) == []
