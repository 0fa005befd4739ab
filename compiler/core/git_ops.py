"""Every git operation of delivery, through GitPython.

The rule this module keeps: the user's checkout is never disturbed. Reading a revision reads blobs
from the object database; building the pull-request commit uses a temporary index file and
`commit-tree`, so HEAD, the index, the working tree and local branches stay exactly as they were.
The only things it adds to the local repository are unreferenced objects (git gc removes them).

Pushes use `--force-with-lease` with the tip this run has seen (or "must not exist"), so a push
never overwrites a commit it did not look at.
"""

from __future__ import annotations

import base64
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import git
from git.exc import GitCommandError, InvalidGitRepositoryError, NoSuchPathError

from compiler.core import codes
from compiler.core.errors import Diagnostic, EnvironmentFailure, PolicyError

BOT_NAME = "kueue-policy[bot]"
BOT_EMAIL = "kueue-policy-bot@users.noreply.github.com"
# Every commit `pr` makes carries this trailer; a commit without it was made by someone else.
BOT_TRAILER = "Generated-by: kueue-policy"
WORKING_TREE = None  # the "revision" that means the files on disk


@dataclass(frozen=True)
class RemoteBranch:
    name: str
    tip: str | None          # None: the branch does not exist on the remote
    foreign_commits: tuple[str, ...] = ()   # "<short sha> <author>: <subject>" of commits not made by the bot


def open_repository(start: Path) -> git.Repo:
    try:
        return git.Repo(start, search_parent_directories=True)
    except (InvalidGitRepositoryError, NoSuchPathError):
        raise EnvironmentFailure(
            code=codes.NOT_A_GIT_REPO, message=f"{start} is not inside a git repository "
            "(diff and pr read the policy from git)") from None


def work_dir(repo: git.Repo) -> Path:
    if repo.working_tree_dir is None:
        raise EnvironmentFailure(code=codes.NOT_A_GIT_REPO, message=f"{repo.git_dir} is a bare repository")
    return Path(repo.working_tree_dir)


def repo_relative(repo: git.Repo, path: Path) -> str:
    """`path` as a slash-separated path relative to the top of the repository."""
    top = work_dir(repo).resolve()
    absolute = (Path.cwd() / path).resolve()
    try:
        relative = absolute.relative_to(top)
    except ValueError:
        raise EnvironmentFailure(
            code=codes.NOT_A_GIT_REPO, message=f"{path} is outside the repository {top}") from None
    return relative.as_posix() if str(relative) != "." else ""


def resolve_commit(repo: git.Repo, revision: str) -> git.Commit:
    try:
        return repo.commit(revision)
    except (git.BadName, ValueError, GitCommandError):
        raise PolicyError([Diagnostic(
            codes.UNKNOWN_REVISION,
            f"unknown git revision {revision!r} (is it fetched? shallow clones need fetch-depth: 0)",
        )]) from None


def files_at(repo: git.Repo, revision: str | None, folder: str,
             suffixes: tuple[str, ...] | None = None) -> dict[str, bytes]:
    """Every file under `folder` (repo-relative) at `revision`, keyed by path relative to `folder`.

    `revision` None reads the working tree (what the user has on disk, committed or not). A folder
    that does not exist at that revision gives an empty mapping."""
    if revision is WORKING_TREE:
        root = work_dir(repo) / folder
        if not root.is_dir():
            return {}
        found: dict[str, bytes] = {}
        for path in sorted(root.rglob("*")):
            if path.is_file() and (suffixes is None or path.suffix in suffixes):
                found[path.relative_to(root).as_posix()] = path.read_bytes()
        return found
    if revision == "HEAD" and not repo.head.is_valid():
        return {}   # a repository without commits: nothing was there before
    commit = resolve_commit(repo, revision)
    try:
        tree = commit.tree / folder if folder else commit.tree
    except KeyError:
        return {}
    if not isinstance(tree, git.Tree):
        return {}
    found = {}
    for item in tree.traverse():
        if isinstance(item, git.Blob) and (suffixes is None or PurePosixPath(item.path).suffix in suffixes):
            relative = PurePosixPath(item.path).relative_to(folder).as_posix() if folder else item.path
            found[relative] = item.data_stream.read()
    return dict(sorted(found.items()))


def blob_at(repo: git.Repo, revision: str, path: str) -> bytes | None:
    """One file (repo-relative path) at `revision`, or None where it is not a file there."""
    try:
        item = resolve_commit(repo, revision).tree / path
    except KeyError:
        return None
    return item.data_stream.read() if isinstance(item, git.Blob) else None


def materialize(repo: git.Repo, revision: str, folder: str, destination: Path) -> None:
    """Write `folder` as it is at `revision` into `destination` (which becomes that folder)."""
    destination.mkdir(parents=True, exist_ok=True)
    for relative, data in files_at(repo, revision, folder).items():
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def has_uncommitted_changes(repo: git.Repo, folder: str) -> bool:
    return bool(repo.git.status("--porcelain", "--", folder or "."))


def current_branch(repo: git.Repo) -> str | None:
    return None if repo.head.is_detached else repo.active_branch.name


