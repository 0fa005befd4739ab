"""`kueue-policy diff` on real repositories: both sides compiled in memory from git."""

from __future__ import annotations

import json
from pathlib import Path

from kp_testing.git_repos import PolicyRepo, git, invoke
from kp_testing.forge_server import StandInForge


def _change_beta(repo: PolicyRepo) -> None:
    repo.edit_team("beta", "guaranteed: 16", "guaranteed: 8")
    repo.edit_team("beta", "namespaces: [beta]", "namespaces: [beta, beta-serve]")
    repo.edit_team("beta", "    - {name: notebook,", "    - {name: giant, replicas: 40, gpus: 8}\n    - {name: notebook,")


def test_diff_between_two_revisions_as_json(policy_repo: PolicyRepo) -> None:
    _change_beta(policy_repo)
    policy_repo.commit_all("beta changes")
    status_before = git(policy_repo.work, "status", "--porcelain")
    code, out, err = invoke(policy_repo.work, "diff", "HEAD~1", "HEAD", "--format", "json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["base"] == "HEAD~1" and payload["head"] == "HEAD"
    assert payload["summary"]["teams_changed"] == 1
    (cluster,) = payload["clusters"]
    (beta,) = cluster["teams"]
    assert beta["name"] == "beta"
    assert beta["namespaces_added"] == ["beta-serve"]
    quota = {(q["flavor"], q["resource"]): q for q in beta["quotas"]}
    changed = [q for q in quota.values() if q["before"]["guaranteed"] != q["after"]["guaranteed"]]
    assert changed and sum(q["before"]["guaranteed"] - q["after"]["guaranteed"] for q in changed) == 8
    giant = next(w for w in beta["workloads"] if w["name"] == "giant")
    assert giant["before"] is None and giant["after"] == "never"
    assert any("beta/giant gets worse" in w for w in cluster["warnings"])
    assert git(policy_repo.work, "status", "--porcelain") == status_before
    # same input, same bytes
    assert invoke(policy_repo.work, "diff", "HEAD~1", "HEAD", "--format", "json")[1] == out


def test_default_is_head_against_the_working_tree(policy_repo: PolicyRepo) -> None:
    code, out, _ = invoke(policy_repo.work, "diff")
    assert code == 0 and out.startswith("**No changes.**")
    _change_beta(policy_repo)
    code, out, err = invoke(policy_repo.work, "diff")
    assert code == 0, err
    assert out.startswith("**Plan:** 0 team(s) to add, 1 to change, 0 to remove")
    assert "<details><summary>~ team <b>beta</b>" in out
    assert "Namespaces (LocalQueues) added: `beta-serve`" in out
    code, text, _ = invoke(policy_repo.work, "diff", "--format", "text")
    assert code == 0 and "+ namespace beta-serve" in text and "workload giant: undeclared -> never" in text


def test_revision_without_a_policy_shows_everything_added(policy_repo: PolicyRepo) -> None:
    first = git(policy_repo.work, "rev-list", "--max-parents=0", "HEAD")
    git(policy_repo.work, "rm", "-rq", "policies")
    policy_repo.commit_all("no policy")
    code, out, err = invoke(policy_repo.work, "diff", "HEAD", first, "--format", "json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["clusters"][0]["status"] == "added"
    assert payload["summary"]["teams_added"] == 4


def test_broken_policy_at_a_revision_names_file_and_revision(policy_repo: PolicyRepo) -> None:
    policy_repo.edit_team("beta", "cohort: vision", "cohort: nowhere")
    policy_repo.commit_all("broken")
    code, out, err = invoke(policy_repo.work, "diff", "HEAD~1", "HEAD", subprocess_run=True)
    assert code == 1 and out == ""
    assert "policies/teams/beta.yaml:" in err and "KP304" in err and "(in the policy at HEAD)" in err
    assert "Traceback" not in err


def test_unknown_revision_and_not_a_repository(policy_repo: PolicyRepo, tmp_path: Path) -> None:
    code, _, err = invoke(policy_repo.work, "diff", "no-such-branch")
    assert code == 1 and "KP802" in err and "no-such-branch" in err
    elsewhere = tmp_path / "plain"
    elsewhere.mkdir()
    code, _, err = invoke(elsewhere, "diff", subprocess_run=True)
    assert code == 3 and "KP801" in err


def test_from_a_subfolder_with_a_relative_policy_path(policy_repo: PolicyRepo) -> None:
    _change_beta(policy_repo)
    code, out, err = invoke(policy_repo.work / "policies", "diff", "--policies", ".", "--format", "text")
    assert code == 0, err
    assert "~ team beta" in out


def test_comment_on_posts_one_sticky_comment(policy_repo: PolicyRepo) -> None:
    repo = policy_repo
    with StandInForge.github("tok-123456", repo.remote) as server:
        server.state.changes.append({"number": 7, "state": "open", "title": "t", "body": "",
                                     "head": {"ref": "feature"}, "base": {"ref": "main"}})
        env = {"GITHUB_TOKEN": "tok-123456", "GITHUB_REPOSITORY": "acme/gpu-policy", "GITHUB_API_URL": server.url}
        _change_beta(repo)
        repo.commit_all("beta")
        code, out, err = invoke(repo.work, "diff", "HEAD~1", "HEAD", "--comment-on", "7", env=env)
        assert code == 0, err
        assert "created" in err
        repo.edit_team("beta", "guaranteed: 8", "guaranteed: 12")
        repo.commit_all("beta again")
        code, _, err = invoke(repo.work, "diff", "HEAD~2", "HEAD", "--comment-on", "7", env=env)
        assert code == 0 and "updated" in err
        assert len(server.state.comments) == 1
        assert server.state.comments[0]["body"].startswith("<!-- kueue-policy:plan scope=all -->")
        assert server.state.violations == []


def test_gpu_access_change_warns_that_kueue_restarts(policy_repo: PolicyRepo) -> None:
    cluster = policy_repo.work / "policies" / "cluster.yaml"
    text = cluster.read_text()
    assert "gpuAccess: dra-claims" in text
    cluster.write_text(text.replace("gpuAccess: dra-claims", "gpuAccess: device-plugin"))
    code, out, err = invoke(policy_repo.work, "diff", "--format", "json")
    assert code == 0, err
    (cluster_diff,) = json.loads(out)["clusters"]
    assert cluster_diff["settings"] == [{"field": "gpuAccess", "before": "dra-claims", "after": "device-plugin"}]
    restart = [w for w in cluster_diff["warnings"] if "deviceClassMappings change" in w]
    assert len(restart) == 1 and "kueue-controller-manager" in restart[0]
    assert any(path.startswith("gpu-east/dra/") for path in cluster_diff["files"]["removed"])


def test_a_repository_without_commits(tmp_path: Path) -> None:
    import shutil
    import subprocess

    from kp_testing.git_repos import EXAMPLE_POLICY

    subprocess.run(["git", "init", "-q", str(tmp_path / "new")], check=True)
    shutil.copytree(EXAMPLE_POLICY, tmp_path / "new" / "policies")
    code, out, err = invoke(tmp_path / "new", "diff", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["summary"]["teams_added"] == 4
    code, _, err = invoke(tmp_path / "new", "pr")
    assert code == 3 and "no commit yet" in err
