"""`diff --exit-code`: does a change make anything worse for a team?

Worse means a declared workload's verdict moves right on guaranteed -> borrowing -> never (a
workload that stays declared), or a team's quota goes down: for some resource, the sum over its
flavors of the guaranteed quota, or of the burst (unlimited counts as more than any number), is
lower after the change; a removed team loses its whole quota. Moving quota between flavors is
not a loss.
"""

from __future__ import annotations

from fractions import Fraction

from compiler.deliver.semantic_diff import QUOTA_FIELDS, PolicyDiff, QuotaChange, TeamDiff
from compiler.core.quantity import QuantityError, parse_quantity

UNLIMITED = None


def _total(changes: list[QuotaChange], side: str, resource: str, field: str) -> Fraction | None:
    """Sum of one quota field over the flavors of a resource on one side; None = unlimited."""
    total = Fraction(0)
    for change in changes:
        values = getattr(change, side)
        if change.resource != resource or values is None:
            continue
        value = values.get(field)
        if value is None:
            if field == "burst":
                return UNLIMITED
            continue
        try:
            total += parse_quantity(value)
        except QuantityError:
            continue
    return total


def _lowered(before: Fraction | None, after: Fraction | None) -> bool:
    if before is UNLIMITED:
        return after is not UNLIMITED
    return after is not UNLIMITED and after < before


def _quota_losses(cluster: str, team: TeamDiff) -> list[str]:
    losses = []
    for resource in sorted({c.resource for c in team.quotas}):
        for field in QUOTA_FIELDS[:2]:   # guaranteed and burst; lending less is not a loss to the team
            before = _total(team.quotas, "before", resource, field)
            after = _total(team.quotas, "after", resource, field)
            if _lowered(before, after):
                shown = lambda v: "unlimited" if v is UNLIMITED else str(v)  # noqa: E731
                losses.append(f"{cluster}/{team.name}: {field} {resource} goes down from {shown(before)} "
                              f"to {shown(after)}")
    return losses


def worse(diff: PolicyDiff) -> list[str]:
    """One line per thing that got worse, in a stable order (empty: nothing did)."""
    found: list[str] = []
    for cluster in diff.clusters:
        for team in cluster.teams:
            for workload in team.workloads:
                if workload.before is not None and workload.after is not None and workload.regressed:
                    found.append(f"{cluster.name}/{team.name}/{workload.name}: {workload.before} -> {workload.after}")
            found.extend(_quota_losses(cluster.name, team))
    return found
