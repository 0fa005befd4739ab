"""`kueue-policy pr` end to end: a real clone, a real bare origin, the strict stand-in forge."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from kp_testing.git_repos import PolicyRepo, git, invoke
from kp_testing.forge_server import StandInForge

TOKEN = "ghs_0123456789abcdefSECRET"
BRANCH = "kueue-policy/all"


def github_env(server: StandInForge, token: str = TOKEN) -> dict[str, str]:
    return {"GITHUB_TOKEN": token, "GITHUB_REPOSITORY": "acme/gpu-policy", "GITHUB_API_URL": server.url}


def assert_no_secret(repo: PolicyRepo, *outputs: str) -> None:
    for text in outputs:
        assert TOKEN not in text
    for config in (repo.work / ".git" / "config", repo.remote / "config"):
        assert TOKEN not in config.read_text()
    leaked = subprocess.run(["grep", "-rl", TOKEN, str(repo.work), str(repo.remote)], capture_output=True, text=True)
    assert leaked.stdout == "", f"token written to {leaked.stdout}"


def test_first_pr_then_no_change_then_policy_change_updates_the_same_pr(policy_repo: PolicyRepo) -> None:
    repo = policy_repo
    before = repo.local_state()
    with StandInForge.github(TOKEN, repo.remote) as server:
        # 1. first run: branch pushed, PR opened, one sticky comment
        code, out, err = invoke(repo.work, "pr", env=github_env(server), subprocess_run=True)
        assert code == 0, err
        assert "opened pull request #1" in out
        tip = repo.remote_tip(BRANCH)
        assert tip is not None
        main_tip = repo.remote_tip("main")
        assert git(repo.remote, "rev-parse", f"{tip}^") == main_tip          # one commit on top of main
        assert git(repo.remote, "log", "-1", "--format=%an <%ae>%n%B", tip).startswith("kueue-policy[bot]")
        assert "kind: ClusterQueue" in repo.remote_show(tip, "out/gpu-east/kueue/clusterqueues/alpha.yaml")
        changed = git(repo.remote, "diff", "--name-only", main_tip, tip).splitlines()
        assert changed and all(path.startswith("out/") for path in changed)
        state = server.state
        assert state.violations == []
        assert len(state.changes) == 1 and state.changes[0]["head"]["ref"] == BRANCH
        assert state.changes[0]["base"]["ref"] == "main"
        body = state.changes[0]["body"]
        assert body.startswith("<!-- kueue-policy:pr scope=all -->")
        assert "cluster `gpu-east`" in body and "## Capacity per pool" in body and "## Admissibility" in body
        assert len(state.comments) == 1 and state.comments[0]["body"].startswith("<!-- kueue-policy:plan scope=all -->")
        assert repo.local_state() == before                                 # checkout untouched, clean
        assert_no_secret(repo, out, err)

        first_comment = state.comments[0]["body"]
        # 2. nothing changed: no push, no API write
        writes = len(state.writes)
        code, out, err = invoke(repo.work, "pr", env=github_env(server))
        assert code == 0, err
        assert repo.remote_tip(BRANCH) == tip
        assert len(state.writes) == writes
        assert "unchanged" in out

        # 3. a policy change: new commit on the branch, same PR updated, same comment edited
        repo.edit_team("beta", "guaranteed: 16", "guaranteed: 8")
        repo.commit_all("beta: give back 8 GPUs")
        repo.push_main()
        before = repo.local_state()
        code, out, err = invoke(repo.work, "pr", env=github_env(server))
        assert code == 0, err
        assert "updated pull request #1" in out
        new_tip = repo.remote_tip(BRANCH)
        assert new_tip != tip and git(repo.remote, "rev-parse", f"{new_tip}^") == repo.remote_tip("main")
        assert len(state.changes) == 1 and len(state.comments) == 1
        assert [r.method for r in state.writes[writes:]] == ["PATCH", "PATCH"]
        assert "team <b>beta</b>" in state.changes[0]["body"]
        assert state.comments[0]["body"] != first_comment
        assert state.violations == []
        assert repo.local_state() == before
        assert_no_secret(repo, out, err)


def test_someone_else_pushed_to_the_branch(policy_repo: PolicyRepo, tmp_path: Path) -> None:
    repo = policy_repo
    with StandInForge.github(TOKEN, repo.remote) as server:
        assert invoke(repo.work, "pr", env=github_env(server))[0] == 0
        # a person adds a commit to the bot branch
        other = tmp_path / "other"
        subprocess.run(["git", "clone", "-q", "-b", BRANCH, str(repo.remote), str(other)], check=True)
        (other / "out" / "NOTE.md").write_text("hand edit\n")
        git(other, "add", "-A")
        git(other, "commit", "-qm", "hand-tune alpha")
        git(other, "push", "-q", "origin", BRANCH)
        human_tip = repo.remote_tip(BRANCH)
        writes = len(server.state.writes)

        repo.edit_team("beta", "guaranteed: 16", "guaranteed: 8")
        repo.commit_all("beta: fewer GPUs")
        repo.push_main()
        code, out, err = invoke(repo.work, "pr", env=github_env(server))
        assert code == 3
        assert "KP803" in err and "Dana Developer" in err and "hand-tune alpha" in err
        assert repo.remote_tip(BRANCH) == human_tip
        assert len(server.state.writes) == writes


@pytest.mark.parametrize("status", [401, 403])
def test_bad_token_stops_before_anything_is_pushed(policy_repo: PolicyRepo, status: int) -> None:
    repo = policy_repo
    with StandInForge.github(TOKEN, repo.remote) as server:
        if status == 401:
            env = github_env(server, token="ghs_wrong_token_value")
        else:
            env = github_env(server)
            server.state.fail_once[("GET", r"/repos/acme/gpu-policy/pulls")] = 403
        code, out, err = invoke(repo.work, "pr", env=env, subprocess_run=status == 401)
        assert code == 3
        assert "KP804" in err and str(status) in err and "Traceback" not in err
        assert "ghs_wrong_token_value" not in out + err
        assert repo.remote_tip(BRANCH) is None
        assert server.state.writes == []
        assert_no_secret(repo, out, err)


def test_unknown_repository_is_404_and_nothing_is_pushed(policy_repo: PolicyRepo) -> None:
    with StandInForge.github(TOKEN, policy_repo.remote) as server:
        env = {**github_env(server), "GITHUB_REPOSITORY": "acme/does-not-exist"}
        code, _, err = invoke(policy_repo.work, "pr", env=env)
    assert code == 3 and "KP805" in err and "acme/does-not-exist" in err
    assert policy_repo.remote_tip(BRANCH) is None


def test_422_when_opening_rolls_the_new_branch_back(policy_repo: PolicyRepo) -> None:
    with StandInForge.github(TOKEN, policy_repo.remote) as server:
        server.state.fail_once[("POST", r"/repos/acme/gpu-policy/pulls")] = 422
        code, out, err = invoke(policy_repo.work, "pr", env=github_env(server))
        assert code == 3 and "KP806" in err and "deleted again" in err
        assert policy_repo.remote_tip(BRANCH) is None
        assert server.state.changes == []
        # and the next run succeeds from scratch
        assert invoke(policy_repo.work, "pr", env=github_env(server))[0] == 0
        assert len(server.state.changes) == 1


def test_422_when_updating_restores_the_previous_tip(policy_repo: PolicyRepo) -> None:
    repo = policy_repo
    with StandInForge.github(TOKEN, repo.remote) as server:
        assert invoke(repo.work, "pr", env=github_env(server))[0] == 0
        tip = repo.remote_tip(BRANCH)
        repo.edit_team("beta", "guaranteed: 16", "guaranteed: 8")
        repo.commit_all("beta: fewer")
        repo.push_main()
        server.state.fail_once[("PATCH", r"/repos/acme/gpu-policy/pulls/\d+")] = 422
        code, _, err = invoke(repo.work, "pr", env=github_env(server))
        assert code == 3 and "reset to" in err
        assert repo.remote_tip(BRANCH) == tip


def test_network_down_exit_3_and_nothing_pushed(policy_repo: PolicyRepo) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": "acme/gpu-policy", "GITHUB_API_URL": f"http://127.0.0.1:{port}"}
    code, out, err = invoke(policy_repo.work, "pr", env=env, subprocess_run=True)
    assert code == 3 and "KP807" in err and "Traceback" not in err
    assert policy_repo.remote_tip(BRANCH) is None
    assert_no_secret(policy_repo, out, err)


def test_gitlab_merge_request_is_opened_then_updated(policy_repo: PolicyRepo) -> None:
    repo = policy_repo
    with StandInForge.gitlab(TOKEN, repo.remote) as server:
        env = {"GITLAB_TOKEN": TOKEN, "CI_PROJECT_ID": "42", "CI_API_V4_URL": server.url}
        code, out, err = invoke(repo.work, "pr", env=env)
        assert code == 0, err
        assert "opened merge request !1" in out
        assert server.state.changes[0]["source_branch"] == BRANCH
        assert server.state.changes[0]["target_branch"] == "main"
        assert server.state.changes[0]["description"].startswith("<!-- kueue-policy:pr scope=all -->")
        repo.edit_team("beta", "guaranteed: 16", "guaranteed: 8")
        repo.commit_all("beta: fewer")
        repo.push_main()
        code, out, err = invoke(repo.work, "pr", env=env)
        assert code == 0, err
        assert "updated merge request !1" in out
        assert len(server.state.changes) == 1 and len(server.state.comments) == 1
        assert [r.method for r in server.state.writes] == ["POST", "POST", "PUT", "PUT"]
        assert server.state.violations == []
        assert_no_secret(repo, out, err)


def test_policy_that_does_not_compile_is_reported_and_nothing_happens(policy_repo: PolicyRepo) -> None:
    repo = policy_repo
    repo.edit_team("beta", "cohort: vision", "cohort: no-such-cohort")
    repo.commit_all("broken")
    with StandInForge.github(TOKEN, repo.remote) as server:
        code, out, err = invoke(repo.work, "pr", env=github_env(server), subprocess_run=True)
        assert code == 1
        assert "policies/teams/beta.yaml:" in err and "KP304" in err
        assert server.state.requests == []
    assert repo.remote_tip(BRANCH) is None


def test_dry_run_changes_nothing(policy_repo: PolicyRepo) -> None:
    with StandInForge.github(TOKEN, policy_repo.remote) as server:
        code, out, err = invoke(policy_repo.work, "pr", "policies", "--dry-run", env=github_env(server))
        assert code == 0, err
        assert "dry run: would push" in out and "<!-- kueue-policy:pr scope=all -->" in out
        assert server.state.requests == []
    assert policy_repo.remote_tip(BRANCH) is None


def test_up_to_date_out_means_no_push_and_no_api_call(policy_repo: PolicyRepo) -> None:
    repo = policy_repo
    code, _, err = invoke(repo.work, "compile", "policies", "--out", "out")
    assert code == 0, err
    repo.commit_all("out: compiled by hand")
    repo.push_main()
    with StandInForge.github(TOKEN, repo.remote) as server:
        code, out, err = invoke(repo.work, "pr", env=github_env(server))
        assert code == 0, err
        assert "up to date" in out
        assert server.state.requests == []
        assert repo.remote_tip(BRANCH) is None
        # with out/ on main, the PR text shows exactly the change: beta's guarantee 16 -> 8
        repo.edit_team("beta", "guaranteed: 16", "guaranteed: 8")
        repo.commit_all("beta: fewer")
        repo.push_main()
        code, out, err = invoke(repo.work, "pr", env=github_env(server))
        assert code == 0, err
        body = server.state.changes[0]["body"]
        assert "**Plan:** 0 team(s) to add, 1 to change, 0 to remove" in body
        assert "16 → **8**" in body and "team <b>beta</b>" in body and "team <b>alpha</b>" not in body


def test_cluster_scope_uses_its_own_branch(policy_repo: PolicyRepo) -> None:
    with StandInForge.github(TOKEN, policy_repo.remote) as server:
        code, out, err = invoke(policy_repo.work, "pr", "--cluster", "gpu-east", env=github_env(server))
        assert code == 0, err
        assert policy_repo.remote_tip("kueue-policy/gpu-east") is not None
        assert server.state.changes[0]["title"].startswith("kueue-policy: update gpu-east")
        code, _, err = invoke(policy_repo.work, "pr", "--cluster", "nope", env=github_env(server))
        assert code == 2 and "no such cluster" in err


def test_shallow_ci_checkout_updates_without_false_alarms(policy_repo: PolicyRepo, tmp_path: Path) -> None:
    """CI checks out one commit deep by default; pr must still tell its own branch from a person's."""
    repo = policy_repo
    with StandInForge.github(TOKEN, repo.remote) as server:
        assert invoke(repo.work, "pr", env=github_env(server))[0] == 0
        for guarantee in ("8", "12"):
            repo.edit_team("beta", "guaranteed: 16" if guarantee == "8" else "guaranteed: 8",
                           f"guaranteed: {guarantee}")
            repo.commit_all(f"beta: {guarantee}")
            repo.push_main()
            ci = tmp_path / f"ci-{guarantee}"
            subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo.remote}", str(ci)], check=True)
            code, out, err = invoke(ci, "pr", env=github_env(server))
            assert code == 0, err
            assert "updated pull request #1" in out
            assert git(repo.remote, "rev-parse", f"{repo.remote_tip(BRANCH)}^") == repo.remote_tip("main")
        assert len(server.state.changes) == 1 and server.state.violations == []


