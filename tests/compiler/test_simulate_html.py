"""`simulate --html`: a self-contained page, loaded in a real headless browser (Chromium)."""

from __future__ import annotations

import dataclasses
import re

import pytest
from kp_testing.browser import CHROMIUM, console_errors, dump_dom
from kp_testing.policies import CLUSTER, team, write_policy
from kp_testing import run_cli

from compiler.simulate.html import page as simulate_page
from compiler.simulate.runner import simulate_policy
from compiler.stages.pipeline import PolicySource


def _write_inputs(tmp_path):
    files = {"cluster.yaml": CLUSTER,
             "a.yaml": team("a", "namespaces: [a]\ngpus: {guaranteed: 8}\ncapacity: on-demand-only"),
             "b.yaml": team("b", "namespaces: [b]\ngpus: {guaranteed: 8}\ncapacity: on-demand-only")}
    policies = write_policy(tmp_path, files)
    trace = tmp_path / "trace.yaml"
    trace.write_text("jobs:\n"
                     "  - {name: big, team: a, at: 0, duration: 100, replicas: 2, gpus: 8}\n"
                     "  - {name: mine, team: b, at: 10, duration: 50, replicas: 1, gpus: 8}\n"
                     "  - {name: later, team: b, at: 30, duration: 20, replicas: 1, gpus: 4}\n")
    return policies, trace


@pytest.fixture
def page(tmp_path):
    policies, trace = _write_inputs(tmp_path)
    html = tmp_path / "run.html"
    result = run_cli("simulate", str(policies), "--trace", str(trace), "--html", str(html))
    assert result.returncode == 0, result.stderr
    return html


def test_the_page_needs_nothing_from_the_network(page):
    text = page.read_text()
    # The only URL is the SVG namespace, which is a name, never fetched.
    assert set(re.findall(r"https?://[^\s\"'<>]+", text)) == {"http://www.w3.org/2000/svg"}
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", text)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_page_loads_in_chromium_without_errors_and_draws_its_charts(page, tmp_path):
    result = dump_dom(page, tmp_path / "profile")
    dom = result.stdout
    assert 'data-charts="4"' in dom, result.stderr[-2000:]
    assert "data-failed" not in dom and 'id="errors"></div>' in dom
    assert console_errors(result.stderr) == []
    # Both teams have a band in the usage chart, a box in the wait chart, a node in the tree.
    for name in ("a", "b"):
        assert f'data-team="{name}"' in dom and f'data-node="{name}"' in dom
    assert 'data-node="research"' in dom and 'data-pool="od"' in dom
    assert dom.count("<tr>") == 3  # the header and one row per team


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_names_are_shown_as_text_never_run_as_html(tmp_path):
    """A name with markup (a cluster's is a DNS label today; the page does not rely on it) shows
    as its characters, in the title and the summary; the script builds no HTML from strings."""
    policies, trace = _write_inputs(tmp_path)
    report = simulate_policy(PolicySource.from_directory(policies), trace)
    injected = '<img src=x onerror="document.body.dataset.injected=1"><h1 style=color:red>INJECTED</script><!--'
    report.summary["cluster"] = injected
    text = simulate_page(dataclasses.replace(report, cluster=injected))
    assert "innerHTML" not in text
    html = tmp_path / "injected.html"
    html.write_text(text)
    result = dump_dom(html, tmp_path / "profile")
    dom = result.stdout
    assert 'data-charts="4"' in dom, result.stderr[-2000:]
    assert "data-injected" not in dom and "<img" not in dom and "<h1 style" not in dom
    shown = injected.replace("<", "&lt;").replace(">", "&gt;")
    assert f"<h1>kueue-policy simulation: {shown}</h1>" in dom
    assert f'id="summary">{shown}: 3 jobs' in dom
    assert console_errors(result.stderr) == []
