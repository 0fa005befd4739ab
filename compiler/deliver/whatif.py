"""What-if for `diff` and `pr`: the cluster's `whatIf.trace` replayed through both sides.

A cluster that sets `spec.whatIf.trace` (a path in the repository) gets, in the diff and in the
pull request body, what the change does to that demand per team ("alpha p95 wait 2.1 h -> 4.0 h")
and a chart of each team's p95 wait before and after. The trace is read from the working tree
(the head side), so both policies see the same demand.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from compiler.core import codes
from compiler.core.errors import Diagnostic, InputError, SourcePosition
from compiler.stages.pipeline import PolicySource
from compiler.simulate.compare import compare, human_duration, show
from compiler.simulate.runner import simulate_both

MAX_CHART_TEAMS = 20


@dataclass
class WhatIfResult:
    cluster: str
    trace: str
    changes: list[dict]
    before: dict
    after: dict

    def to_json(self) -> dict:
        return {"cluster": self.cluster, "trace": self.trace, "changes": self.changes,
                "before": {"run": self.before["run"], "teams": self.before["teams"]},
                "after": {"run": self.after["run"], "teams": self.after["teams"]}}


def traces_of(source: PolicySource) -> dict[str, str]:
    """cluster name -> whatIf.trace, for the clusters of a policy that ask for a what-if (read
    and validated only: the compile that follows reports any other problem)."""
    from compiler.core.errors import DiagnosticSink
    from compiler.language.load import load_sources
    from compiler.language.validate import validate_documents

    policy = validate_documents(load_sources(source.files, DiagnosticSink()), DiagnosticSink())
    return {c.model.metadata.name: c.model.spec.whatIf.trace for c in policy.clusters
            if c.model.spec.whatIf is not None}


def for_revisions(repo, base: str | None, head: str | None, policy_folder: str) -> list[WhatIfResult]:
    """The what-if of a policy change between two git revisions (None: the working tree)."""
    from compiler.core import git_ops
    from compiler.language.load import POLICY_SUFFIXES

    root = git_ops.work_dir(repo)

    def source(revision: str | None) -> PolicySource | None:
        files = git_ops.files_at(repo, revision, policy_folder, POLICY_SUFFIXES)
        if not files:
            return None
        if revision is git_ops.WORKING_TREE:
            return PolicySource.from_directory(root / policy_folder)
        return PolicySource.in_git(repo, revision, files, policy_folder)

    head_source = source(head)
    traces = traces_of(head_source) if head_source is not None else {}
    if not traces:
        return []
    return what_if(source(base), head_source, root, traces)


def what_if(base: PolicySource | None, head: PolicySource, repo_root: Path,
            traces: dict[str, str]) -> list[WhatIfResult]:
    """Each cluster's trace through the base and the head policy (a cluster new in the head
    compares against nothing and is left out)."""
    results = []
    for cluster, relative in sorted(traces.items()):
        trace_path = repo_root / relative
        if not trace_path.is_file():
            raise InputError([Diagnostic(codes.TRACE_BAD, f"whatIf.trace of cluster '{cluster}': {relative} is "
                                         "not a file of the repository", SourcePosition(str(trace_path)))])
        if base is None:
            continue
        before, after = simulate_both(base, head, trace_path, cluster)
        if isinstance(before.error, InputError):
            continue  # the cluster (or the trace's teams) do not exist before the change
        old, new = before.get(), after.get().summary
        results.append(WhatIfResult(cluster, relative, compare(old, new), old, new))
    return results


def _label(team: str) -> str:
    return '"' + team.replace('"', "'") + '"'


def p95_chart(result: WhatIfResult) -> str:
    """A Mermaid xychart (GitHub and GitLab render it): each team's p95 wait in hours, before
    (first bar) and after (second bar), for the teams whose waits changed most."""
    before = {t["team"]: t["wait"]["p95"] or 0 for t in result.before["teams"]}
    after = {t["team"]: t["wait"]["p95"] or 0 for t in result.after["teams"]}
    teams = sorted(set(before) | set(after),
                   key=lambda t: (-abs(after.get(t, 0) - before.get(t, 0)), t))[:MAX_CHART_TEAMS]
    teams.sort()
    hours = lambda values: ", ".join(f"{values.get(t, 0) / 3600:.2f}" for t in teams)  # noqa: E731
    return "\n".join([
        "```mermaid",
        "xychart-beta",
        '    title "p95 wait per team, hours: before (first bar), after (second bar)"',
        f"    x-axis [{', '.join(_label(t) for t in teams)}]",
        '    y-axis "hours"',
        f"    bar [{hours(before)}]",
        f"    bar [{hours(after)}]",
        "```"])


def render_markdown(results: list[WhatIfResult]) -> str:
    sections = []
    for result in results:
        lines = [f"### What-if: `{result.trace}` through `{result.cluster}`", ""]
        run_before, run_after = result.before["run"], result.after["run"]
        lines.append(f"{run_after['jobs']} jobs; idle GPU-hours {run_before['idleGpuHours']:,.1f} -> "
                     f"{run_after['idleGpuHours']:,.1f}; preemptions {run_before['preemptions']} -> "
                     f"{run_after['preemptions']}; makespan {human_duration(run_before['makespan'])} -> "
                     f"{human_duration(run_after['makespan'])}.")
        lines.append("")
        if not result.changes:
            lines.append("No team's waits, usage or preemptions change.")
        else:
            lines += ["| team | metric | before | after | |", "|---|---|---|---|---|"]
            for change in result.changes:
                mark = {True: "worse", False: "better"}.get(change["worse"], "")
                lines.append(f"| {change['team']} | {change['metric']} | {show(change['before'], change['unit'])} | "
                             f"{show(change['after'], change['unit'])} | {mark} |")
            lines += ["", p95_chart(result)]
        sections.append("\n".join(lines))
    return "\n\n".join(sections) + ("\n" if sections else "")


def render_text(results: list[WhatIfResult]) -> str:
    lines = []
    for result in results:
        lines.append(f"What-if: {result.trace} through {result.cluster}:")
        lines += [f"  {c['text']}" for c in result.changes] or ["  no change"]
    return "\n".join(lines) + ("\n" if lines else "")
