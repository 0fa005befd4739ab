"""`diff` and the pull request show each changed team's GPUs per pool and in total: guaranteed,
reachable (the ceiling) and lendable. On a real repository: alpha's burst goes from 16 to 24."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import git

from compiler.deliver.render import render_pull_request
from compiler.deliver.semantic_diff import diff_sides
from compiler.deliver.sides import compile_pair
from kp_testing.git_repos import EXAMPLE_POLICY, PolicyRepo, git as run_git, invoke


def _repo(tmp_path: Path) -> PolicyRepo:
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    shutil.copytree(EXAMPLE_POLICY, work / "policies")
    repo = PolicyRepo(work, work)
    repo.commit_all("policy")
    repo.edit_team("alpha", "burst: 16", "burst: 24")
    repo.commit_all("alpha bursts to 24")
    return repo


def test_diff_shows_the_ceiling_per_pool_and_in_total(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    code, out, err = invoke(repo.work, "diff", "HEAD~1", "HEAD", "--format", "json")
    assert code == 0, err
    (alpha,) = json.loads(out)["clusters"][0]["teams"]
    rows = {row["pool"]: (row["before"], row["after"]) for row in alpha["ceilings"]}
    assert rows["h100-ondemand"] == ({"guaranteed": 32, "reachable": 48, "lendable": 16},
                                     {"guaranteed": 32, "reachable": 56, "lendable": 16})
    assert rows["h100-spot"] == ({"guaranteed": 0, "reachable": 0, "lendable": 0},) * 2
    assert rows["total"] == ({"guaranteed": 32, "reachable": 48, "lendable": 16},
                             {"guaranteed": 32, "reachable": 56, "lendable": 16})
    code, markdown, _ = invoke(repo.work, "diff", "HEAD~1", "HEAD")
    assert "| pool | guaranteed | reachable | lendable |" in markdown
    assert "| `h100-ondemand` | 32 | 48 → **56** | 16 |" in markdown
    assert "| **total** | 32 | 48 → **56** | 16 |" in markdown
    code, text, _ = invoke(repo.work, "diff", "HEAD~1", "HEAD", "--format", "text")
    assert "GPUs total: guaranteed 32, reachable 48 -> 56, lendable 16" in text, text


def test_the_pull_request_body_shows_the_ceilings(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    before, after = compile_pair(git.Repo(repo.work), "HEAD~1", "HEAD", "policies")
    body = render_pull_request(diff_sides(before, after), scope="all", branch="kueue-policy/all",
                               base_branch="main", head_sha=run_git(repo.work, "rev-parse", "HEAD"),
                               gitops_tools="Argo CD", reports=after.reports).body
    assert "| **total** | 32 | 48 → **56** | 16 |" in body
    assert "| `h100-ondemand` | 32 | 48 → **56** | 16 |" in body
