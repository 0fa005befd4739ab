"""Files a policy names outside its own folder, read from the repository the folder lives in.

`spec.kueueConfig.base` may name the Configuration of the Kueue installation, which usually
lives beside the policy folder (`../kueue/controller_manager_config.yaml`), not in it. Such a
path is read from the same place the policy is read from (the disk, or a git revision) and only
inside the repository: a path that leaves it is refused, as are symbolic links that point out
of it, so a policy cannot make the compiler read (and emit) an arbitrary file of the machine.
Outside any git repository the boundary is the policy folder itself.

Display paths, as every message shows them, start with the policy folder's own name
(`policies/cluster.yaml`); a path outside the folder is shown relative to the folder's parent
(`kueue/config.yaml`).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Protocol


class Refused(Exception):
    """The path cannot be read: the message says where the file is and why."""


class RepositoryFiles(Protocol):
    def read(self, display_path: str) -> bytes:
        """The file's bytes; raises Refused."""


def git_top(start: Path) -> Path | None:
    """The work tree holding `start` (the nearest parent with a `.git`), or None."""
    for folder in [start, *start.parents]:
        if (folder / ".git").exists():
            return folder
    return None


@dataclass(frozen=True)
class DiskRepository:
    """A policy folder on disk: display paths resolve against its parent; the boundary is the
    git work tree it is in (else the folder itself)."""

    folder: Path

    def read(self, display_path: str) -> bytes:
        folder = self.folder.resolve()
        top = git_top(folder)
        boundary = top if top is not None else folder
        target = (folder.parent / display_path).resolve()     # symbolic links followed
        where = f"{display_path} (that is {target})"
        if target != boundary and boundary not in target.parents:
            if top is None:
                raise Refused(f"{where} is outside the policy folder {folder}, which is not in a git repository: "
                              "outside a repository the base must be a file of the policy folder")
            raise Refused(f"{where} is outside the repository {top}: the base must be a file of the "
                          "repository the policy lives in")
        if not target.is_file():
            raise Refused(f"{where} does not exist" if not target.exists() else f"{where} is not a file")
        return target.read_bytes()


@dataclass(frozen=True)
class RevisionRepository:
    """A policy folder read from a git revision: the file is read from the same revision."""

    read_blob: Callable[[str], bytes | None]      # repository-relative path -> bytes, None if absent
    policy_folder: str          # repository-relative, e.g. "infra/policies"
    revision: str

    def read(self, display_path: str) -> bytes:
        relative = posixpath.normpath(str(PurePosixPath(self.policy_folder).parent / display_path))
        if relative == ".." or relative.startswith("../") or relative.startswith("/"):
            raise Refused(f"{display_path} is outside the repository: the base must be a file of the "
                          "repository the policy lives in")
        data = self.read_blob(relative)
        if data is None:
            raise Refused(f"{display_path} ({relative} in the repository) does not exist at {self.revision}")
        return data
