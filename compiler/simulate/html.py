"""`simulate --html FILE`: one self-contained page (no network) with the charts of a run.

GPUs in use per team over time, the wait distribution per team, utilization per pool and the
quota tree. The data travels as one JSON island; the page's own script draws the charts as SVG,
so the file opens anywhere, from a CI artifact or a laptop, with nothing to fetch.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from compiler.core.errors import EnvironmentFailure
from compiler.simulate.driver import SimulationRun
from compiler.stages.quota_diagram import outline
from compiler.core.resources import GPU_RESOURCE
from compiler.simulate.metrics import percentile
from compiler.core.templating import render_text

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
        if change.resource != GPU_RESOURCE:
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


def page(report) -> str:
    summary = report.summary
    data = {"summary": {k: summary[k] for k in ("cluster", "run", "teams", "pools")},
            "usage": {"end": summary["run"]["end"], **usage_series(report.run)},
            "waits": wait_boxes(summary), "pools": summary["pools"], "domains": report.run.domains,
            "tree": outline(report.artifacts.report)}
    # No `<` in the JSON island (it can only stand inside a string, where \u003c reads the same),
    # so no `</script>` or `<!--` in a name ends or bends it; the title is escaped HTML. The page's
    # script writes every name as text, never as HTML.
    island = json.dumps(data, sort_keys=True, separators=(",", ":")).replace("<", "\\u003c")
    return render_text("simulate/report.html.j2", title=html.escape(f"kueue-policy simulation: {report.cluster}"),
                       data_json=island)


def write_page(path: Path, report) -> None:
    try:
        Path(path).write_text(page(report), encoding="utf-8")
    except OSError as error:
        raise EnvironmentFailure(f"cannot write {path}: {error.strerror or error}") from None
