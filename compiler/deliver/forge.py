"""Forge adapters: open or update one pull (merge) request and one sticky comment.

Only the handful of documented REST endpoints `pr` needs, spoken with the standard library
(`urllib.request`): about eight calls do not justify a client dependency, and the stand-in
server in the tests checks every request against the published request shapes.

Tokens live only in the `Authorization` / `PRIVATE-TOKEN` header of each request; they are never
part of a message, a URL, a log line or anything written to disk. Every HTTP or network failure
becomes an `EnvironmentFailure` (exit 3) with a code that says what to fix.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from compiler import __version__
from compiler.core import codes
from compiler.core.git_ops import GitAuth, basic_auth
from compiler.core.errors import EnvironmentFailure

USER_AGENT = f"kueue-policy/{__version__}"
REQUEST_TIMEOUT_SECONDS = 30
GITHUB_API_VERSION = "2022-11-28"
PAGE_SIZE = 100
# GitHub limits an issue comment or PR body to 65,536 characters; GitLab's limit is higher.
MAX_BODY_CHARS = 65_000


@dataclass(frozen=True)
class ChangeRequest:
    """A pull request (GitHub) or merge request (GitLab) as `pr` needs to know it."""

    number: int          # GitHub `number`, GitLab `iid`
    url: str
    title: str
    body: str


class ForgeClient(Protocol):
    """What `kueue-policy pr` asks of a forge. Every method raises EnvironmentFailure on failure."""

    name: str

    def describe(self) -> str:
        """Where the change goes, for messages ("GitHub acme/policy")."""

    def find_open_change(self, branch: str, base: str) -> ChangeRequest | None:
        """The open PR/MR from `branch` into `base`. Also the pre-check `pr` makes before it
        pushes: a bad token, an unknown repository or a dead network fail here."""

    def open_change(self, branch: str, base: str, title: str, body: str) -> ChangeRequest: ...

    def update_change(self, change: ChangeRequest, title: str, body: str) -> ChangeRequest: ...

    def upsert_comment(self, change: ChangeRequest, marker: str, body: str) -> str:
        """Edit the comment containing `marker`, or create it. Returns "created"/"updated"/"unchanged"."""

    def git_auth(self) -> GitAuth:
        """Credentials for `git push` over HTTPS with the same token (for --push-with-token)."""


class _HttpForge:
    """JSON over HTTPS with one error policy for both forges."""

    name = "forge"

    def __init__(self, api_url: str, token: str):
        self._api_url = api_url.rstrip("/")
        self._token = token

    def __repr__(self) -> str:  # never show the token, even in a debugger or a traceback
        return f"{type(self).__name__}(api_url={self._api_url!r})"

    # Subclasses name their auth and media-type headers.
    def _headers(self, has_body: bool) -> dict[str, str]:
        raise NotImplementedError

    def _request(self, method: str, path: str, query: Mapping[str, Any] | None = None,
                 body: Mapping[str, Any] | None = None) -> Any:
        url = self._api_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(url, data=data, method=method,
                                         headers=self._headers(data is not None))
        where = f"{method} {self._api_url}{path}"
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECONDS) as response:
                payload = response.read()
        except urllib.error.HTTPError as error:
            raise self._http_failure(where, error) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise EnvironmentFailure(
                code=codes.FORGE_UNREACHABLE, message=f"{self.name} API unreachable ({where}): {reason}"
            ) from None
        if not payload:
            return None
        try:
            return json.loads(payload)
        except ValueError:
            raise EnvironmentFailure(
                code=codes.FORGE_UNREACHABLE, message=f"{self.name} API answered {where} with something "
                "that is not JSON (is the API URL right?)") from None

    def _http_failure(self, where: str, error: urllib.error.HTTPError) -> EnvironmentFailure:
        detail = _error_detail(error)
        status = error.code
        if status in (401, 403):
            code, hint = codes.FORGE_AUTH, self._auth_hint()
        elif status == 404:
            code, hint = codes.FORGE_NOT_FOUND, self._not_found_hint()
        elif status >= 500:
            code, hint = codes.FORGE_UNREACHABLE, "the forge failed; retry later"
        else:
            code, hint = codes.FORGE_REJECTED, "the forge refused the request"
        return EnvironmentFailure(
            code=code, message=f"{self.name} answered {status} to {where}: {hint}"
            + (f" ({detail})" if detail else ""))

    def _auth_hint(self) -> str:
        return "the token was refused"

    def _not_found_hint(self) -> str:
        return "not found"

    def _all_pages(self, path: str, query: Mapping[str, Any]) -> list[dict]:
        items: list[dict] = []
        page = 1
        while True:
            batch = self._request("GET", path, {**query, "per_page": PAGE_SIZE, "page": page})
            if not isinstance(batch, list):
                break
            items.extend(batch)
            if len(batch) < PAGE_SIZE:
                break
            page += 1
        return items


def _error_detail(error: urllib.error.HTTPError) -> str:
    """The forge's own one-line reason (`message` on both forges), never request data."""
    try:
        payload = json.loads(error.read() or b"{}")
    except (ValueError, OSError):
        return ""
    if not isinstance(payload, dict):
        return ""
    message = payload.get("message") or payload.get("error") or ""
    if isinstance(message, (list, dict)):
        message = json.dumps(message, sort_keys=True)
    errors = payload.get("errors")
    if isinstance(errors, list) and errors:
        parts = [e.get("message") or e.get("code", "") if isinstance(e, dict) else str(e) for e in errors]
        message = f"{message}: {'; '.join(p for p in parts if p)}" if message else "; ".join(parts)
    return str(message)[:300]


