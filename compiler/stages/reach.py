"""GPUs no team can ever use. A pool's GPUs that nobody is guaranteed are used only by
borrowing, and Kueue bounds borrowing per flavor: each team's `borrowingLimit` there. When the
guarantees placed on a pool plus every limit that lets a team borrow on it add up to less than
the pool's GPUs, the rest stay idle whatever the demand. The usual cause is the team-wide burst
(docs/concepts.md, "Ceilings"): it sits on the pools holding each team's guarantee, so a pool
that holds few guarantees is shut to every other team's borrowing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from compiler.core import codes
from compiler.core.errors import DiagnosticSink
from compiler.core.resources import GPU_RESOURCE
from compiler.stages.resolved_model import ResolvedCluster

if TYPE_CHECKING:  # build imports the stages this module's callers use; annotations only
    from compiler.stages.build import BuildResult


@dataclass(frozen=True)
class PoolReach:
    """How many of a whole-GPU pool's GPUs can be in use at once, at most."""

    pool: str
    gpus: int
    guaranteed: int          # the teams' nominal quota there, as emitted
    borrowers: int           # teams in a cohort that accept the pool
    borrowable: int | None   # the sum of their borrowingLimits there; None: unlimited

    @property
    def usable(self) -> int:
        return self.gpus if self.borrowable is None else min(self.gpus, self.guaranteed + self.borrowable)


def pool_reach(cluster: ResolvedCluster, built: "BuildResult") -> list[PoolReach]:
    """Every whole-GPU pool, and how far its guarantees and the teams' borrowing reach, from the
    quotas exactly as emitted (a team's verbatim Kueue quotas included)."""
    result = []
    for pool in cluster.pools:
        if pool.is_mig:
            continue
        guaranteed, borrowers = 0, 0
        borrowable: int | None = 0
        for team in cluster.teams:
            quota = built.quota.get(team.name, {}).get(pool.flavor, {}).get(GPU_RESOURCE)
            if quota is None:
                continue   # the team does not accept the pool
            guaranteed += int(quota.nominal)
            if team.cohort is None:
                continue   # outside every cohort a team never borrows
            borrowers += 1
            if quota.borrowing_limit is None:
                borrowable = None
            elif borrowable is not None:
                borrowable += int(quota.borrowing_limit)
        result.append(PoolReach(pool.name, pool.gpus, guaranteed, borrowers, borrowable))
    return result


def warn_unreachable(cluster: ResolvedCluster, built: "BuildResult", sink: DiagnosticSink) -> None:
    for reach in pool_reach(cluster, built):
        idle = reach.gpus - reach.usable
        if idle <= 0:
            continue
        if reach.borrowers == 0:
            why = ("no team that may borrow accepts it (a team outside every cohort never borrows). Give a team "
                   f"a guarantee on '{reach.pool}', or put the teams that accept it in a cohort")
        else:
            why = (f"the teams may borrow {reach.borrowable} more there (the sum of their borrowingLimits on it; "
                   "a team's burst sits on the pools holding its guarantee first). Give some teams part of their "
                   f"guarantee on '{reach.pool}', a burst larger than their first pools can lend, or no burst")
        sink.warning(
            codes.UNREACHABLE_GPUS,
            f"pool '{reach.pool}': at most {reach.usable} of its {reach.gpus} GPUs can ever be in use, so "
            f"{idle} stay idle whatever the demand: {reach.guaranteed} are guaranteed and {why}",
            cluster.located.position("spec", "pools", cluster.pool(reach.pool).index))
