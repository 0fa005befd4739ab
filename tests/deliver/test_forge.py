"""The forge adapters against the strict stand-in server (real sockets, real git branch checks)."""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

from compiler.deliver.forge import ChangeRequest, GitHubForge, GitLabForge, forge_from_environment
from compiler.core.errors import EnvironmentFailure
from kp_testing.forge_server import StandInForge

TOKEN = "ghp_s3cr3t-token-value-0123456789"


@pytest.fixture()
def bare(tmp_path: Path) -> Path:
    """A bare remote with `main` and `kueue-policy/all`, so the forge can check branches exist."""
    work = tmp_path / "seed"
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    (work / "README.md").write_text("seed\n")
    env_id = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "-C", str(work), *env_id, "add", "."], check=True)
    subprocess.run(["git", "-C", str(work), *env_id, "commit", "-qm", "seed"], check=True)
    subprocess.run(["git", "-C", str(work), "branch", "kueue-policy/all"], check=True)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(remote)], check=True)
    return remote


def test_github_open_find_update_and_sticky_comment(bare: Path) -> None:
    with StandInForge.github(TOKEN, bare) as server:
        forge = GitHubForge("acme/gpu-policy", TOKEN, server.url)
        assert forge.find_open_change("kueue-policy/all", "main") is None
        opened = forge.open_change("kueue-policy/all", "main", "title", "body")
        assert opened.number == 1
        again = forge.find_open_change("kueue-policy/all", "main")
        assert again == opened
        updated = forge.update_change(opened, "title 2", "body 2")
        assert (updated.title, updated.body) == ("title 2", "body 2")
        assert forge.upsert_comment(opened, "<!-- m -->", "<!-- m -->\none") == "created"
        assert forge.upsert_comment(opened, "<!-- m -->", "<!-- m -->\none") == "unchanged"
        assert forge.upsert_comment(opened, "<!-- m -->", "<!-- m -->\ntwo") == "updated"
        state = server.state
        assert state.violations == []
        assert len(state.comments) == 1 and state.comments[0]["body"].endswith("two")
        methods = [(r.method, r.path) for r in state.writes]
        assert methods == [
            ("POST", "/repos/acme/gpu-policy/pulls"),
            ("PATCH", "/repos/acme/gpu-policy/pulls/1"),
            ("POST", "/repos/acme/gpu-policy/issues/1/comments"),
            ("PATCH", f"/repos/acme/gpu-policy/issues/comments/{state.comments[0]['id']}"),
        ]
        for request in state.requests:
            assert request.headers["authorization"] == f"Bearer {TOKEN}"
            assert request.headers["accept"] == "application/vnd.github+json"


def test_gitlab_open_find_update_and_sticky_note(bare: Path) -> None:
    with StandInForge.gitlab(TOKEN, bare) as server:
        forge = GitLabForge("acme/gpu-policy", TOKEN, server.url)   # path form, URL-encoded
        assert forge.find_open_change("kueue-policy/all", "main") is None
        opened = forge.open_change("kueue-policy/all", "main", "t", "d")
        assert opened.number == 1 and "merge_requests/1" in opened.url
        assert forge.find_open_change("kueue-policy/all", "main") == opened
        assert forge.update_change(opened, "t2", "d2").body == "d2"
        assert forge.upsert_comment(opened, "<!-- m -->", "<!-- m --> a") == "created"
        assert forge.upsert_comment(opened, "<!-- m -->", "<!-- m --> b") == "updated"
        assert server.state.violations == []
        assert [r.path for r in server.state.writes][0] == "/api/v4/projects/acme%2Fgpu-policy/merge_requests"
        assert all(r.headers["private-token"] == TOKEN for r in server.state.requests)


@pytest.mark.parametrize("status, code", [(401, "KP804"), (403, "KP804"), (404, "KP805"), (422, "KP806"),
                                          (502, "KP807")])
def test_http_failures_are_environment_failures_without_the_token(bare: Path, status: int, code: str) -> None:
    with StandInForge.github(TOKEN, bare) as server:
        server.state.fail_once[("POST", r"/repos/acme/gpu-policy/pulls")] = status
        forge = GitHubForge("acme/gpu-policy", TOKEN, server.url)
        with pytest.raises(EnvironmentFailure) as raised:
            forge.open_change("kueue-policy/all", "main", "t", "b")
    message = str(raised.value)
    assert code in message and str(status) in message
    assert TOKEN not in message and TOKEN not in repr(forge)
    assert raised.value.exit_code == 3


def test_wrong_token_is_refused_by_the_stand_in(bare: Path) -> None:
    with StandInForge.github(TOKEN, bare) as server:
        forge = GitHubForge("acme/gpu-policy", "wrong-token", server.url)
        with pytest.raises(EnvironmentFailure, match=r"KP804.*401.*GITHUB_TOKEN"):
            forge.find_open_change("kueue-policy/all", "main")