def _truncate(body: str) -> str:
    if len(body) <= MAX_BODY_CHARS:
        return body
    note = "\n\n… (truncated: the full plan is in the job log, `kueue-policy diff`)\n"
    return body[: MAX_BODY_CHARS - len(note)] + note


class GitHubForge(_HttpForge):
    """GitHub REST v3 (github.com or GHES), as documented at docs.github.com/rest."""

    name = "GitHub"

    def __init__(self, repository: str, token: str, api_url: str = "https://api.github.com"):
        super().__init__(api_url, token)
        if repository.count("/") != 1 or not all(repository.split("/")):
            raise EnvironmentFailure(
                code=codes.FORGE_NOT_CONFIGURED, message=f"GITHUB_REPOSITORY must be owner/name, "
                f"got {repository!r}")
        self.owner, self.repo = repository.split("/")
        self._repo_path = f"/repos/{_quote(self.owner)}/{_quote(self.repo)}"

    def describe(self) -> str:
        return f"GitHub {self.owner}/{self.repo}"

    def _headers(self, has_body: bool) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {self._token}",
            "X-GitHub-Api-Version": GITHUB_API_VERSION,
            "User-Agent": USER_AGENT,
        }
        if has_body:
            headers["Content-Type"] = "application/json"
        return headers

    def git_auth(self) -> GitAuth:
        return basic_auth("x-access-token", self._token)

    def _auth_hint(self) -> str:
        return ("GITHUB_TOKEN was refused or lacks permission (the workflow needs "
                "`permissions: contents: write, pull-requests: write`)")

    def _not_found_hint(self) -> str:
        return f"no repository {self.owner}/{self.repo} visible to this token (check GITHUB_REPOSITORY)"

    def find_open_change(self, branch: str, base: str) -> ChangeRequest | None:
        pulls = self._request("GET", f"{self._repo_path}/pulls",
                              {"state": "open", "head": f"{self.owner}:{branch}", "base": base})
        for pull in pulls or []:
            # The API already filtered by head; the check guards against a server that ignored it.
            if (pull.get("head") or {}).get("ref", branch) == branch:
                return _github_change(pull)
        return None

    def open_change(self, branch: str, base: str, title: str, body: str) -> ChangeRequest:
        pull = self._request("POST", f"{self._repo_path}/pulls",
                             body={"title": title, "head": branch, "base": base, "body": _truncate(body)})
        return _github_change(pull)

    def update_change(self, change: ChangeRequest, title: str, body: str) -> ChangeRequest:
        pull = self._request("PATCH", f"{self._repo_path}/pulls/{change.number}",
                             body={"title": title, "body": _truncate(body)})
        return _github_change(pull)

    def upsert_comment(self, change: ChangeRequest, marker: str, body: str) -> str:
        body = _truncate(body)
        # PR conversation comments are issue comments in GitHub's API.
        comments = self._all_pages(f"{self._repo_path}/issues/{change.number}/comments", {})
        for comment in comments:
            if marker in (comment.get("body") or ""):
                if comment.get("body") == body:
                    return "unchanged"
                self._request("PATCH", f"{self._repo_path}/issues/comments/{comment['id']}",
                              body={"body": body})
                return "updated"
        self._request("POST", f"{self._repo_path}/issues/{change.number}/comments", body={"body": body})
        return "created"


def _github_change(pull: dict) -> ChangeRequest:
    return ChangeRequest(number=int(pull["number"]), url=pull.get("html_url", ""),
                         title=pull.get("title", ""), body=pull.get("body") or "")