def test_push_with_token_sends_the_token_to_git_only_in_memory(policy_repo: PolicyRepo) -> None:
    """--push-with-token: git's HTTPS requests carry the forge token; it is never stored or shown."""
    import base64
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    seen: list[str] = []

    class GitHttp(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # git smart HTTP starts with GET /info/refs
            seen.append(self.headers.get("Authorization", ""))
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), GitHttp)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/acme/gpu-policy.git"
        git(policy_repo.work, "remote", "add", "forge", url)
        with StandInForge.github(TOKEN, policy_repo.remote) as forge:
            code, out, err = invoke(policy_repo.work, "pr", "--remote", "forge", "--push-with-token",
                                    env=github_env(forge))
            assert forge.state.writes == []
    finally:
        server.shutdown()
        server.server_close()
    assert code == 3 and "KP809" in err
    assert seen and seen[0] == "Basic " + base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert_no_secret(policy_repo, out, err)
    assert base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode() not in out + err


def test_never_admissible_workload_stops_pr_unless_allowed(policy_repo: PolicyRepo) -> None:
    repo = policy_repo
    repo.edit_team("beta", "    - {name: notebook,", "    - {name: giant, replicas: 40, gpus: 8}\n    - {name: notebook,")
    repo.commit_all("beta: a job that can never run")
    with StandInForge.github(TOKEN, repo.remote) as server:
        code, _, err = invoke(repo.work, "pr", env=github_env(server))
        assert code == 1 and "KP601" in err and "giant" in err
        assert server.state.requests == [] and repo.remote_tip(BRANCH) is None
        code, _, err = invoke(repo.work, "pr", "--allow-inadmissible", env=github_env(server))
        assert code == 0, err
        assert "| `gpu-east` | beta | `giant` | never |" in server.state.changes[0]["body"]
