"""`kueue-policy pr`: compile, commit out/ on the bot branch, push, open or update one PR.

The order of operations is what keeps the promises of the command:

1. compile the policy at HEAD (a policy that does not compile stops here: exit 1, nothing pushed);
2. build the new out/ in a scratch folder and commit it on top of HEAD with a throw-away index
   (the user's checkout, index and branches are untouched);
3. stop if out/ would not change, or if the remote branch already holds exactly this out/;
4. stop if the remote branch has commits the bot did not make (never rewrite a person's work);
5. ask the forge first which PR is open (this also proves the token and the repository): a failure here
   leaves the remote untouched;
6. push with a lease on the tip seen in step 4, then open or update the PR and its sticky
   comment; if opening/updating the PR fails, the push is rolled back.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import click
import git

from compiler.core import codes
from compiler.cli.common import print_diagnostics
from compiler.core import git_ops
from compiler.deliver import render
from compiler.deliver.forge import ForgeClient, forge_from_environment
from compiler.deliver.semantic_diff import CompiledSide, PolicyDiff, diff_sides
from compiler.deliver.sides import read_tree, side_from_out_files
from compiler.language.load import POLICY_SUFFIXES
from compiler.core.humanize import never_in_plain_words
from compiler.core.errors import EnvironmentFailure, KueuePolicyError, PolicyError

BRANCH_PREFIX = "kueue-policy/"
GITOPS_TOOL_NAMES = {"argocd": "Argo CD", "flux": "Flux", "kustomize": "your kustomize-based GitOps tool"}


class UsageProblem(KueuePolicyError):
    """The command was asked something it cannot do (unknown cluster, no base branch): exit 2."""

    exit_code = 2


@dataclass(frozen=True)
class PrOptions:
    policy_dir: Path = Path("policies")
    out_dir: Path = Path("out")
    remote: str = "origin"
    base_branch: str | None = None
    branch: str | None = None
    cluster: str | None = None
    forge: str = "auto"
    dry_run: bool = False
    allow_inadmissible: bool = False
    push_with_token: bool = False
    jobs: int | None = None  # processes the compile may use (None: its default)


@dataclass
class PrOutcome:
    """What happened, for the CLI to print and the tests to assert on."""

    action: str                      # up-to-date | would-* | opened | updated | unchanged
    branch: str
    pushed: bool = False
    change_number: int | None = None
    change_url: str = ""
    comment: str = ""                # created | updated | unchanged
    diff: PolicyDiff | None = None
    messages: list[str] = field(default_factory=list)


def branch_name(cluster: str | None) -> str:
    return f"{BRANCH_PREFIX}{cluster or 'all'}"


def _base_branch(repo: git.Repo, explicit: str | None) -> str:
    candidates = [explicit, git_ops.current_branch(repo), os.environ.get("GITHUB_REF_NAME"),
                  os.environ.get("CI_COMMIT_BRANCH")]
    for candidate in candidates:
        if candidate:
            return candidate
    raise UsageProblem("HEAD is detached and no --base was given: name the branch the pull request "
                       "should merge into (e.g. --base main)")


@dataclass(frozen=True)
class _Target:
    """Where `pr` reads and writes: the folders inside the repository, the branches, HEAD."""

    policy_folder: str
    out_folder: str
    base_branch: str
    branch: str
    head: git.Commit
    scope: str  # the cluster, or "all"


@dataclass(frozen=True)
class _NewOut:
    """Step 2's result: the bot commit holding the new out/, and what it changes."""

    commit_sha: str
    out_tree: str | None
    diff: PolicyDiff
    after: CompiledSide