class GitLabForge(_HttpForge):
    """GitLab REST v4 merge requests and notes, as documented at docs.gitlab.com/api."""

    name = "GitLab"

    def __init__(self, project_id: str, token: str, api_url: str = "https://gitlab.com/api/v4"):
        super().__init__(api_url, token)
        self.project_id = project_id
        # A project is addressed by numeric ID or by its URL-encoded full path ("group%2Fproject").
        self._project_path = f"/projects/{_quote(project_id)}"

    def describe(self) -> str:
        return f"GitLab project {self.project_id}"

    def _headers(self, has_body: bool) -> dict[str, str]:
        headers = {"PRIVATE-TOKEN": self._token, "Accept": "application/json", "User-Agent": USER_AGENT}
        if has_body:
            headers["Content-Type"] = "application/json"
        return headers

    def git_auth(self) -> GitAuth:
        return basic_auth("oauth2", self._token)

    def _auth_hint(self) -> str:
        return "GITLAB_TOKEN was refused or lacks the `api` scope (CI_JOB_TOKEN cannot open merge requests)"

    def _not_found_hint(self) -> str:
        return f"no project {self.project_id} visible to this token (check CI_PROJECT_ID)"

    def find_open_change(self, branch: str, base: str) -> ChangeRequest | None:
        requests = self._request("GET", f"{self._project_path}/merge_requests",
                                 {"state": "opened", "source_branch": branch, "target_branch": base})
        for merge_request in requests or []:
            if merge_request.get("source_branch", branch) == branch:
                return _gitlab_change(merge_request)
        return None

    def open_change(self, branch: str, base: str, title: str, body: str) -> ChangeRequest:
        merge_request = self._request("POST", f"{self._project_path}/merge_requests",
                                      body={"source_branch": branch, "target_branch": base,
                                            "title": title, "description": _truncate(body),
                                            "remove_source_branch": True})
        return _gitlab_change(merge_request)

    def update_change(self, change: ChangeRequest, title: str, body: str) -> ChangeRequest:
        merge_request = self._request("PUT", f"{self._project_path}/merge_requests/{change.number}",
                                      body={"title": title, "description": _truncate(body)})
        return _gitlab_change(merge_request)

    def upsert_comment(self, change: ChangeRequest, marker: str, body: str) -> str:
        body = _truncate(body)
        notes_path = f"{self._project_path}/merge_requests/{change.number}/notes"
        for note in self._all_pages(notes_path, {}):
            if not note.get("system") and marker in (note.get("body") or ""):
                if note.get("body") == body:
                    return "unchanged"
                self._request("PUT", f"{notes_path}/{note['id']}", body={"body": body})
                return "updated"
        self._request("POST", notes_path, body={"body": body})
        return "created"


def _gitlab_change(merge_request: dict) -> ChangeRequest:
    return ChangeRequest(number=int(merge_request["iid"]), url=merge_request.get("web_url", ""),
                         title=merge_request.get("title", ""),
                         body=merge_request.get("description") or "")


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def forge_from_environment(kind: str = "auto", environ: Mapping[str, str] | None = None) -> ForgeClient:
    """The forge CI runs on, from the variables GitHub Actions / GitLab CI set.

    `kind` is "github", "gitlab" or "auto" (GitLab when CI_API_V4_URL or GITLAB_TOKEN is set,
    otherwise GitHub)."""
    env = os.environ if environ is None else environ
    if kind == "auto":
        kind = "gitlab" if (env.get("GITLAB_TOKEN") or env.get("CI_API_V4_URL")) and not env.get(
            "GITHUB_REPOSITORY") else "github"
    if kind == "github":
        missing = [name for name in ("GITHUB_TOKEN", "GITHUB_REPOSITORY") if not env.get(name)]
        if missing:
            raise EnvironmentFailure(
                code=codes.FORGE_NOT_CONFIGURED, message=f"GitHub needs {' and '.join(missing)} in the "
                "environment (GitHub Actions sets GITHUB_REPOSITORY; pass secrets.GITHUB_TOKEN as "
                "GITHUB_TOKEN)")
        return GitHubForge(env["GITHUB_REPOSITORY"], env["GITHUB_TOKEN"],
                           env.get("GITHUB_API_URL") or "https://api.github.com")
    if kind == "gitlab":
        missing = [name for name in ("GITLAB_TOKEN", "CI_PROJECT_ID", "CI_API_V4_URL") if not env.get(name)]
        if missing:
            raise EnvironmentFailure(
                code=codes.FORGE_NOT_CONFIGURED, message=f"GitLab needs {' and '.join(missing)} in the "
                "environment (GitLab CI sets CI_PROJECT_ID and CI_API_V4_URL; store a project access "
                "token with the api scope as the masked variable GITLAB_TOKEN)")
        return GitLabForge(env["CI_PROJECT_ID"], env["GITLAB_TOKEN"], env["CI_API_V4_URL"])
    raise ValueError(f"unknown forge kind {kind!r}")
