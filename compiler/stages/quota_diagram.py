"""The quota tree of a cluster as a Mermaid `flowchart TD`: cohorts, teams, and the GPUs each holds
(guaranteed and burst per flavor for teams, the shared quota for the root cohort).

Built from report.json data, so REPORT.md, the pull request and the `simulate --html` page (which
draws `outline`, the same nodes and lines as an indented list) show the same picture. Node ids
never contain the user's text as such: `c_`/`t_`/`k_` plus the name with every character outside
[A-Za-z0-9] written as `_xx` (its hex code), so any valid name (and names such as `end`, Mermaid's
keyword) makes a valid, unique id. Labels are quoted and escaped with Mermaid's entity codes.
Output is deterministic: cohorts and teams by name.
"""

from __future__ import annotations

from typing import Iterable

from compiler.core.resources import GPU_RESOURCE, MIG_PREFIX



def node_id(kind: str, name: str) -> str:
    return kind + "_" + "".join(ch if ch.isascii() and ch.isalnum() else f"_{ord(ch):02x}" for ch in name)


_ENTITIES = {"&": "#amp;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "#": "#35;", "|": "#124;",
             "[": "#91;", "]": "#93;", "{": "#123;", "}": "#125;", "`": "#96;"}


def label_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label (entity codes for what Mermaid or HTML would read)."""
    return "".join(_ENTITIES.get(ch, ch) for ch in str(text))


def _label(*lines: str) -> str:
    return '["' + "<br/>".join(label_text(line) for line in lines) + '"]'


def _team_lines(team: dict) -> list[str]:
    lines = [f"team {team['name']}"]
    for flavor in team.get("flavors", []):
        resource = flavor["resource"]
        if resource != GPU_RESOURCE and not flavor.get("guaranteed"):
            continue
        unit = "GPUs" if resource == GPU_RESOURCE else f"x {resource[len(MIG_PREFIX):]}"
        burst = "unlimited" if flavor.get("burst") is None else flavor["burst"]
        lines.append(f"{flavor['flavor']}: {flavor['guaranteed']} {unit} guaranteed, burst {burst}")
    return lines


def _shared_lines(report: dict) -> list[str]:
    lines = []
    for pool in report.get("pools", []):
        if pool.get("shared"):
            lines.append(f"shared on {pool['name']}: {pool['shared']} GPUs")
        for profile, count in sorted((pool.get("migInstances") or {}).items()):
            spare = count - (pool.get("migGuaranteed") or {}).get(profile, 0)
            if spare > 0:
                lines.append(f"shared on {pool['name']}: {spare} x {profile}")
    return lines


def _ancestors(cohorts: dict[str, dict], start: str | None) -> list[str]:
    chain, seen = [], set()
    while start is not None and start in cohorts and start not in seen:
        seen.add(start)
        chain.append(start)
        start = cohorts[start].get("parent")
    return chain


def mermaid(report: dict, only_teams: Iterable[str] | None = None) -> str:
    """`flowchart TD` source for the cluster's quota tree (or the part holding `only_teams`)."""
    root = report.get("rootCohort")
    cohorts = {c["name"]: c for c in report.get("cohorts", [])}
    if root:
        cohorts.setdefault(root, {"name": root, "parent": None})
    teams = sorted(report.get("teams", []), key=lambda t: t["name"])
    if only_teams is not None:
        wanted = set(only_teams)
        teams = [t for t in teams if t["name"] in wanted]
    keep = set(cohorts) if only_teams is None else {c for t in teams for c in _ancestors(cohorts, t.get("cohort"))}
    cluster = report.get("cluster", "cluster")
    lines = ["flowchart TD"]
    if not root:
        lines.append(f"  {node_id('k', cluster)}{_label(f'cluster {cluster}', *_shared_lines(report))}")
    for name in sorted(keep):
        title = f"cohort {name}" + (" (root: shared quota)" if name == root else "")
        extra = _shared_lines(report) if name == root else []
        lines.append(f"  {node_id('c', name)}{_label(title, *extra)}")
    for team in teams:
        lines.append(f"  {node_id('t', team['name'])}{_label(*_team_lines(team))}")
    for name in sorted(keep):
        parent = cohorts[name].get("parent")
        if parent in keep:
            lines.append(f"  {node_id('c', parent)} --> {node_id('c', name)}")
    for team in teams:
        if team.get("cohort") in keep:
            lines.append(f"  {node_id('c', team['cohort'])} --> {node_id('t', team['name'])}")
        elif not root:
            lines.append(f"  {node_id('k', cluster)} -.-> {node_id('t', team['name'])}")
    return "\n".join(lines) + "\n"


def outline(report: dict) -> list[dict]:
    """The same tree as `mermaid`, depth first, for pages that draw it themselves: each node is
    {"kind": "cluster" | "cohort" | "team", "name", "depth", "lines"}, `lines` being the text under
    the node's title in the Mermaid label (guaranteed and burst per flavor, or the shared quota)."""
    root = report.get("rootCohort")
    cohorts = {c["name"]: c for c in report.get("cohorts", [])}
    if root:
        cohorts.setdefault(root, {"name": root, "parent": None})
    children: dict[str | None, list[tuple[str, str]]] = {}
    for name in sorted(cohorts):
        parent = cohorts[name].get("parent")
        children.setdefault(parent if parent in cohorts else None, []).append(("cohort", name))
    teams = {t["name"]: t for t in report.get("teams", [])}
    for name in sorted(teams):
        cohort = teams[name].get("cohort")
        children.setdefault(cohort if cohort in cohorts else None, []).append(("team", name))
    nodes: list[dict] = []

    def visit(kind: str, name: str, depth: int) -> None:
        if kind == "team":
            lines = _team_lines(teams[name])[1:]
        else:
            lines = _shared_lines(report) if name == root else []
        nodes.append({"kind": kind, "name": name, "depth": depth, "lines": lines})
        for child_kind, child in children.get(name, []) if kind == "cohort" else []:
            visit(child_kind, child, depth + 1)

    top = children.get(None, [])
    if not root:   # as in the Mermaid chart: the cluster holds the teams outside every cohort
        nodes.append({"kind": "cluster", "name": report.get("cluster", "cluster"), "depth": 0,
                      "lines": _shared_lines(report)})
        for kind, name in top:
            if kind == "team":
                visit(kind, name, 1)
    for kind, name in top:
        if root or kind == "cohort":
            visit(kind, name, 0)
    return nodes
