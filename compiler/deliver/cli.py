"""`kueue-policy diff` and `kueue-policy pr`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from compiler.cli.common import diagnostics_json, format_option, handles_errors, jobs_option, print_diagnostics
from compiler.core import git_ops
from compiler.deliver import render
from compiler.deliver import whatif
from compiler.core import codes
from compiler.deliver.forge import forge_from_environment
from compiler.deliver.gate import worse
from compiler.core.errors import Diagnostic
from compiler.deliver.publish import PrOptions, run_pr
from compiler.deliver.semantic_diff import diff_sides
from compiler.deliver.sides import compile_pair

FORGE_CHOICE = click.Choice(["auto", "github", "gitlab"])


@click.command()
@click.argument("base", required=False, default="HEAD")
@click.argument("head", required=False)
@click.option("--policies", "policy_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("policies"), show_default=True,
              help="The policy folder (the same path at both revisions).")
@format_option("markdown", "json", "text")
@click.option("--comment-on", "comment_on", type=int, metavar="NUMBER",
              help="Also post the markdown as the sticky comment of this pull/merge request "
                   "(uses the same forge environment as `pr`).")
@click.option("--forge", type=FORGE_CHOICE, default="auto", show_default=True,
              help="Forge for --comment-on.")
@click.option("--exit-code", "exit_code", is_flag=True,
              help="Exit 1 when the change makes a declared workload worse or lowers a team's quota.")
@jobs_option
@handles_errors
def diff(base: str, head: str | None, policy_dir: Path, output_format: str,
         comment_on: int | None, forge: str, exit_code: bool, jobs: int | None) -> None:
    """What a policy change does, per team: BASE vs HEAD (git revisions).

    Defaults: BASE is HEAD, HEAD is the working tree (your uncommitted edits). Both sides are
    compiled in memory; nothing is written. Reports guaranteed/burst/lend per flavor, flavor order,
    cohorts, queues and namespaces, priority classes, the MIG plan and every declared workload
    whose verdict changes.
    """
    repo = git_ops.open_repository(Path.cwd())
    policy_folder = git_ops.repo_relative(repo, policy_dir)
    before, after = compile_pair(repo, base, head if head is not None else git_ops.WORKING_TREE, policy_folder,
                                 jobs=jobs)
    result = diff_sides(before, after)
    losses = [Diagnostic(codes.WORSE_CHANGE, loss) for loss in worse(result)] if exit_code else []
    text = render.render_diff(result, output_format, reports=after.reports)
    what_ifs = whatif.for_revisions(repo, base, head if head is not None else git_ops.WORKING_TREE, policy_folder)
    if output_format == "json":   # one JSON document on stdout, the gate's findings in it
        text = json.dumps({**json.loads(text), "ok": not losses, "diagnostics": diagnostics_json(losses),
                           "whatIf": [w.to_json() for w in what_ifs]}, indent=2, sort_keys=True) + "\n"
    elif what_ifs:
        text += "\n" + (whatif.render_markdown(what_ifs) if output_format == "markdown"
                        else whatif.render_text(what_ifs))
    click.echo(text, nl=False)
    if comment_on is not None:
        from compiler.deliver.forge import ChangeRequest

        client = forge_from_environment(forge)
        change = ChangeRequest(number=comment_on, url="", title="", body="")
        head_sha = repo.commit(head).hexsha if head is not None else repo.head.commit.hexsha
        comment = render.render_comment(result, scope="all", head_sha=head_sha, reports=after.reports)
        status = client.upsert_comment(change, render.comment_marker("all"), comment)
        click.echo(f"sticky comment on {client.describe()} #{comment_on}: {status}", err=True)
    if losses:
        print_diagnostics(losses)
        click.echo(f"kueue-policy: the change makes {len(losses)} thing(s) worse (--exit-code)", err=True)
        sys.exit(1)


@click.command()
@click.argument("policy_arg", metavar="[DIR]", required=False,
                type=click.Path(file_okay=False, path_type=Path))
@click.option("--policies", "policy_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("policies"), show_default=True, help="The policy folder (or give it as DIR).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("out"), show_default=True, help="The compiled-output folder committed in the repo.")
@click.option("--cluster", help="Only this cluster's out/ folder; the branch becomes kueue-policy/<cluster>.")
@click.option("--base", "base_branch", help="Branch the PR merges into (default: the current branch).")
@click.option("--branch", help="Override the PR branch name (default: kueue-policy/<cluster or all>).")
@click.option("--remote", default="origin", show_default=True, help="The git remote to push to.")
@click.option("--forge", type=FORGE_CHOICE, default="auto", show_default=True,
              help="auto: GitLab when CI_API_V4_URL/GITLAB_TOKEN are set, else GitHub.")
@click.option("--allow-inadmissible", is_flag=True,
              help="Open the PR even if a declared workload can never be admitted.")
@click.option("--push-with-token", is_flag=True,
              help="Authenticate git's HTTPS fetch/push with the forge token (GitLab CI, where the "
                   "checkout's job token cannot push). Passed in git's environment, never stored.")
@click.option("--dry-run", is_flag=True, help="Print what would be pushed and opened; change nothing.")
@jobs_option
@handles_errors
def pr(policy_arg: Path | None, policy_dir: Path, out_dir: Path, cluster: str | None, base_branch: str | None,
       branch: str | None, remote: str, forge: str, allow_inadmissible: bool, push_with_token: bool,
       dry_run: bool, jobs: int | None) -> None:
    """Compile, commit out/ on a bot branch, push it, and open or update the one pull request.

    Never opens a duplicate, never pushes when out/ would not change, never rewrites a branch a
    person has pushed to. The local checkout stays on its branch and clean. GitHub reads
    GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL; GitLab reads GITLAB_TOKEN, CI_PROJECT_ID,
    CI_API_V4_URL.
    """
    options = PrOptions(policy_dir=policy_arg or policy_dir, out_dir=out_dir, remote=remote, base_branch=base_branch,
                        branch=branch, cluster=cluster, forge=forge, dry_run=dry_run,
                        allow_inadmissible=allow_inadmissible, push_with_token=push_with_token, jobs=jobs)
    run_pr(options, say=click.echo)
