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

from compiler import codes
from compiler.clikit import print_diagnostics
from compiler.deliver import git_ops, render
from compiler.deliver.forge import ForgeClient, forge_from_environment
from compiler.deliver.semantic_diff import CompiledSide, PolicyDiff, diff_sides
from compiler.deliver.sides import POLICY_SUFFIXES, read_tree, side_from_out_files, source_at_revision
from compiler.errors import EnvironmentFailure, KueuePolicyError, PolicyError

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


def run_pr(options: PrOptions, say: Callable[[str], None],
           forge_factory: Callable[[str], ForgeClient] = forge_from_environment) -> PrOutcome:
    from compiler.emit import write_tree
    from compiler.pipeline import PolicySource, compile_policy

    repo = git_ops.open_repository(Path.cwd())
    policy_folder = git_ops.repo_relative(repo, options.policy_dir)
    out_folder = git_ops.repo_relative(repo, options.out_dir)
    if not out_folder:
        raise UsageProblem("--out must be a folder inside the repository, not its top")
    base_branch = _base_branch(repo, options.base_branch)
    branch = options.branch or branch_name(options.cluster)
    if not repo.head.is_valid():
        raise EnvironmentFailure(f"error[{codes.UNKNOWN_REVISION}]: the repository has no commit yet: commit "
                                 f"{policy_folder}/ first, then run pr")
    head = repo.head.commit
    if git_ops.has_uncommitted_changes(repo, policy_folder):
        click.echo(f"note: {policy_folder}/ has uncommitted changes; pr compiles the committed policy at HEAD "
            f"({head.hexsha[:12]})", err=True)

    # 1. compile (PolicyError propagates: diagnostics, exit 1, nothing pushed)
    policy_files = git_ops.files_at(repo, head.hexsha, policy_folder, POLICY_SUFFIXES)
    if not policy_files:
        source = PolicySource.from_files({}, label=policy_folder)   # compile reports KP105
    else:
        source = source_at_revision(policy_files, policy_folder)
    result = compile_policy(source)
    print_diagnostics(result.warnings)
    never = result.never_diagnostics()
    if never and not options.allow_inadmissible:
        raise PolicyError(never)
    if options.cluster is not None and options.cluster not in result.reports:
        raise UsageProblem(f"--cluster {options.cluster}: the policy has no such cluster "
                           f"(clusters: {', '.join(sorted(result.reports)) or 'none'})")

    with tempfile.TemporaryDirectory(prefix="kueue-policy-pr-") as scratch:
        scratch_root = Path(scratch)
        # 2. the new out/: HEAD's out/ (so foreign files survive) updated by the emit stage
        new_out = scratch_root / "tree" / out_folder
        git_ops.materialize(repo, head.hexsha, out_folder, new_out)
        if options.cluster is None:
            write_tree(result, new_out)
        else:
            full = scratch_root / "full"
            write_tree(result, full)
            shutil.rmtree(new_out / options.cluster, ignore_errors=True)
            shutil.copytree(full / options.cluster, new_out / options.cluster)
        before = side_from_out_files(base_branch,
                                     git_ops.files_at(repo, head.hexsha, out_folder))
        after = side_from_out_files(branch, read_tree(new_out))
        diff = diff_sides(before, after)
        scope = options.cluster or "all"
        message = f"kueue-policy: compile {policy_folder}/ at {head.hexsha[:12]} ({scope})"
        commit_sha, _ = git_ops.commit_folder(repo, head, out_folder, scratch_root / "tree", message)

    outcome = PrOutcome("up-to-date", branch, diff=diff)
    new_out_tree = git_ops.folder_tree(repo, commit_sha, out_folder)
    # 3. nothing to change on the base branch: no push, no API call
    if new_out_tree == git_ops.folder_tree(repo, head.hexsha, out_folder):
        say(f"{out_folder}/ on {base_branch} is up to date with {policy_folder}/: nothing to do")
        return outcome

    # The forge client (and its environment) before any network call: a missing token fails early.
    forge = None if options.dry_run else forge_factory(options.forge)
    auth = forge.git_auth() if forge is not None and options.push_with_token else None

    # 4. the remote branch as it is now
    remote_branch = git_ops.fetch_remote_branch(repo, options.remote, branch, head, auth)
    if remote_branch.foreign_commits:
        raise EnvironmentFailure(
            f"error[{codes.BRANCH_TOUCHED_BY_PERSON}]: {options.remote}/{branch} has commits kueue-policy "
            "did not make, so it will not rewrite the branch:\n  "
            + "\n  ".join(remote_branch.foreign_commits)
            + f"\nMerge or close that pull request (or delete the branch {branch}), then run pr again.")
    needs_push = remote_branch.tip is None or \
        git_ops.folder_tree(repo, remote_branch.tip, out_folder) != new_out_tree

    text = render.render_pull_request(
        diff, scope=scope, branch=branch, base_branch=base_branch, head_sha=head.hexsha,
        gitops_tools=_gitops_tools(after), reports=after.reports)

    if options.dry_run:
        outcome.action = "would-push" if needs_push else "would-update-text"
        say(f"dry run: would {'push ' + commit_sha[:12] + ' to' if needs_push else 'leave'} "
            f"{options.remote}/{branch} ({'new branch' if remote_branch.tip is None else 'existing branch'}), "
            f"then open or update the pull request into {base_branch}:")
        say(f"title: {text.title}")
        say(text.body)
        return outcome

    # 5. forge pre-checks: nothing on the remote changes if these fail
    assert forge is not None
    existing = forge.find_open_change(branch, base_branch)

    # 6. push, then the PR; roll the push back if the PR cannot be opened or updated
    if needs_push:
        git_ops.push_branch(repo, options.remote, branch, commit_sha, remote_branch.tip, auth)
        outcome.pushed = True
        say(f"pushed {commit_sha[:12]} to {options.remote}/{branch}")
    try:
        if existing is None:
            change = forge.open_change(branch, base_branch, text.title, text.body)
            outcome.action = "opened"
        elif existing.title != text.title or existing.body.strip() != text.body.strip():
            change = forge.update_change(existing, text.title, text.body)
            outcome.action = "updated"
        else:
            change = existing
            outcome.action = "updated" if needs_push else "unchanged"
    except EnvironmentFailure as failure:
        if outcome.pushed:
            _roll_back(repo, options.remote, branch, commit_sha, remote_branch.tip, failure, auth)
        raise
    outcome.change_number, outcome.change_url = change.number, change.url
    outcome.comment = forge.upsert_comment(change, render.comment_marker(scope), text.comment)
    noun = "merge request !" if forge.name == "GitLab" else "pull request #"
    say(f"{outcome.action} {noun}{change.number} {change.url} (sticky comment {outcome.comment})")
    return outcome


def _roll_back(repo: git.Repo, remote: str, branch: str, pushed: str, previous: str | None,
               failure: EnvironmentFailure, auth: git_ops.GitAuth | None) -> None:
    try:
        git_ops.restore_branch(repo, remote, branch, pushed, previous, auth)
    except EnvironmentFailure as rollback_failure:
        failure.args = (f"{failure}\nand rolling back the push failed too: {rollback_failure}; "
                        f"{remote}/{branch} now points at {pushed[:12]}",)
        return
    what = "deleted again" if previous is None else f"reset to {previous[:12]}"
    failure.args = (f"{failure}\n{remote}/{branch} was {what}; nothing was left half-done",)


def _gitops_tools(side: CompiledSide) -> str:
    tools = sorted({GITOPS_TOOL_NAMES.get(str(r.get("gitops")), "your GitOps tool")
                    for r in side.reports.values()})
    return " / ".join(tools) if tools else "your GitOps tool"
