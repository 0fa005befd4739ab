"""The space a capacity search walks: the pools with the bounds each may move within (in
granules: a node, or a top-level domain), and the teams' reference guarantees the search scales
with them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from compiler.capacity.candidate import Candidate
from compiler.capacity.targets import MAX_NODES, BadInput, Bound


@dataclass(frozen=True)
class PoolSpace:
    name: str
    current: int
    minimum: int
    maximum: int
    gpus_per_node: int
    is_mig: bool
    gpu: str = ""
    layout: tuple[tuple[str, int], ...] = ()   # a fixed per-GPU MIG layout (profile, instances), if any
    # Nodes come in steps of this many: a pool with a regular topology has a whole number of
    # top-level domains (a block of 2 racks of 4 nodes: 8), else 1.
    granule: int = 1
    price: float = 1.0   # of a GPU hour (`pools[].cost`)

    @property
    def movable(self) -> bool:
        return self.minimum < self.maximum

    def cut_in(self, chosen: dict[str, str]) -> str:
        """"none", "planned" or "layout" (the policy's fixed layout): how the pool is cut given a
        candidate's MIG choices (else as the policy has it)."""
        own = ("layout" if self.layout else "planned") if self.is_mig else "none"
        return chosen.get(self.name, own)


@dataclass(frozen=True)
class TeamBase:
    """A team's guarantee in a reference the search scales: the policy's (`keep`), or the one its
    demand justifies (then `peak` is set for a team that borrows, and sets its burst)."""

    team: str
    guaranteed: int
    mig: tuple[tuple[str, int], ...]
    pools: tuple[str, ...] = ()     # every pool the team accepts, whole-GPU or MIG, as the policy has them
    burst: int | None = None        # the policy's burst (None: unlimited)
    peak: int | None = None         # demand, teams that borrow: the ceiling (TeamDemand.ceiling) its burst covers


@dataclass
class Space:
    pools: list[PoolSpace]
    teams: list[TeamBase]
    overcommit: float
    cuts: list[tuple[tuple[str, str], ...]]   # MIG choices to compare: () = the policy's own
    guarantees: str = "keep"                  # "keep" | "demand"
    demand: dict = field(default_factory=dict)  # cut -> [TeamBase] from the trace's offered load

    def mig_models(self, cut) -> list[str]:
        chosen = dict(cut)
        return [p.gpu for p in self.pools if p.cut_in(chosen) != "none"]

    def whole_gpus(self, candidate: Candidate) -> int:
        cut = dict(candidate.mig)
        return sum(n * p.gpus_per_node for p, (_, n) in zip(self.pools, candidate.nodes)
                   if p.cut_in(cut) == "none")

    def any_mig(self, cut: tuple[tuple[str, str], ...]) -> bool:
        chosen = dict(cut)
        return any(p.cut_in(chosen) != "none" for p in self.pools)


def space_from(pools: list[PoolSpace], bounds: dict[str, Bound]) -> list[PoolSpace]:
    """The pools with their bounds: a fixed pool keeps its nodes; by default 1 to twice today's
    (at most the nodes a pool may declare). A pool shaped in top-level domains keeps whole
    domains: its bounds narrow to the multiples of its granule they hold (BadInput if none)."""
    result = []
    for pool in pools:
        bound = bounds.get(pool.name)
        if bound is not None and bound.fixed:
            low = high = pool.current
        else:
            low = bound.minimum if bound is not None and bound.minimum is not None else 1
            high = bound.maximum if bound is not None and bound.maximum is not None else min(max(2 * pool.current, 1),
                                                                                             MAX_NODES)
            unit = pool.granule
            low, high = -(-low // unit) * unit, high // unit * unit
            if low > high:
                written = (f"{bound.minimum if bound and bound.minimum is not None else 1}.."
                           f"{bound.maximum if bound and bound.maximum is not None else 2 * pool.current}")
                raise BadInput(f"pool '{pool.name}' has whole top-level domains of {unit} nodes, and its bound "
                               f"({written}) holds no multiple of {unit}", pool.name)
        result.append(dataclasses.replace(pool, minimum=low, maximum=high))
    return result
