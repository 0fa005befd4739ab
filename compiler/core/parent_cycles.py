"""Parent links that go round in a cycle (cohorts: a policy's, or a cluster export's)."""

from __future__ import annotations

from typing import Mapping


def cycles(parents: Mapping[str, str | None]) -> list[list[str]]:
    """Every cycle of `parents` (name -> parent name, None at a root; a parent missing from the
    mapping is a root), once each, as the names in parent order from the first of them in the
    mapping's order: the policy reports a cycle where its first cohort is written."""
    found: list[list[str]] = []
    members: set[str] = set()
    for name in parents:
        if name in members:
            continue
        walk, current = [name], parents.get(name)
        while current is not None and current not in walk and current not in members:
            walk.append(current)
            current = parents.get(current)
        if current is not None and current in walk:
            cycle = walk[walk.index(current):]
            first = min(cycle, key=list(parents).index)
            start = cycle.index(first)
            found.append(cycle[start:] + cycle[:start])
            members.update(cycle)
    return found
