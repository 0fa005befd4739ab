"""Reviewer-facing text from a `PolicyDiff`: markdown / json / text diff, PR body, sticky comment.

The words live in Jinja2 templates under `templates/pr/` so they can be edited without touching
code. Rendering is deterministic (no timestamps); the hidden HTML markers are what `pr` uses to
find its own PR body and comment again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import jinja2

from typing import Mapping

from compiler.deliver.semantic_diff import PolicyDiff
from compiler.core.humanize import reason_markdown, reason_text, short_warning, teams_by_name
from compiler.stages.quota_diagram import mermaid

TEMPLATE_DIR = Path(__file__).parent.parent / "templates" / "pr"  # see compiler/core/templating.py
ADMISSIBILITY_ROWS = 200
# GitHub refuses a PR body or comment over 65,536 characters; stay well below with room for a note.
FORGE_TEXT_LIMIT = 60_000


def comment_marker(scope: str) -> str:
    """The hidden marker of the sticky comment; one per scope (cluster or "all")."""
    return f"<!-- kueue-policy:plan scope={scope} -->"


def body_marker(scope: str) -> str:
    return f"<!-- kueue-policy:pr scope={scope} -->"


def _environment() -> jinja2.Environment:
    if not TEMPLATE_DIR.is_dir():  # an installation without the project's templates/ folder
        raise RuntimeError(f"kueue-policy templates not found at {TEMPLATE_DIR}")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # markdown for forges that sanitise it themselves
    )
    # A verdict's reason for people: the plain sentence first, Kueue's message (in GPUs, cores,
    # GiB) folded under it in markdown, after it in text.
    env.globals["reason_md"] = lambda reason, verdict, team, teams: reason_markdown(
        {"team": team, "verdict": verdict, "reason": reason or ""}, teams)
    env.globals["reason_txt"] = lambda reason, verdict, team, teams: reason_text(
        {"team": team, "verdict": verdict, "reason": reason or ""}, teams)
    env.globals["warning_text"] = short_warning
    return env


def _teams(reports: Mapping[str, dict] | None) -> dict[str, dict[str, dict]]:
    """cluster -> team -> the team's report entry (the after side), for the plain sentences."""
    return {name: teams_by_name(report) for name, report in (reports or {}).items()}


def quota_trees(diff: PolicyDiff, reports: Mapping[str, dict] | None) -> list[dict]:
    """The part of each changed cluster's quota tree the change touches (Mermaid source)."""
    trees = []
    for cluster in diff.clusters:
        report = (reports or {}).get(cluster.name)
        if cluster.status in ("unchanged", "removed") or report is None:
            continue
        touched = [t.name for t in cluster.teams if t.status != "removed"]
        # A new cluster, a new or removed pool or a changed cohort reshapes the whole tree; a team's
        # change touches its own branch (the root's shared line shows what it did to the pools).
        reshaped = cluster.cohorts or any(p.status != "changed" for p in cluster.pools)
        whole = cluster.status == "added" or bool(reshaped) or not touched
        trees.append({"cluster": cluster.name, "mermaid": mermaid(report, None if whole else touched)})
    return trees


_ENV: jinja2.Environment | None = None


def _template(name: str) -> jinja2.Template:
    global _ENV
    if _ENV is None:
        _ENV = _environment()
    return _ENV.get_template(name)


def _tidy(text: str) -> str:
    """Collapse the blank-line runs conditional template blocks leave behind."""
    lines: list[str] = []
    for line in text.splitlines():
        line = line.rstrip()
        if line or (lines and lines[-1]):
            lines.append(line)
    return "\n".join(lines).strip("\n") + "\n"


def render_diff(diff: PolicyDiff, output_format: str, reports: Mapping[str, dict] | None = None) -> str:
    """`reports`: the after side's report.json per cluster (plain sentences for `never`)."""
    if output_format == "json":
        return json.dumps(diff.to_dict(), indent=2, sort_keys=True) + "\n"
    if output_format == "markdown":
        return _tidy(_template("diff.md.j2").render(diff=diff, teams=_teams(reports)))
    if output_format == "text":
        return _tidy(_template("diff.txt.j2").render(diff=diff, teams=_teams(reports)))
    raise ValueError(f"unknown diff format {output_format!r}")


@dataclass(frozen=True)
class PullRequestText:
    title: str
    body: str
    comment: str


def render_pull_request(diff: PolicyDiff, *, scope: str, branch: str, base_branch: str,
                        head_sha: str, gitops_tools: str,
                        reports: Mapping[str, dict] | None = None, what_if: str = "") -> PullRequestText:
    capacity = [
        {"cluster": c.name, "pool": row.name, "gpus_before": row.gpus_before, "gpus_after": row.gpus_after,
         "guaranteed_before": row.guaranteed_before, "guaranteed_after": row.guaranteed_after}
        for c in diff.clusters if c.status != "unchanged" for row in c.capacity
    ]
    admissibility = [{**w, "cluster": c.name} for c in diff.clusters for w in c.admissibility]
    teams = _teams(reports)
    warnings = [short_warning(w, teams.get(c.name, {})) for c in diff.clusters for w in c.warnings]
    s = diff.summary
    what = scope if scope != "all" else "all clusters"
    title = (f"kueue-policy: update {what} "
             f"({s.teams_added} team(s) added, {s.teams_changed} changed, {s.teams_removed} removed)")
    context = dict(diff=diff, scope=scope, branch=branch, base_branch=base_branch, head_sha=head_sha,
                   gitops_tools=gitops_tools, capacity=capacity, admissibility=admissibility,
                   admissibility_limit=ADMISSIBILITY_ROWS, warnings=warnings, teams=teams,
                   quota_trees=quota_trees(diff, reports), what_if=what_if)
    body = _tidy(_template("body.md.j2").render(marker=body_marker(scope), **context))
    comment = _tidy(_template("comment.md.j2").render(marker=comment_marker(scope), command="pr", **context))
    return PullRequestText(title, fit_for_forge(body), fit_for_forge(comment))


def render_comment(diff: PolicyDiff, *, scope: str, head_sha: str, command: str = "diff",
                   reports: Mapping[str, dict] | None = None) -> str:
    """The sticky comment alone (what the check-on-PR workflow posts)."""
    return fit_for_forge(_tidy(_template("comment.md.j2").render(
        marker=comment_marker(scope), diff=diff, scope=scope, head_sha=head_sha, command=command,
        teams=_teams(reports))))


def fit_for_forge(text: str, limit: int = FORGE_TEXT_LIMIT) -> str:
    """Cut an over-long markdown text at a line boundary and close what the cut left open
    (a code fence, <details> blocks), so the forge still renders it; say where the rest is."""
    if len(text) <= limit:
        return text
    kept = text[:limit].rsplit("\n", 1)[0]
    closing = []
    if kept.count("```") % 2:
        closing.append("```")
    open_details = kept.count("<details>") - kept.count("</details>")
    closing.extend(["</details>"] * max(open_details, 0))
    note = (f"\n\n> ✂️ Truncated: {len(text) - len(kept):,} more characters. Run `kueue-policy diff` "
            "locally or see `out/<cluster>/REPORT.md` for the whole plan.\n")
    return kept + ("\n" + "\n".join(closing) if closing else "") + note
