"""How a pool cut with MIG is cut: by its demand, with the planner's exact layouts.

`mig: planned` cuts the GPUs the teams' MIG guarantees need with the planner's exact minimal
layouts and cuts the rest of the pool the model's balanced way (compiler/stages/plan.py). A
balanced H100 has no 1g.20gb or 7g.80gb instance, so a pool whose demand is mostly those would
idle. `capacity` therefore gives each team MIG guarantees in proportion to its offered load,
scaled up (or down) to the largest multiple the pool's GPUs hold: `k x load` rounded up per team
and profile, the largest `k` (in quarters) for which the planner's fewest-GPUs plan fits. The
planner, not an estimate, decides every fit.
"""

from __future__ import annotations

import math
from functools import lru_cache

Demand = tuple[tuple[str, tuple[tuple[str, int], ...]], ...]   # ((team, ((profile, n), ...)), ...)

STEPS_PER_UNIT = 4   # k goes in quarters


def _scaled(demand: Demand, quarters: int) -> Demand:
    return tuple((team, tuple((p, math.ceil(n * quarters / STEPS_PER_UNIT)) for p, n in profiles))
                 for team, profiles in demand)


def _gpus_needed(model: str, demand: Demand) -> int:
    from compiler.mig.planner import plan_mig

    total: dict[str, int] = {}
    for _, profiles in demand:
        for profile, count in profiles:
            total[profile] = total.get(profile, 0) + count
    total = {p: n for p, n in total.items() if n > 0}
    return plan_mig(model, total).gpus if total else 0


def _fits_layout(layout: tuple[tuple[str, int], ...], gpus: int, demand: Demand) -> bool:
    """Whether a pool whose every GPU is cut `layout` holds the guarantees."""
    per_gpu = dict(layout)
    total: dict[str, int] = {}
    for _, profiles in demand:
        for profile, count in profiles:
            total[profile] = total.get(profile, 0) + count
    return all(count <= per_gpu.get(profile, 0) * gpus for profile, count in total.items())


@lru_cache(maxsize=256)
def fill_pool(model: str, gpus: int, demand: Demand, layout: tuple[tuple[str, int], ...] = ()) -> Demand:
    """The teams' MIG guarantees, proportional to `demand`, that fill at most `gpus` GPUs: cut by
    the planner, or, for a pool with a fixed `layout` (profile, instances a GPU), as the layout
    cuts every GPU (a profile the layout lacks cannot be guaranteed there)."""
    if layout:
        offered = dict(layout)
        demand = tuple((team, tuple((p, n) for p, n in profiles if p in offered)) for team, profiles in demand)
    instances = sum(n for _, profiles in demand for _, n in profiles)
    if not instances or gpus <= 0:
        return tuple((team, ()) for team, _ in demand)
    # At most 7 instances a GPU: k x instances cannot pass 7 x gpus.
    low, high = 0, math.ceil(STEPS_PER_UNIT * 7 * gpus / instances)
    while low < high:
        middle = (low + high + 1) // 2
        scaled = _scaled(demand, middle)
        if _fits_layout(layout, gpus, scaled) if layout else _gpus_needed(model, scaled) <= gpus:
            low = middle
        else:
            high = middle - 1
    return _scaled(demand, low)
