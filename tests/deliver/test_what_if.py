"""`Cluster.spec.whatIf.trace`: `diff` and `pr` replay a trace through both sides of a change."""

from __future__ import annotations

import json
import re

import pytest

from kp_testing import mermaid as mermaid_cli
from kp_testing.exports import export_text, exported
from kp_testing.forge_server import StandInForge
from kp_testing.git_repos import PolicyRepo, invoke

TRACE = """\
jobs:
  - {name: ft-1, team: alpha, at: 0, duration: 7200, replicas: 3, gpus: 8}
  - {name: ft-2, team: alpha, at: 60, duration: 7200, replicas: 3, gpus: 8}
  - {name: ev-1, team: beta, at: 120, duration: 1800, replicas: 2, gpus: 8}
"""


def with_what_if(repo: PolicyRepo) -> None:
    (repo.work / "demand").mkdir()
    (repo.work / "demand" / "last-week.yaml").write_text(TRACE)
    cluster = repo.work / "policies" / "cluster.yaml"
    cluster.write_text(cluster.read_text().rstrip("\n") + "\n  whatIf: {trace: demand/last-week.yaml}\n")
    repo.commit_all("policy: replay last week's jobs on every change")


def test_diff_replays_the_trace_through_both_sides(policy_repo: PolicyRepo) -> None:
    with_what_if(policy_repo)
    policy_repo.edit_team("alpha", "guaranteed: 32", "guaranteed: 16")
    code, out, err = invoke(policy_repo.work, "diff", subprocess_run=True)
    assert code == 0, err
    assert "### What-if: `demand/last-week.yaml` through `gpu-east`" in out
    assert "| alpha | p95 wait |" in out and "xychart-beta" in out
    code, out, err = invoke(policy_repo.work, "diff", "--format", "json", subprocess_run=True)
    assert code == 0, err
    what_if = json.loads(out)["whatIf"]
    assert [w["cluster"] for w in what_if] == ["gpu-east"]
    alpha = {c["metric"]: c for c in what_if[0]["changes"] if c["team"] == "alpha"}
    assert alpha["p95 wait"]["worse"] is True


def test_an_unchanged_policy_has_no_what_if_changes(policy_repo: PolicyRepo) -> None:
    with_what_if(policy_repo)
    code, out, err = invoke(policy_repo.work, "diff", "--format", "text", subprocess_run=True)
    assert code == 0, err
    assert "What-if: demand/last-week.yaml through gpu-east:\n  no change" in out


def test_a_missing_trace_is_named(policy_repo: PolicyRepo) -> None:
    with_what_if(policy_repo)
    (policy_repo.work / "demand" / "last-week.yaml").unlink()
    code, out, err = invoke(policy_repo.work, "diff", subprocess_run=True)
    assert code == 1 and "KP910" in err and "demand/last-week.yaml is not a file" in err


def _dry_run_pr_body(policy_repo: PolicyRepo) -> str:
    repo = policy_repo
    code, _, err = invoke(repo.work, "compile", "policies", "--out", "out")
    assert code == 0, err
    repo.commit_all("out: compiled")
    with_what_if(repo)
    repo.edit_team("alpha", "guaranteed: 32", "guaranteed: 16")
    repo.commit_all("policy: alpha gives up GPUs")
    with StandInForge.github("ghs_x", repo.remote) as server:
        env = {"GITHUB_TOKEN": "ghs_x", "GITHUB_REPOSITORY": "acme/gpu-policy", "GITHUB_API_URL": server.url}
        code, out, err = invoke(repo.work, "pr", "--dry-run", "--allow-inadmissible", env=env)
    assert code == 0, err
    return out


def test_the_pull_request_body_carries_the_what_if(policy_repo: PolicyRepo) -> None:
    out = _dry_run_pr_body(policy_repo)
    assert "## What-if: the same jobs through the old and the new policy" in out
    assert "| alpha | p95 wait |" in out


@pytest.mark.skipif(mermaid_cli.missing() is not None, reason=str(mermaid_cli.missing()))
def test_every_chart_of_the_pull_request_body_renders(policy_repo: PolicyRepo, tmp_path) -> None:
    """The quota tree and the what-if chart, rendered by mermaid-cli as GitHub renders them."""
    body = _dry_run_pr_body(policy_repo)
    blocks = re.findall(r"```mermaid\n(.*?)```", body, flags=re.S)
    kinds = sorted(block.split("\n", 1)[0] for block in blocks)
    assert kinds[0] == "flowchart TD" and kinds[-1] == "xychart-beta"
    for index, block in enumerate(blocks):
        done = mermaid_cli.render(block, tmp_path, f"chart-{index}")
        assert done.returncode == 0, done.stderr
        svg = (tmp_path / f"chart-{index}.svg").read_text()
        assert "<svg" in svg and "Syntax error" not in svg and "alpha" in svg


def test_pr_refuses_a_never_in_plain_words(policy_repo: PolicyRepo) -> None:
    repo = policy_repo
    repo.edit_team("alpha", "guaranteed: 32", "guaranteed: 16")
    repo.commit_all("policy: alpha gives up GPUs")
    with StandInForge.github("ghs_x", repo.remote) as server:
        env = {"GITHUB_TOKEN": "ghs_x", "GITHUB_REPOSITORY": "acme/gpu-policy", "GITHUB_API_URL": server.url}
        code, out, err = invoke(repo.work, "pr", "--dry-run", env=env)
    assert code == 1 and "error[KP601]" in err and "long-context-run" in err
    # People's units, not Kueue's raw quantities (246888m cpu, 2022284Mi memory).
    assert "246888m" not in err and "2022284Mi" not in err and "GPUs" in err


def test_last_week_s_kueue_export_reaches_the_pull_request(policy_repo: PolicyRepo) -> None:
    """From `kubectl get workloads -A -o yaml` of the cluster to the PR comment: the export is the
    what-if trace, its jobs are grouped by the team owning each namespace."""
    repo = policy_repo
    (repo.work / "demand").mkdir()
    hour = lambda h, m=0: f"2026-11-23T{h:02d}:{m:02d}:00Z"  # noqa: E731
    items = [exported("ft-1", "alpha-train", hour(8), hour(8), hour(12), gpus=8, count=3),
             exported("ft-2", "alpha-train", hour(8, 1), hour(8, 1), hour(12, 1), gpus=8, count=3),
             exported("ev-1", "alpha-eval", hour(9), hour(9), hour(9, 30), gpus=8, count=1),
             exported("bench", "beta", hour(8, 2), hour(8, 2), hour(9), gpus=8, count=2)]
    (repo.work / "demand" / "export.yaml").write_text(export_text(items))
    cluster = repo.work / "policies" / "cluster.yaml"
    cluster.write_text(cluster.read_text().rstrip("\n") + "\n  whatIf: {trace: demand/export.yaml}\n")
    repo.commit_all("policy: replay last week's export on every change")
    repo.edit_team("alpha", "guaranteed: 32", "guaranteed: 16")
    code, out, err = invoke(repo.work, "diff", "--format", "json", subprocess_run=True)
    assert code == 0, err
    (what_if,) = json.loads(out)["whatIf"]
    assert what_if["trace"] == "demand/export.yaml" and what_if["after"]["run"]["jobs"] == 4
    alpha = {c["metric"]: c for c in what_if["changes"] if c["team"] == "alpha"}
    assert alpha["p95 wait"]["worse"] is True
    code, out, err = invoke(repo.work, "diff", subprocess_run=True)
    assert code == 0, err
    assert "### What-if: `demand/export.yaml` through `gpu-east`" in out and "| alpha | p95 wait |" in out
