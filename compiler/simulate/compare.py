"""What a policy change does to the same trace: per team, before and after.

`simulate --compare REV` and the what-if section of `diff`/`pr` print these rows, e.g.
`alpha  p95 wait  2.1 h -> 4.0 h`.
"""

from __future__ import annotations

# (label, where in a team's summary, unit, higher is better)
TEAM_METRICS = (
    ("p50 wait", ("wait", "p50"), "duration", False),
    ("p95 wait", ("wait", "p95"), "duration", False),
    ("max wait", ("wait", "max"), "duration", False),
    ("never started", ("neverStarted",), "count", False),
    ("GPU-hours", ("gpuHours",), "hours", True),
    ("borrowed GPU-hours", ("borrowedGpuHours",), "hours", True),
    ("preemptions suffered", ("preemptionsSuffered",), "count", False),
)


def human_duration(seconds: float | int | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:g} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def show(value, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "duration":
        return human_duration(value)
    if unit == "hours":
        return f"{value:,.1f}"
    return str(value)


def _lookup(team: dict, path: tuple[str, ...]):
    value = team
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def compare(before: dict, after: dict) -> list[dict]:
    """Every metric of every team that differs between two `simulate` summaries."""
    teams_before = {t["team"]: t for t in before["teams"]}
    teams_after = {t["team"]: t for t in after["teams"]}
    rows = []
    for team in sorted(set(teams_before) | set(teams_after)):
        old, new = teams_before.get(team, {}), teams_after.get(team, {})
        for label, path, unit, higher_is_better in TEAM_METRICS:
            a, b = _lookup(old, path), _lookup(new, path)
            if a == b:
                continue
            worse = None
            if a is not None and b is not None:
                worse = (b < a) if higher_is_better else (b > a)
            rows.append({"team": team, "metric": label, "before": a, "after": b, "unit": unit,
                         "worse": worse, "text": f"{team} {label} {show(a, unit)} -> {show(b, unit)}"})
    return rows
