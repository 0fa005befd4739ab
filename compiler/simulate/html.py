"""`simulate --html FILE`: one self-contained page (no network) with the charts of a run.

GPUs in use per team over time, the wait distribution per team, utilization per pool and the
quota tree. The data travels as one JSON island; the page's own script draws the charts as SVG,
so the file opens anywhere, from a CI artifact or a laptop, with nothing to fetch.
"""

from __future__ import annotations

import json
from pathlib import Path

from compiler.errors import EnvironmentFailure
from compiler.evaluator import load_manifests
from compiler.simulate.driver import SimulationRun
from compiler.simulate.metrics import GPU, percentile, quotas
from compiler.templating import render_text

MAX_SERIES = 12        # busiest teams drawn on their own; the rest are summed as "others"
MAX_POINTS = 800       # time points: every change, thinned evenly beyond this


def usage_series(run: SimulationRun) -> dict:
    """Whole GPUs in use per team over time, on one time grid so the chart can stack them: the
    busiest teams each on their own, the rest summed as "others"."""
    level: dict[str, int] = {}
    area: dict[str, int] = {}
    last: dict[str, int] = {}
    steps: list[tuple[int, dict[str, int]]] = []
    for change in run.timeline:
        if change.resource != GPU:
            continue
        team = change.team
        area[team] = area.get(team, 0) + level.get(team, 0) * (change.time - last.get(team, 0))
        last[team] = change.time
        level[team] = level.get(team, 0) + change.amount
        if steps and steps[-1][0] == change.time:
            steps[-1] = (change.time, dict(level))
        else:
            steps.append((change.time, dict(level)))
    busiest = sorted(area, key=lambda t: (-area[t], t))
    shown, others = sorted(busiest[:MAX_SERIES]), busiest[MAX_SERIES:]
    if len(steps) > MAX_POINTS:
        stride = len(steps) / MAX_POINTS
        steps = [steps[int(i * stride)] for i in range(MAX_POINTS)] + [steps[-1]]
    series = [{"team": team, "values": [levels.get(team, 0) for _, levels in steps]} for team in shown]
    if others:
        series.append({"team": f"others ({len(others)} teams)",
                       "values": [sum(levels.get(t, 0) for t in others) for _, levels in steps]})
    return {"times": [time for time, _ in steps], "series": series}


def wait_boxes(summary: dict) -> list[dict]:
    waits: dict[str, list[int]] = {}
    for job in summary["jobs"]:
        bucket = waits.setdefault(job["team"], [])
        if job["waited"] is not None:
            bucket.append(job["waited"])
    boxes = []
    for team in sorted(waits):
        values = waits[team]
        boxes.append({"team": team, "min": min(values, default=None), "p25": percentile(values, 0.25),
                      "p50": percentile(values, 0.5), "p75": percentile(values, 0.75),
                      "p95": percentile(values, 0.95), "max": max(values, default=None)})
    return boxes


def quota_tree(documents: list[dict]) -> list[dict]:
    """Cohorts and teams, depth first, each with its GPUs per flavor (shared or guaranteed)."""
    state = load_manifests(documents)
    per_queue, _ = quotas(state)
    shared: dict[str, list[dict]] = {}
    for name, cohort in state.cohorts.items():
        for group in cohort.resource_groups:
            for (flavor, resource), quota in sorted(group.quotas.items()):
                if resource == GPU and quota.nominal:
                    shared.setdefault(name, []).append({"flavor": flavor, "gpus": quota.nominal})
    children: dict[str | None, list[tuple[str, str]]] = {}
    for name, cohort in sorted(state.cohorts.items()):
        children.setdefault(cohort.parent, []).append(("cohort", name))
    for name, queue in sorted(state.cluster_queues.items()):
        children.setdefault(queue.cohort, []).append(("team", name))
    nodes: list[dict] = []

    def visit(kind: str, name: str, depth: int) -> None:
        if kind == "cohort":
            quota = shared.get(name, [])
        else:
            quota = [{"flavor": f, "gpus": per_queue[(f, r)][name]} for (f, r) in sorted(per_queue)
                     if r == GPU and name in per_queue[(f, r)]]
        nodes.append({"kind": kind, "name": name, "depth": depth, "quota": quota})
        if kind == "cohort":
            for child_kind, child in children.get(name, []):
                visit(child_kind, child, depth + 1)

    roots = [(k, n) for k, n in children.get(None, [])]
    for name in sorted(state.cohorts):   # a parent outside the input counts as a root
        parent = state.cohorts[name].parent
        if parent is not None and parent not in state.cohorts:
            roots.append(("cohort", name))
    for kind, name in roots:
        visit(kind, name, 0)
    return nodes


def page(report) -> str:
    summary = report.summary
    data = {"summary": {k: summary[k] for k in ("cluster", "run", "teams", "pools")},
            "usage": {"end": summary["run"]["end"], **usage_series(report.run)},
            "waits": wait_boxes(summary), "pools": summary["pools"],
            "tree": quota_tree([o.obj for o in report.artifacts.objects
                                if o.kind in ("ResourceFlavor", "Cohort", "ClusterQueue")])}
    # `</` cannot end the JSON island early: a name is never HTML.
    island = json.dumps(data, sort_keys=True, separators=(",", ":")).replace("</", "<\\/")
    return render_text("simulate/report.html.j2", title=f"kueue-policy simulation: {report.cluster}",
                       data_json=island)


def write_page(path: Path, report) -> None:
    try:
        Path(path).write_text(page(report), encoding="utf-8")
    except OSError as error:
        raise EnvironmentFailure(f"cannot write {path}: {error.strerror or error}") from None
