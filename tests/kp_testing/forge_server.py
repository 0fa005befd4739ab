"""A local stand-in for the GitHub REST v3 and GitLab v4 endpoints `kueue-policy pr` uses.

It is stateful (pull/merge requests and comments live in memory, so "run twice -> one PR, one
edited comment" can be checked) and strict: every request is checked against the request shapes
as GitHub and GitLab document them (docs.github.com/rest/pulls, /rest/issues/comments,
/rest/repos; docs.gitlab.com/api/merge_requests, /api/notes, /api/projects), not against what the
client happens to send. A request that does not match is answered 400 and recorded in
`violations`, which every test asserts is empty.

Documented facts encoded here:
- GitHub: `Authorization: Bearer <token>` (or `token <token>`); `Accept:
  application/vnd.github+json` recommended; `X-GitHub-Api-Version: 2022-11-28` when given; a
  `User-Agent` header is required (requests without it are rejected); bodies are JSON.
  POST /pulls: `head` and `base` required, `title` required unless `issue`; known fields only.
  A second open PR for the same head answers 422 "A pull request already exists for o:branch.";
  a head branch that does not exist answers 422. PATCH /pulls/{n}: title, body, state, base,
  maintainer_can_modify. Issue comments: POST/PATCH with a required `body`.
- GitLab: `PRIVATE-TOKEN: <token>` (or `Authorization: Bearer <token>`); `:id` is the numeric
  ID or the URL-encoded path. POST /merge_requests: `source_branch`, `target_branch`, `title`
  required; a second open MR for the same source branch answers 409. PUT /merge_requests/:iid
  and notes: documented attributes only; notes need `body`.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import git

GITHUB_API_VERSIONS = {"2022-11-28", "2026-03-10"}
GITHUB_MEDIA_TYPES = {"application/vnd.github+json", "application/vnd.github.v3+json", "application/json"}

GITHUB_PULL_CREATE = {"title": str, "head": str, "head_repo": str, "base": str, "body": str,
                      "maintainer_can_modify": bool, "draft": bool, "issue": int}
GITHUB_PULL_UPDATE = {"title": str, "body": str, "state": str, "base": str, "maintainer_can_modify": bool}
GITHUB_PULL_LIST_QUERY = {"state", "head", "base", "sort", "direction", "per_page", "page"}
GITHUB_COMMENT_LIST_QUERY = {"since", "per_page", "page"}
GITHUB_COMMENT_BODY = {"body": str}

GITLAB_MR_CREATE = {"source_branch": str, "target_branch": str, "title": str, "description": str,
                    "assignee_id": int, "assignee_ids": list, "reviewer_ids": list, "labels": str,
                    "milestone_id": int, "remove_source_branch": bool, "squash": bool,
                    "allow_collaboration": bool, "target_project_id": int}
GITLAB_MR_UPDATE = {"title": str, "description": str, "target_branch": str, "state_event": str,
                    "labels": str, "add_labels": str, "remove_labels": str, "assignee_id": int,
                    "remove_source_branch": bool, "squash": bool, "discussion_locked": bool,
                    "milestone_id": int, "allow_collaboration": bool}
GITLAB_MR_LIST_QUERY = {"state", "source_branch", "target_branch", "order_by", "sort", "per_page",
                        "page", "scope", "labels", "author_id", "view", "search"}
GITLAB_NOTE_CREATE = {"body": str, "internal": bool, "created_at": str, "merge_request_diff_head_sha": str}
GITLAB_NOTE_UPDATE = {"body": str}
GITLAB_NOTES_QUERY = {"sort", "order_by", "per_page", "page"}


class Reject(Exception):
    def __init__(self, status: int, message: str, violation: bool = True):
        super().__init__(message)
        self.status = status
        self.message = message
        self.violation = violation


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class ForgeState:
    """What the forge holds. Shared by both flavours; `changes` are PRs (GitHub) or MRs (GitLab)."""

    token: str
    bare_repo: Path
    changes: list[dict] = field(default_factory=list)
    comments: list[dict] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    # (method, path regex) -> status to answer instead of handling, consumed once.
    fail_once: dict[tuple[str, str], int] = field(default_factory=dict)
    next_id: int = 1000

    @property
    def writes(self) -> list[Recorded]:
        return [r for r in self.requests if r.method in ("POST", "PATCH", "PUT", "DELETE")]

    def open_changes(self) -> list[dict]:
        return [c for c in self.changes if c["state"] in ("open", "opened")]


def _check_fields(body: Any, schema: dict[str, type], required: set[str], what: str) -> dict:
    if not isinstance(body, dict):
        raise Reject(400, f"{what}: body must be a JSON object")
    unknown = set(body) - set(schema)
    if unknown:
        raise Reject(400, f"{what}: undocumented field(s) {sorted(unknown)}")
    missing = required - set(body)
    if missing:
        raise Reject(400, f"{what}: missing required field(s) {sorted(missing)}")
    for key, value in body.items():
        expected = schema[key]
        if expected is int and isinstance(value, bool) or not isinstance(value, expected):
            raise Reject(400, f"{what}: field {key!r} must be {expected.__name__}, got {type(value).__name__}")
    return body


def _check_query(query: dict[str, str], allowed: set[str], what: str) -> None:
    unknown = set(query) - allowed
    if unknown:
        raise Reject(400, f"{what}: undocumented query parameter(s) {sorted(unknown)}")
    for key in ("per_page", "page"):
        if key in query and not query[key].isdigit():
            raise Reject(400, f"{what}: {key} must be an integer")


def _branch_exists(state: ForgeState, branch: str) -> bool:
    repo = git.Repo(state.bare_repo)
    return any(ref.path == f"refs/heads/{branch}" for ref in repo.references)


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass

    def _handle(self) -> None:
        state = self.server.state
        parsed = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = None
        headers = {k.lower(): v for k, v in self.headers.items()}  # HTTP header names are case-insensitive
        try:
            if raw:
                content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
                if content_type != "application/json":
                    raise Reject(400, f"body sent with Content-Type {content_type!r}, not application/json")
                try:
                    body = json.loads(raw)
                except ValueError:
                    raise Reject(400, "body is not valid JSON") from None
            elif self.command in ("POST", "PATCH", "PUT"):
                raise Reject(400, f"{self.command} without a JSON body")
            state.requests.append(Recorded(self.command, parsed.path, query, headers, body))
            for (method, pattern), status in list(state.fail_once.items()):
                if method == self.command and re.fullmatch(pattern, parsed.path):
                    del state.fail_once[(method, pattern)]
                    raise Reject(status, f"injected {status}", violation=False)
            status, payload = self.server.route(state, self.command, parsed.path, query, body, self.headers)
        except Reject as reject:
            if reject.violation:
                state.violations.append(f"{self.command} {parsed.path}: {reject.message}")
            status, payload = reject.status, {"message": reject.message}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: ForgeState, route: Callable):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state
        self.route = route


# --- GitHub ------------------------------------------------------------------------------------

def github_route(owner: str, repo: str) -> Callable:
    prefix = f"/repos/{owner}/{repo}"

    def authenticate(state: ForgeState, headers: Any) -> None:
        if not headers.get("User-Agent"):
            raise Reject(403, "Request forbidden by administrative rules. Please make sure your "
                              "request has a User-Agent header")
        accept = headers.get("Accept", "")
        if accept not in GITHUB_MEDIA_TYPES:
            raise Reject(415, f"Accept {accept!r} is not a GitHub media type")
        version = headers.get("X-GitHub-Api-Version")
        if version is not None and version not in GITHUB_API_VERSIONS:
            raise Reject(400, f"X-GitHub-Api-Version {version!r} is not supported")
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        if scheme not in ("Bearer", "token") or not token:
            raise Reject(401, "Requires authentication", violation=False)
        if token != state.token:
            raise Reject(401, "Bad credentials", violation=False)

    def route(state: ForgeState, method: str, path: str, query: dict, body: Any, headers: Any):
        authenticate(state, headers)
        if path == prefix and method == "GET":
            return 200, {"id": 1, "full_name": f"{owner}/{repo}", "default_branch": "main"}
        if not path.startswith(prefix + "/"):
            raise Reject(404, "Not Found", violation=False)
        rest = path[len(prefix):]
        if rest == "/pulls" and method == "GET":
            _check_query(query, GITHUB_PULL_LIST_QUERY, "GET pulls")
            if query.get("state", "open") not in ("open", "closed", "all"):
                raise Reject(422, "state must be open, closed or all")
            head = query.get("head")
            if head is not None and ":" not in head:
                raise Reject(422, "head must be user:ref-name or organization:ref-name")
            found = [c for c in state.changes
                     if (query.get("state", "open") == "all" or c["state"] == query.get("state", "open"))
                     and (head is None or f"{owner}:{c['head']['ref']}" == head)
                     and ("base" not in query or c["base"]["ref"] == query["base"])]
            return 200, found
        if rest == "/pulls" and method == "POST":
            _check_fields(body, GITHUB_PULL_CREATE, {"head", "base"}, "POST pulls")
            if "title" not in body and "issue" not in body:
                raise Reject(422, "title is required unless issue is given")
            branch = body["head"].split(":", 1)[-1]
            if not _branch_exists(state, branch):
                raise Reject(422, "Validation Failed: head invalid", violation=False)
            if not _branch_exists(state, body["base"]):
                raise Reject(422, "Validation Failed: base invalid", violation=False)
            if any(c["head"]["ref"] == branch and c["state"] == "open" for c in state.changes):
                raise Reject(422, f"A pull request already exists for {owner}:{branch}.")
            number = len(state.changes) + 1
            pull = {"number": number, "state": "open", "title": body.get("title", ""),
                    "body": body.get("body"), "head": {"ref": branch}, "base": {"ref": body["base"]},
                    "draft": body.get("draft", False),
                    "html_url": f"https://github.example/{owner}/{repo}/pull/{number}"}
            state.changes.append(pull)
            return 201, pull
        match = re.fullmatch(r"/pulls/(\d+)", rest)
        if match and method == "PATCH":
            _check_fields(body, GITHUB_PULL_UPDATE, set(), "PATCH pull")
            if not body:
                raise Reject(422, "PATCH pull with nothing to change")
            if "state" in body and body["state"] not in ("open", "closed"):
                raise Reject(422, "state must be open or closed")
            pull = _find(state.changes, "number", int(match.group(1)))
            for key in ("title", "body", "state"):
                if key in body:
                    pull[key] = body[key]
            return 200, pull
        match = re.fullmatch(r"/issues/(\d+)/comments", rest)
        if match and method == "GET":
            _check_query(query, GITHUB_COMMENT_LIST_QUERY, "GET issue comments")
            _find(state.changes, "number", int(match.group(1)))
            found = [c for c in state.comments if c["issue"] == int(match.group(1))]
            return 200, _page(found, query)
        if match and method == "POST":
            _check_fields(body, GITHUB_COMMENT_BODY, {"body"}, "POST issue comment")
            _find(state.changes, "number", int(match.group(1)))
            state.next_id += 1
            comment = {"id": state.next_id, "issue": int(match.group(1)), "body": body["body"],
                       "user": {"login": "github-actions[bot]"}}
            state.comments.append(comment)
            return 201, comment
        match = re.fullmatch(r"/issues/comments/(\d+)", rest)
        if match and method == "PATCH":
            _check_fields(body, GITHUB_COMMENT_BODY, {"body"}, "PATCH issue comment")
            comment = _find(state.comments, "id", int(match.group(1)))
            comment["body"] = body["body"]
            return 200, comment
        raise Reject(404, f"no documented GitHub endpoint {method} {path}")

    return route


# --- GitLab ------------------------------------------------------------------------------------

def gitlab_route(project_id: str, project_path: str) -> Callable:
    accepted_ids = {project_id, urllib.parse.quote(project_path, safe="")}

    def authenticate(state: ForgeState, headers: Any) -> None:
        token = headers.get("PRIVATE-TOKEN")
        if token is None:
            scheme, _, bearer = (headers.get("Authorization") or "").partition(" ")
            token = bearer if scheme == "Bearer" else None
        if token != state.token:
            raise Reject(401, "401 Unauthorized", violation=False)

    def route(state: ForgeState, method: str, path: str, query: dict, body: Any, headers: Any):
        authenticate(state, headers)
        raw_path = path
        match = re.fullmatch(r"/api/v4/projects/([^/]+)(/.*)?", raw_path)
        if not match:
            raise Reject(404, f"no documented GitLab endpoint {method} {path}")
        if match.group(1) not in accepted_ids:
            raise Reject(404, "404 Project Not Found", violation=False)
        rest = match.group(2) or ""
        if rest == "" and method == "GET":
            return 200, {"id": int(project_id), "path_with_namespace": project_path, "default_branch": "main"}
        if rest == "/merge_requests" and method == "GET":
            _check_query(query, GITLAB_MR_LIST_QUERY, "GET merge_requests")
            wanted = query.get("state", "all")
            if wanted not in ("opened", "closed", "locked", "merged", "all"):
                raise Reject(400, "state does not have a valid value")
            found = [c for c in state.changes
                     if (wanted == "all" or c["state"] == wanted)
                     and c["source_branch"] == query.get("source_branch", c["source_branch"])
                     and c["target_branch"] == query.get("target_branch", c["target_branch"])]
            return 200, found
        if rest == "/merge_requests" and method == "POST":
            _check_fields(body, GITLAB_MR_CREATE, {"source_branch", "target_branch", "title"},
                          "POST merge_requests")
            if not _branch_exists(state, body["source_branch"]):
                raise Reject(400, "Source branch does not exist", violation=False)
            if any(c["source_branch"] == body["source_branch"] and c["state"] == "opened" for c in state.changes):
                raise Reject(409, "Another open merge request already exists for this source branch")
            iid = len(state.changes) + 1
            state.next_id += 1
            mr = {"id": state.next_id, "iid": iid, "state": "opened", "title": body["title"],
                  "description": body.get("description"), "source_branch": body["source_branch"],
                  "target_branch": body["target_branch"],
                  "web_url": f"https://gitlab.example/{project_path}/-/merge_requests/{iid}"}
            state.changes.append(mr)
            return 201, mr
        match = re.fullmatch(r"/merge_requests/(\d+)", rest)
        if match and method == "PUT":
            _check_fields(body, GITLAB_MR_UPDATE, set(), "PUT merge_request")
            if not body:
                raise Reject(400, "at least one attribute must be given")
            mr = _find(state.changes, "iid", int(match.group(1)))
            mr.update({k: body[k] for k in ("title", "description") if k in body})
            return 200, mr
        match = re.fullmatch(r"/merge_requests/(\d+)/notes", rest)
        if match and method == "GET":
            _check_query(query, GITLAB_NOTES_QUERY, "GET notes")
            _find(state.changes, "iid", int(match.group(1)))
            return 200, _page([n for n in state.comments if n["iid"] == int(match.group(1))], query)
        if match and method == "POST":
            _check_fields(body, GITLAB_NOTE_CREATE, {"body"}, "POST note")
            _find(state.changes, "iid", int(match.group(1)))
            state.next_id += 1
            note = {"id": state.next_id, "iid": int(match.group(1)), "body": body["body"], "system": False}
            state.comments.append(note)
            return 201, note
        match = re.fullmatch(r"/merge_requests/(\d+)/notes/(\d+)", rest)
        if match and method == "PUT":
            _check_fields(body, GITLAB_NOTE_UPDATE, {"body"}, "PUT note")
            note = _find(state.comments, "id", int(match.group(2)))
            note["body"] = body["body"]
            return 200, note
        raise Reject(404, f"no documented GitLab endpoint {method} {path}")

    return route


def _find(items: list[dict], key: str, value: int) -> dict:
    for item in items:
        if item[key] == value:
            return item
    raise Reject(404, "Not Found", violation=False)


def _page(items: list[dict], query: dict) -> list[dict]:
    per_page = int(query.get("per_page", 30))
    page = int(query.get("page", 1))
    return items[(page - 1) * per_page: page * per_page]


class StandInForge:
    """Start with `with StandInForge.github(...) as forge:`; `forge.url` is the API base URL."""

    def __init__(self, state: ForgeState, route: Callable, api_prefix: str):
        self.state = state
        self._server = _Server(state, route)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}{api_prefix}"

    @classmethod
    def github(cls, token: str, bare_repo: Path, owner: str = "acme", repo: str = "gpu-policy") -> "StandInForge":
        return cls(ForgeState(token, bare_repo), github_route(owner, repo), "")

    @classmethod
    def gitlab(cls, token: str, bare_repo: Path, project_id: str = "42",
               project_path: str = "acme/gpu-policy") -> "StandInForge":
        return cls(ForgeState(token, bare_repo), gitlab_route(project_id, project_path), "/api/v4")

    def __enter__(self) -> "StandInForge":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