def run_pr(options: PrOptions, say: Callable[[str], None],
           forge_factory: Callable[[str], ForgeClient] = forge_from_environment) -> PrOutcome:
    """Compile the committed policy, commit out/ on the bot branch, push, open or update the PR.

    The steps run in the order the module docstring gives because each one is the last chance to
    stop without side effects of the next kind: nothing is written before the policy compiles,
    nothing is fetched before the new out/ is known to differ, nothing is pushed before the
    remote branch is known to be the bot's own and the forge has answered, and a push whose PR
    cannot be opened is rolled back. So a failure at any step leaves the remote as it was.
    """
    repo = git_ops.open_repository(Path.cwd())
    target = _target(repo, options)
    result = _compile_at_head(repo, target, options)                          # 1.
    new = _commit_new_out(repo, target, options, result)                      # 2.
    outcome = PrOutcome("up-to-date", target.branch, diff=new.diff)
    # 3. nothing to change on the base branch: no push, no API call
    if new.out_tree == git_ops.folder_tree(repo, target.head.hexsha, target.out_folder):
        say(f"{target.out_folder}/ on {target.base_branch} is up to date with {target.policy_folder}/: nothing to do")
        return outcome
    # The forge client (and its environment) before any network call: a missing token fails early.
    forge = None if options.dry_run else forge_factory(options.forge)
    auth = forge.git_auth() if forge is not None and options.push_with_token else None
    remote_branch = _bot_branch(repo, options.remote, target, auth)           # 4.
    needs_push = remote_branch.tip is None or \
        git_ops.folder_tree(repo, remote_branch.tip, target.out_folder) != new.out_tree
    text = render.render_pull_request(
        new.diff, scope=target.scope, branch=target.branch, base_branch=target.base_branch,
        head_sha=target.head.hexsha, gitops_tools=_gitops_tools(new.after), reports=new.after.reports,
        what_if=_what_if(repo, target))
    if options.dry_run:
        outcome.action = "would-push" if needs_push else "would-update-text"
        say(f"dry run: would {'push ' + new.commit_sha[:12] + ' to' if needs_push else 'leave'} "
            f"{options.remote}/{target.branch} ({'new branch' if remote_branch.tip is None else 'existing branch'}), "
            f"then open or update the pull request into {target.base_branch}:")
        say(f"title: {text.title}")
        say(text.body)
        return outcome
    assert forge is not None
    _publish(repo, options.remote, target, forge, auth, new.commit_sha, remote_branch.tip, needs_push,  # 5.-6.
             text, outcome, say)
    return outcome


def _what_if(repo: git.Repo, target: _Target) -> str:
    """The what-if section: the policy that produced the out/ now on the base branch (the last
    commit that changed out/) against the policy at HEAD, through each cluster's whatIf.trace."""
    from compiler.deliver import whatif

    last = next(repo.iter_commits(target.head.hexsha, paths=target.out_folder, max_count=1), None)
    if last is None:
        return ""
    return whatif.render_markdown(whatif.for_revisions(repo, last.hexsha, target.head.hexsha, target.policy_folder))


def _target(repo: git.Repo, options: PrOptions) -> _Target:
    policy_folder = git_ops.repo_relative(repo, options.policy_dir)
    out_folder = git_ops.repo_relative(repo, options.out_dir)
    if not out_folder:
        raise UsageProblem("--out must be a folder inside the repository, not its top")
    base_branch = _base_branch(repo, options.base_branch)
    branch = options.branch or branch_name(options.cluster)
    if not repo.head.is_valid():
        raise EnvironmentFailure(code=codes.UNKNOWN_REVISION, message=f"the repository has no commit yet: commit "
                                 f"{policy_folder}/ first, then run pr")
    head = repo.head.commit
    if git_ops.has_uncommitted_changes(repo, policy_folder):
        click.echo(f"note: {policy_folder}/ has uncommitted changes; pr compiles the committed policy at HEAD "
            f"({head.hexsha[:12]})", err=True)
    return _Target(policy_folder, out_folder, base_branch, branch, head, options.cluster or "all")


def _compile_at_head(repo: git.Repo, target: _Target, options: PrOptions):
    """Step 1: the committed policy at HEAD, compiled in memory. A PolicyError propagates:
    diagnostics, exit 1, nothing pushed."""
    from compiler.stages.pipeline import PolicySource, compile_policy

    policy_files = git_ops.files_at(repo, target.head.hexsha, target.policy_folder, POLICY_SUFFIXES)
    if not policy_files:
        source = PolicySource.from_files({}, label=target.policy_folder)   # compile reports KP105
    else:
        source = PolicySource.in_git(repo, target.head.hexsha, policy_files, target.policy_folder)
    result = compile_policy(source, jobs=options.jobs)
    print_diagnostics(result.warnings)
    never = never_in_plain_words(result)
    if never and not options.allow_inadmissible:
        raise PolicyError(never)
    if options.cluster is not None and options.cluster not in result.reports:
        raise UsageProblem(f"--cluster {options.cluster}: the policy has no such cluster "
                           f"(clusters: {', '.join(sorted(result.reports)) or 'none'})")
    return result


