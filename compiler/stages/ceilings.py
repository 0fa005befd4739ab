"""A team's ceilings: the team-wide `burst` split into Kueue's per-flavor borrowing limits, and
what each team is guaranteed, can reach and lends, per pool and in total.

Kueue limits borrowing per flavor only (a ClusterQueue's and a Cohort's `borrowingLimit` are
both per flavor and resource): nothing bounds a queue's usage summed over flavors. So a
`burst` written on every flavor lets a team on two pools reach `guaranteed + 2 x burst`. The
compiler instead splits `burst` over the team's whole-GPU flavors, those holding its guarantee
first, then in the team's preference order, each flavor taking what it can lend the team (its
quota in the cohort tree minus the team's own guarantee there) until the burst is spent. The limits then sum to at most `burst`,
so `guaranteed + burst` is a hard ceiling of the team's whole GPUs, whatever the other teams do.
The trade-off (docs/concepts.md, Ceilings): a flavor given no part of the burst stays shut to
the team's borrowing while another has room.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from compiler.core.resources import CPU, GPU_RESOURCE, MEMORY
from compiler.stages.plan import Placement
from compiler.stages.resolved_model import ResolvedCluster, ResolvedTeam

if TYPE_CHECKING:  # build imports this module; the types are only for annotations here
    from compiler.stages.build import BuildResult


def burst_split(cluster: ResolvedCluster, placement: Placement, team: ResolvedTeam) -> dict[str, int] | None:
    """pool -> the GPUs of the team's `burst` its flavor may borrow; None: no limit (no burst
    written, or no cohort to borrow from). The pools holding the team's guarantee first, then
    preference order; each takes at most what its quota in the cohort tree (all GPUs, or the
    guarantees when overcommitted) leaves beyond the team's own guarantee there, so no part of
    the burst is parked where it could never be used."""
    burst = team.spec.gpus.burst
    if burst is None or team.cohort is None:
        return None
    placed = placement.gpus.get(team.name, {})
    left = burst
    split: dict[str, int] = {}
    # Flavors holding the guarantee first: Kueue gives a pod set one flavor, so a job of
    # guaranteed + burst GPUs can only run where the guarantee and the burst sit together.
    for pool in sorted(team.gpu_pools, key=lambda p: placed.get(p.name, 0) == 0):
        in_tree = max(pool.gpus, placement.guaranteed_on(pool.name))
        take = min(left, max(0, in_tree - placed.get(pool.name, 0)))
        split[pool.name] = take
        left -= take
    return split


@dataclass(frozen=True)
class FlavorCeiling:
    """One flavor and device resource of a team: GPUs (or MIG instances) guaranteed, the most it
    can hold there (guarantee plus what it may borrow and the cohort can lend) and what it lends."""

    flavor: str
    resource: str
    guaranteed: int
    reachable: int
    lendable: int


@dataclass(frozen=True)
class TeamCeiling:
    flavors: tuple[FlavorCeiling, ...]

    def total(self, field: str) -> int:
        """Whole GPUs over every flavor (MIG instances are counted per profile, not here)."""
        return sum(getattr(row, field) for row in self.flavors if row.resource == GPU_RESOURCE)

    def totals(self) -> dict[str, int]:
        return {"guaranteed": self.total("guaranteed"), "reachable": self.total("reachable"),
                "lendable": self.total("lendable")}


def team_ceilings(cluster: ResolvedCluster, build: "BuildResult") -> dict[str, TeamCeiling]:
    """team -> its ceilings, from the quotas exactly as emitted. What a team can reach on a
    flavor is its nominal quota plus the least of its borrowing limit and what the rest of the
    tree lends there (the root cohort's shared quota and every other team's lendable part)."""
    in_cohort = {team.name: team.cohort is not None for team in cluster.teams}
    lent: dict[tuple[str, str], Fraction] = {}
    for flavor, resources in build.root_quota.items():
        for resource, quota in resources.items():
            lent[(flavor, resource)] = lent.get((flavor, resource), Fraction(0)) + quota.nominal
    for team, flavors in build.quota.items():
        if not in_cohort.get(team):
            continue
        for flavor, resources in flavors.items():
            for resource, quota in resources.items():
                lent[(flavor, resource)] = lent.get((flavor, resource), Fraction(0)) + quota.lendable
    result: dict[str, TeamCeiling] = {}
    for team, flavors in build.quota.items():
        rows = []
        for flavor, resources in flavors.items():
            for resource, quota in resources.items():
                if resource in (CPU, MEMORY):
                    continue
                if not in_cohort.get(team):
                    rows.append(FlavorCeiling(flavor, resource, int(quota.nominal), int(quota.nominal), 0))
                    continue
                others = lent.get((flavor, resource), Fraction(0)) - quota.lendable
                borrow = others if quota.borrowing_limit is None else min(others, quota.borrowing_limit)
                rows.append(FlavorCeiling(flavor, resource, int(quota.nominal), int(quota.nominal + max(borrow, 0)),
                                          int(quota.lendable)))
        result[team] = TeamCeiling(tuple(rows))
    return result
