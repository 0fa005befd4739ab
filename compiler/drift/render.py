"""A drift report as text (a terminal), markdown (an issue a scheduled CI job opens) or JSON."""

from __future__ import annotations

import json
from typing import Any

from compiler.drift.detect import DriftReport

STATE_WORDS = {"missing": "missing (compiled, not on the cluster)",
               "extra": "extra (labelled as kueue-policy's, no longer compiled)",
               "changed": "changed"}


def _value(value: Any) -> str:
    if value is None:
        return "(absent)"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def _summary(report: DriftReport) -> str:
    if not report.drifted:
        return f"no drift: {report.compared} compiled object(s) match the cluster, and it is healthy"
    return (f"drift: {len(report.objects)} object(s) differ from what the policy compiles to, "
            f"{len(report.health)} health problem(s)")


def text(report: DriftReport) -> str:
    lines = [f"cluster {report.cluster}, live objects from {report.live_source}"]
    for drift in report.objects:
        where = f"  [{drift.source}]" if drift.source else ""
        lines.append(f"  {drift.state:<8} {drift.key}{where}")
        for change in drift.changes:
            lines.append(f"             {change.path}: {_value(change.desired)} -> {_value(change.live)} (live)")
    for problem in report.health:
        lines.append(f"  health   {problem.detail}")
    for kind in report.unread_kinds:
        lines.append(f"  note     {kind}: not read from the cluster (not served, or not in the export); not compared")
    lines.append(_summary(report))
    return "\n".join(lines)


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def markdown(report: DriftReport) -> str:
    title = "Drift" if report.drifted else "No drift"
    lines = [f"## {title} on cluster `{report.cluster}`", "", _summary(report) + ".", "",
             f"Live objects read from: {report.live_source}.", ""]
    if report.objects:
        lines += ["### Objects", "", "| object | state | field | compiled | live |", "|---|---|---|---|---|"]
        for drift in report.objects:
            rows = drift.changes or [None]
            for change in rows:
                field = f"`{_cell(change.path)}`" if change else ""
                desired = f"`{_cell(_value(change.desired))}`" if change else ""
                live = f"`{_cell(_value(change.live))}`" if change else ""
                lines.append(f"| {drift.key.kind} `{_cell(str(drift.key).split(' ', 1)[1])}` | "
                             f"{STATE_WORDS[drift.state]} | {field} | {desired} | {live} |")
        lines.append("")
    if report.health:
        lines += ["### Health", ""] + [f"- {_cell(p.detail)}" for p in report.health] + [""]
    if report.unread_kinds:
        lines += ["Not compared (not read from the cluster): " + ", ".join(report.unread_kinds) + ".", ""]
    return "\n".join(lines)


def as_json(report: DriftReport) -> str:
    return json.dumps(report.to_dict(), indent=2, sort_keys=False, default=str)