def _commit_new_out(repo: git.Repo, target: _Target, options: PrOptions, result) -> _NewOut:
    """Step 2: HEAD's out/ (so foreign files survive) updated by the emit stage in a scratch
    folder, committed on top of HEAD with a throw-away index: the checkout is never touched."""
    from compiler.stages.emit import write_tree

    with tempfile.TemporaryDirectory(prefix="kueue-policy-pr-") as scratch:
        scratch_root = Path(scratch)
        new_out = scratch_root / "tree" / target.out_folder
        git_ops.materialize(repo, target.head.hexsha, target.out_folder, new_out)
        if options.cluster is None:
            write_tree(result, new_out)
        else:
            full = scratch_root / "full"
            write_tree(result, full)
            shutil.rmtree(new_out / options.cluster, ignore_errors=True)
            shutil.copytree(full / options.cluster, new_out / options.cluster)
        before = side_from_out_files(target.base_branch,
                                     git_ops.files_at(repo, target.head.hexsha, target.out_folder))
        after = side_from_out_files(target.branch, read_tree(new_out))
        message = f"kueue-policy: compile {target.policy_folder}/ at {target.head.hexsha[:12]} ({target.scope})"
        commit_sha, _ = git_ops.commit_folder(repo, target.head, target.out_folder, scratch_root / "tree", message)
    return _NewOut(commit_sha, git_ops.folder_tree(repo, commit_sha, target.out_folder),
                   diff_sides(before, after), after)


def _bot_branch(repo: git.Repo, remote: str, target: _Target, auth: git_ops.GitAuth | None):
    """Step 4: the remote bot branch as it is now; refuse to rewrite commits a person made."""
    remote_branch = git_ops.fetch_remote_branch(repo, remote, target.branch, target.head, auth)
    if remote_branch.foreign_commits:
        raise EnvironmentFailure(
            code=codes.BRANCH_TOUCHED_BY_PERSON, message=f"{remote}/{target.branch} has commits kueue-policy "
            "did not make, so it will not rewrite the branch:\n  "
            + "\n  ".join(remote_branch.foreign_commits)
            + f"\nMerge or close that pull request (or delete the branch {target.branch}), then run pr again.")
    return remote_branch


def _publish(repo: git.Repo, remote: str, target: _Target, forge: ForgeClient, auth: git_ops.GitAuth | None,
             commit_sha: str, previous_tip: str | None, needs_push: bool, text, outcome: PrOutcome,
             say: Callable[[str], None]) -> None:
    """Steps 5 and 6: ask the forge first (nothing on the remote changes if that fails), push with
    a lease on the tip seen in step 4, then open or update the PR and its sticky comment; a push
    whose PR cannot be opened or updated is rolled back."""
    existing = forge.find_open_change(target.branch, target.base_branch)
    if needs_push:
        git_ops.push_branch(repo, remote, target.branch, commit_sha, previous_tip, auth)
        outcome.pushed = True
        say(f"pushed {commit_sha[:12]} to {remote}/{target.branch}")
    try:
        if existing is None:
            change = forge.open_change(target.branch, target.base_branch, text.title, text.body)
            outcome.action = "opened"
        elif existing.title != text.title or existing.body.strip() != text.body.strip():
            change = forge.update_change(existing, text.title, text.body)
            outcome.action = "updated"
        else:
            change = existing
            outcome.action = "updated" if needs_push else "unchanged"
    except EnvironmentFailure as failure:
        if outcome.pushed:
            _roll_back(repo, remote, target.branch, commit_sha, previous_tip, failure, auth)
        raise
    outcome.change_number, outcome.change_url = change.number, change.url
    outcome.comment = forge.upsert_comment(change, render.comment_marker(target.scope), text.comment)
    noun = "merge request !" if forge.name == "GitLab" else "pull request #"
    say(f"{outcome.action} {noun}{change.number} {change.url} (sticky comment {outcome.comment})")


def _roll_back(repo: git.Repo, remote: str, branch: str, pushed: str, previous: str | None,
               failure: EnvironmentFailure, auth: git_ops.GitAuth | None) -> None:
    try:
        git_ops.restore_branch(repo, remote, branch, pushed, previous, auth)
    except EnvironmentFailure as rollback_failure:
        failure.add_context(f"and rolling back the push failed too: {rollback_failure}; "
                            f"{remote}/{branch} now points at {pushed[:12]}")
        return
    what = "deleted again" if previous is None else f"reset to {previous[:12]}"
    failure.add_context(f"{remote}/{branch} was {what}; nothing was left half-done")


def _gitops_tools(side: CompiledSide) -> str:
    tools = sorted({GITOPS_TOOL_NAMES.get(str(r.get("gitops")), "your GitOps tool")
                    for r in side.reports.values()})
    return " / ".join(tools) if tools else "your GitOps tool"