def commit_folder(repo: git.Repo, base: git.Commit, folder: str, content_root: Path,
                  message: str) -> tuple[str, str]:
    """A commit on top of `base` whose `folder` is replaced by the files under `content_root`.

    Returns (commit sha, tree sha). Uses a throw-away index so the user's index, HEAD and working
    tree are untouched; the commit is authored by the bot and carries BOT_TRAILER."""
    with tempfile.TemporaryDirectory(prefix="kueue-policy-index-") as scratch:
        env = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
        with repo.git.custom_environment(**env):
            repo.git.read_tree(base.hexsha)
            repo.git.rm("-r", "--cached", "--ignore-unmatch", "-q", "--", folder)
            # `content_root` holds `folder/...`; adding from it as the work tree stages exactly those files.
            repo.git.execute(["git", "--work-tree", str(content_root), "add", "-f", "-A", "--", folder])
            tree = repo.git.write_tree()
    identity = {"GIT_AUTHOR_NAME": BOT_NAME, "GIT_AUTHOR_EMAIL": BOT_EMAIL,
                "GIT_COMMITTER_NAME": BOT_NAME, "GIT_COMMITTER_EMAIL": BOT_EMAIL}
    with repo.git.custom_environment(**identity):
        sha = repo.git.commit_tree(tree, "-p", base.hexsha, "-m", f"{message}\n\n{BOT_TRAILER}")
    return sha, tree


def folder_tree(repo: git.Repo, commit_sha: str, folder: str) -> str | None:
    try:
        return (repo.commit(commit_sha).tree / folder).hexsha
    except KeyError:
        return None


@dataclass(frozen=True)
class GitAuth:
    """An HTTP Authorization header for git's own HTTPS requests, passed to each git process in
    its environment (GIT_CONFIG_COUNT/KEY/VALUE): never in argv, never in .git/config."""

    header: str

    def __repr__(self) -> str:
        return "GitAuth(***)"

    def environment(self) -> dict[str, str]:
        return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
                "GIT_CONFIG_VALUE_0": f"Authorization: {self.header}"}


def basic_auth(user: str, token: str) -> GitAuth:
    return GitAuth("Basic " + base64.b64encode(f"{user}:{token}".encode()).decode())


def fetch_remote_branch(repo: git.Repo, remote: str, branch: str, base: git.Commit,
                        auth: GitAuth | None = None) -> RemoteBranch:
    """The branch as the remote has it now, and which of its commits were not made by the bot.

    Fetches into FETCH_HEAD only: no remote-tracking ref or local branch of the user changes."""
    listing = _git(repo, "ls-remote", remote, f"refs/heads/{branch}", action=f"read {remote}", auth=auth)
    tip = None
    for line in listing.splitlines():
        sha, _, ref = line.partition("\t")
        if ref == f"refs/heads/{branch}":
            tip = sha
    if tip is None:
        return RemoteBranch(branch, None)
    _git(repo, "fetch", "--no-tags", "--quiet", remote, f"refs/heads/{branch}",
         action=f"fetch {branch} from {remote}", auth=auth)
    # The bot's branch is always one bot commit on top of a base commit (it is rebuilt, never
    # extended). So the tip alone decides; walking back from it names the person's commits for
    # the message. Judging by the tip also works in shallow clones, where history is cut short.
    foreign = []
    commit = repo.commit(tip)
    for _ in range(MAX_LISTED_COMMITS):
        if _made_by_bot(commit) or repo.is_ancestor(commit.hexsha, base.hexsha):
            break
        subject = commit.message.splitlines()[0] if commit.message else ""
        foreign.append(f"{commit.hexsha[:10]} {commit.author.name} <{commit.author.email}>: {subject}")
        if not commit.parents:
            break
        commit = commit.parents[0]
    return RemoteBranch(branch, tip, tuple(foreign))


MAX_LISTED_COMMITS = 10


def _made_by_bot(commit: git.Commit) -> bool:
    return (commit.author.email == BOT_EMAIL and commit.committer.email == BOT_EMAIL
            and BOT_TRAILER in commit.message)


def push_branch(repo: git.Repo, remote: str, branch: str, sha: str, expected_tip: str | None,
                auth: GitAuth | None = None) -> None:
    """Point the remote branch at `sha`, only if it is still at `expected_tip` (None: absent)."""
    lease = f"--force-with-lease=refs/heads/{branch}:{expected_tip or ''}"
    _git(repo, "push", "--porcelain", lease, remote, f"{sha}:refs/heads/{branch}",
         action=f"push {branch} to {remote}", auth=auth)


def restore_branch(repo: git.Repo, remote: str, branch: str, pushed_sha: str,
                   previous_tip: str | None, auth: GitAuth | None = None) -> None:
    """Undo `push_branch`: delete the branch this run created, or put the old tip back."""
    lease = f"--force-with-lease=refs/heads/{branch}:{pushed_sha}"
    refspec = f"{previous_tip}:refs/heads/{branch}" if previous_tip else f":refs/heads/{branch}"
    _git(repo, "push", "--porcelain", lease, remote, refspec, action=f"roll back {branch} on {remote}",
         auth=auth)


def _git(repo: git.Repo, *args: str, action: str, auth: GitAuth | None = None) -> str:
    # Never prompt for credentials: in CI a prompt hangs the job until it times out.
    env = {"GIT_TERMINAL_PROMPT": "0", **(auth.environment() if auth else {})}
    try:
        return repo.git.execute(["git", *args], with_extended_output=False, env=env)
    except GitCommandError as error:
        stderr = (error.stderr or "").strip().replace("stderr: ", "", 1).strip(" '\n")
        raise EnvironmentFailure(
            code=codes.GIT_FAILED, message=f"git could not {action}: {redact(stderr) or error.status}") from None


_CREDENTIALS_IN_URL = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")


def redact(text: str) -> str:
    """Remove credentials git may echo back (https://user:token@host) and any known token value."""
    text = _CREDENTIALS_IN_URL.sub(r"\g<scheme>***@", text)
    for variable in ("GITHUB_TOKEN", "GITLAB_TOKEN", "GH_TOKEN", "CI_JOB_TOKEN"):
        value = os.environ.get(variable)
        if value and len(value) >= 4:
            text = text.replace(value, "***")
    return text