def test_unknown_repository_is_404(bare: Path) -> None:
    with StandInForge.github(TOKEN, bare) as server:
        with pytest.raises(EnvironmentFailure, match=r"KP805.*acme/nope"):
            GitHubForge("acme/nope", TOKEN, server.url).find_open_change("kueue-policy/all", "main")


def test_network_down_is_exit_3() -> None:
    with socket.socket() as probe:           # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    forge = GitLabForge("42", TOKEN, f"http://127.0.0.1:{port}/api/v4")
    with pytest.raises(EnvironmentFailure, match="KP807.*unreachable") as raised:
        forge.find_open_change("kueue-policy/all", "main")
    assert TOKEN not in str(raised.value)


def test_the_stand_in_rejects_undocumented_request_shapes(bare: Path) -> None:
    """The server must be able to fail a test: wrong fields, headers or media types are refused."""
    with StandInForge.github(TOKEN, bare) as server:
        def send(method: str, path: str, body: dict | None, headers: dict) -> int:
            data = json.dumps(body).encode() if body is not None else None
            request = urllib.request.Request(server.url + path, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(request) as response:
                    return response.status
            except urllib.error.HTTPError as error:
                return error.code

        good = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/vnd.github+json",
                "User-Agent": "t", "Content-Type": "application/json"}
        assert send("POST", "/repos/acme/gpu-policy/pulls",
                    {"title": "t", "head": "kueue-policy/all", "base": "main", "is_draft": True}, good) == 400
        assert send("POST", "/repos/acme/gpu-policy/pulls", {"title": "t", "base": "main"}, good) == 400
        assert send("GET", "/repos/acme/gpu-policy", None, {**good, "User-Agent": ""}) == 403
        assert send("GET", "/repos/acme/gpu-policy", None, {**good, "Accept": "text/html"}) == 415
        assert send("POST", "/repos/acme/gpu-policy/issues/comments/1", {"body": "x"}, good) == 404
        assert send("POST", "/repos/acme/gpu-policy/pulls",
                    {"title": "t", "head": "kueue-policy/all", "base": "main"},
                    {**good, "Content-Type": "application/x-www-form-urlencoded"}) == 400
        assert len(server.state.violations) == 6
    with StandInForge.gitlab(TOKEN, bare) as server:
        request = urllib.request.Request(
            server.url + "/projects/42/merge_requests", method="POST",
            data=json.dumps({"source_branch": "kueue-policy/all", "target_branch": "main",
                             "title": "t", "body": "wrong field"}).encode(),
            headers={"PRIVATE-TOKEN": TOKEN, "Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(request)
        assert raised.value.code == 400 and server.state.violations


def test_duplicate_pull_request_is_refused_like_github(bare: Path) -> None:
    with StandInForge.github(TOKEN, bare) as server:
        forge = GitHubForge("acme/gpu-policy", TOKEN, server.url)
        forge.open_change("kueue-policy/all", "main", "t", "b")
        with pytest.raises(EnvironmentFailure, match="422.*already exists"):
            forge.open_change("kueue-policy/all", "main", "t", "b")


def test_comment_pages_are_followed(bare: Path) -> None:
    with StandInForge.github(TOKEN, bare) as server:
        forge = GitHubForge("acme/gpu-policy", TOKEN, server.url)
        change = forge.open_change("kueue-policy/all", "main", "t", "b")
        for index in range(105):
            server.state.next_id += 1
            server.state.comments.append({"id": server.state.next_id, "issue": 1, "body": f"chatter {index}"})
        server.state.next_id += 1
        server.state.comments.append({"id": server.state.next_id, "issue": 1, "body": "<!-- m --> old"})
        assert forge.upsert_comment(change, "<!-- m -->", "<!-- m --> new") == "updated"
        assert len(server.state.comments) == 106


def test_forge_from_environment() -> None:
    github = forge_from_environment("auto", {"GITHUB_TOKEN": "x", "GITHUB_REPOSITORY": "a/b",
                                             "GITHUB_API_URL": "https://ghe.example/api/v3"})
    assert isinstance(github, GitHubForge) and "ghe.example/api/v3" in repr(github)
    gitlab = forge_from_environment("auto", {"GITLAB_TOKEN": "x", "CI_PROJECT_ID": "7",
                                             "CI_API_V4_URL": "https://gl.example/api/v4"})
    assert isinstance(gitlab, GitLabForge)
    with pytest.raises(EnvironmentFailure, match="KP808.*GITHUB_TOKEN"):
        forge_from_environment("github", {"GITHUB_REPOSITORY": "a/b"})
    with pytest.raises(EnvironmentFailure, match="KP808.*GITLAB_TOKEN"):
        forge_from_environment("gitlab", {"CI_PROJECT_ID": "7", "CI_API_V4_URL": "u"})
    with pytest.raises(EnvironmentFailure, match="owner/name"):
        forge_from_environment("github", {"GITHUB_TOKEN": "x", "GITHUB_REPOSITORY": "nope"})


def test_change_request_is_plain_data() -> None:
    assert ChangeRequest(1, "u", "t", "b").number == 1
