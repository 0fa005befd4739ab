"""A small HTTPS client for the sandbox's API server: readiness, reads and condition polling.

Objects are applied with kubectl (server-side apply, kustomize, discovery); waiting on them does
not need a kubectl process per poll. The client verifies the server against the sandbox's CA and
sends the admin token, as the kubeconfig `up` writes does.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

T = TypeVar("T")


class ApiError(Exception):
    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ApiClient:
    server: str
    token: str
    ca_file: Path

    def _context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def request(self, method: str, path: str, body: Any = None, *, timeout: float = 10.0,
                content_type: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self._context(), timeout=timeout) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")
            try:
                detail = json.loads(detail).get("message", detail)
            except (ValueError, AttributeError):
                pass
            raise ApiError(error.code, f"{method} {path}: {error.code} {detail}") from None
        except (urllib.error.URLError, OSError) as error:
            raise ApiError(None, f"{method} {path}: {error}") from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def ready(self) -> bool:
        try:
            return self.get("/readyz", timeout=2.0) == "ok"
        except ApiError:
            return False


def wait_for(what: str, probe: Callable[[], T | None], *, timeout: float, interval: float = 0.2,
             failed: Callable[[], str | None] = lambda: None) -> T:
    """Call `probe` until it returns something other than None; TimeoutError after `timeout`.

    `failed` is asked between tries: a message from it (a process exited) ends the wait at once."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result is not None:
            return result
        problem = failed()
        if problem:
            raise TimeoutError(f"{what}: {problem}")
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what}: not done after {timeout:.0f} s")
        time.sleep(interval)


def condition(obj: dict, kind: str) -> dict | None:
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item.get("type") == kind:
            return item
    return None
