"""Compile the policy as it is at a git revision (or on disk), in memory, into a `CompiledSide`.

`diff` compiles both of its sides this way; nothing is written and the checkout is not touched.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import git

from compiler.core import git_ops
from compiler.deliver.semantic_diff import CompiledSide
from compiler.core.errors import PolicyError
from compiler.language.load import POLICY_SUFFIXES

REPORT_FILE = "report.json"


def compile_revision(repo: git.Repo, revision: str | None, policy_folder: str,
                     jobs: int | None = None) -> CompiledSide:
    """The compiled policy at `revision` (None: the working tree).

    A revision where the policy folder does not exist yet compiles to nothing (every cluster
    then shows as added), so the first policy commit diffs cleanly against its parent."""
    from compiler.stages.pipeline import PolicySource, compile_policy

    label = "working tree" if revision is git_ops.WORKING_TREE else revision
    files = git_ops.files_at(repo, revision, policy_folder, POLICY_SUFFIXES)
    if not files:
        return CompiledSide(label, {}, {})
    if revision is git_ops.WORKING_TREE:
        source = PolicySource.from_directory(git_ops.work_dir(repo) / policy_folder)
    else:
        source = PolicySource.in_git(repo, revision, files, policy_folder)
    try:
        result = compile_policy(source, jobs=jobs)   # `never` verdicts are data for the diff, not errors
    except PolicyError as error:
        if revision is git_ops.WORKING_TREE:
            raise
        raise PolicyError([replace(d, message=f"{d.message} (in the policy at {revision})")
                           for d in error.diagnostics]) from None
    return CompiledSide(label, dict(result.reports), dict(result.files))


def compile_pair(repo: git.Repo, base: str, head: str | None, policy_folder: str,
                 jobs: int | None = None) -> tuple[CompiledSide, CompiledSide]:
    """Both sides of a diff; an unchanged policy is compiled once (compiling is the slow part)."""
    before = compile_revision(repo, base, policy_folder, jobs)
    same = (git_ops.files_at(repo, base, policy_folder, POLICY_SUFFIXES)
            == git_ops.files_at(repo, head, policy_folder, POLICY_SUFFIXES))
    if same:
        label = "working tree" if head is git_ops.WORKING_TREE else head
        return before, CompiledSide(label, before.reports, before.files)
    return before, compile_revision(repo, head, policy_folder, jobs)


def side_from_out_files(label: str, files: dict[str, bytes | str]) -> CompiledSide:
    """What an `out/` tree says about itself: its files and the report.json of each cluster."""
    texts = {path: data.decode("utf-8", "replace") if isinstance(data, bytes) else data
             for path, data in files.items()}
    reports = {}
    for path, text in texts.items():
        parts = path.split("/")
        if len(parts) == 2 and parts[1] == REPORT_FILE:
            try:
                report = json.loads(text)
            except ValueError:
                continue  # a hand-edited or foreign report.json: the file diff still shows it
            if isinstance(report, dict):
                reports[parts[0]] = report
    return CompiledSide(label, reports, texts)


def read_tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
