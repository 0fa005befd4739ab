"""Exact minimal MIG layout planning for one GPU model.

Problem: a demand `{profile: instances}` for one model; choose a placeable layout for each GPU so
that the layouts together hold at least the demanded instances, using as few GPUs as possible.

Method (exact, not a heuristic):
1. enumerate every placeable per-GPU multiset over the demanded profiles (placement.py; at most a
   few hundred);
2. closed-form lower bounds (compute slices, memory slices, the half-GPU rule for 3g/4g, per-profile
   max counts, one +me per GPU) and the LP relaxation bound;
3. integer programs (set multicover, scipy.optimize.milp / HiGHS), solved lexicographically:
   a. fewest GPUs;                                   (the objective; always proven optimal)
   b. with that many GPUs, fewest distinct layouts;  (each is one mig-manager config and label)
   c. then most GPUs on a config NVIDIA ships (all-balanced, all-<profile>), searched among the
      layouts of b's plan and the shipped configs (a tie-break, kept cheap).
Layouts are maximal among the demanded profiles (spare instances fill each GPU, so no slice is
left unconfigured), or a shipped config.
Steps b and c run under a deterministic branch-and-bound node limit; if it is hit, the best
solution found is kept and `secondary_proven` is False (the GPU count stays proven).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Mapping

from compiler.core import codes
from compiler.core.errors import Diagnostic, PolicyError
from compiler.mig.catalogue import Catalogue, GpuModel, canonical_profile_name, load_catalogue
from compiler.mig.placement import (Layout, canonical_layout, feasible_layouts, find_placement,
                                    maximal_layouts)

# Deterministic effort limit for the secondary objectives (the primary one is never limited).
SECONDARY_NODE_LIMIT = 2000


@dataclass(frozen=True)
class LayoutCount:
    count: int                     # GPUs that get this layout
    profiles: dict[str, int]       # instances per GPU, by profile name

    def to_dict(self) -> dict:
        return {"count": self.count, "profiles": dict(sorted(self.profiles.items()))}


@dataclass
class PlanResult:
    model: str
    demand: dict[str, int]
    gpus: int                              # GPUs the optimal plan uses (even when infeasible)
    layouts: list[LayoutCount]
    lower_bound: int
    feasible: bool = True                  # False: the plan needs more than gpus_available
    message: str = ""
    gpus_available: int | None = None
    bounds: dict[str, int] = field(default_factory=dict)   # each lower bound by name
    secondary_proven: bool = True          # fewest distinct layouts / shipped preference proven
    # Seconds from the call to the proven GPU optimum (benchmarks); never part of the output.
    optimum_seconds: float = field(default=0.0, compare=False, repr=False)

    def to_dict(self) -> dict:
        out = {"gpus": self.gpus, "layouts": [layout.to_dict() for layout in self.layouts],
               "lowerBound": self.lower_bound, "model": self.model, "feasible": self.feasible,
               "demand": dict(sorted(self.demand.items())), "bounds": dict(sorted(self.bounds.items())),
               "secondaryProven": self.secondary_proven}
        if self.gpus_available is not None:
            out["gpusAvailable"] = self.gpus_available
        if self.message:
            out["message"] = self.message
        return out


def validate_demand(model: GpuModel | str, demand: Mapping[str, int],
                    catalogue: Catalogue | None = None) -> GpuModel:
    """The model (looked up once, here, when given by name), or a PolicyError naming every
    unknown model/profile and bad count."""
    cat = catalogue or load_catalogue()
    gpu = model if isinstance(model, GpuModel) else cat.model(model)
    if gpu is None:
        raise PolicyError([Diagnostic(codes.MIG_UNKNOWN_MODEL, cat.describe_unknown_model(model))])
    problems = []
    for name, count in sorted(demand.items()):
        if gpu.profile_named(name) is None:
            problems.append(Diagnostic(codes.MIG_UNKNOWN_PROFILE, cat.describe_unknown_profile(gpu.name, name)))
        elif isinstance(count, bool) or not isinstance(count, int) or count < 0:
            problems.append(Diagnostic(codes.MIG_BAD_DEMAND,
                                       f"demand for {name} must be a whole number >= 0, got {count!r}"))
    if problems:
        raise PolicyError(problems)
    return gpu


def canonical_demand(gpu: GpuModel, demand: Mapping[str, int]) -> dict[str, int]:
    """Demand keyed by the nvidia-smi profile names (`mig-1g.10gb.me` -> `1g.10gb+me`), zero
    counts dropped, counts of two spellings of one profile added."""
    result: dict[str, int] = {}
    for name, count in demand.items():
        key = name if name in gpu.profiles else canonical_profile_name(name)
        if count:
            result[key] = result.get(key, 0) + int(count)
    return dict(sorted(result.items()))


def lower_bounds(gpu: GpuModel, demand: Mapping[str, int]) -> dict[str, int]:
    """Closed-form lower bounds on the number of GPUs (see the module doc)."""
    wanted = {n: c for n, c in demand.items() if c}
    if not wanted:
        return {"compute": 0, "memory": 0, "halfGpu": 0, "perProfile": 0, "mediaExtension": 0}
    profiles = {n: gpu.profiles[n] for n in wanted}
    compute = math.ceil(sum(p.compute_slices * wanted[n] for n, p in profiles.items()) / gpu.compute_slices)
    memory = math.ceil(sum(p.memory_slices * wanted[n] for n, p in profiles.items()) / gpu.memory_slices)
    per_profile = max(math.ceil(wanted[n] / p.max_count) for n, p in profiles.items())
    media = sum(wanted[n] for n, p in profiles.items() if p.is_media_extension)
    # A GPU holds at most one full-size instance, and at most two instances of half the memory
    # slices or more, of which at most one bigger than a half in compute (4g on seven-slice).
    full = sum(wanted[n] for n, p in profiles.items() if p.memory_slices == gpu.memory_slices)
    half = sum(wanted[n] for n, p in profiles.items()
               if gpu.memory_slices // 2 <= p.memory_slices < gpu.memory_slices)
    big_half = sum(wanted[n] for n, p in profiles.items()
                   if gpu.memory_slices // 2 <= p.memory_slices < gpu.memory_slices
                   and p.compute_slices * 2 > gpu.compute_slices)
    half_gpu = full + max(big_half, math.ceil(half / 2))
    return {"compute": compute, "memory": memory, "halfGpu": half_gpu,
            "perProfile": per_profile, "mediaExtension": media}


def _shipped(gpu: GpuModel) -> set[Layout]:
    return {canonical_layout(layout) for layout in gpu.shipped_layouts().values()}


def _solve(cost, integrality, bounds, constraints, node_limit: int | None):
    from scipy.optimize import milp

    options = {"presolve": True}
    if node_limit is not None:
        options["node_limit"] = node_limit
    return milp(cost, integrality=integrality, bounds=bounds, constraints=constraints, options=options)


@contextlib.contextmanager
def _quiet_native_output():
    """HiGHS (inside scipy) occasionally prints debug lines straight to file descriptor 1, which
    would corrupt `--format json` output; point fd 1 at /dev/null while it runs."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


@dataclass
class _Program:
    """The set-multicover program over one model's candidate layouts (numpy arrays)."""

    layouts: list[Layout]
    shipped: set[Layout]
    matrix: object      # instances of each demanded profile (rows) per layout (columns)
    need: object        # demanded instances per profile
    useful: object      # per layout: more copies than this never help

    @property
    def size(self) -> int:
        return len(self.layouts)


def plan_mig(model: GpuModel | str, demand: Mapping[str, int], gpus_available: int | None = None,
             catalogue: Catalogue | None = None) -> PlanResult:
    """The fewest GPUs of `model` whose placeable layouts hold `demand`; see the module doc.

    Raises PolicyError for an unknown model or profile or a bad count. A demand that does not fit
    `gpus_available` is not an exception: the result has feasible=False and a message."""
    started = time.perf_counter()
    gpu = validate_demand(model, demand, catalogue)
    wanted = canonical_demand(gpu, demand)
    if gpus_available is not None and gpus_available < 0:
        raise PolicyError([Diagnostic(codes.MIG_BAD_DEMAND, f"--gpus must be >= 0, got {gpus_available}")])
    bounds = lower_bounds(gpu, wanted)
    if not wanted:
        return PlanResult(gpu.name, {}, 0, [], 0, True, "", gpus_available, bounds)
    program = _program(gpu, wanted)
    best_gpus, solution, relaxation = _fewest_gpus(program)                       # (a)
    optimum_seconds = time.perf_counter() - started
    bounds["linearRelaxation"] = int(math.ceil(relaxation.fun - 1e-7)) if relaxation.status == 0 else 0
    lower = max(bounds.values())
    solution, proven = _secondary_goals(program, best_gpus, solution, relaxation)  # (b), (c)
    plan = _checked_plan(gpu, program, solution)
    feasible = gpus_available is None or best_gpus <= gpus_available
    message = "" if feasible else (
        f"the MIG demand needs {best_gpus} {gpu.name} GPUs (lower bound {lower}), "
        f"only {gpus_available} available")
    return PlanResult(gpu.name, dict(sorted(wanted.items())), best_gpus, plan, lower, feasible,
                      message, gpus_available, bounds, proven, optimum_seconds)


def _program(gpu: GpuModel, wanted: Mapping[str, int]) -> _Program:
    """Candidate layouts and the covering program over them.

    Every feasible layout is contained in a maximal one (maximal among the demanded profiles),
    and surplus instances are allowed, so maximal layouts lose nothing for (a) and (b); the
    shipped configs are added so that (c) can prefer them."""
    # numpy/scipy are imported here, not at module level: every kueue-policy command imports this
    # module through the compiler, and scipy.optimize alone costs ~0.7 s of start-up.
    import numpy as np

    names = sorted(wanted)
    feasible = feasible_layouts(gpu, names)
    shipped = {layout for layout in _shipped(gpu) if all(name in wanted for name, _ in layout)}
    layouts = sorted(set(maximal_layouts(feasible)) | shipped)
    matrix = np.array([[dict(layout).get(p, 0) for layout in layouts] for p in names], dtype=float)
    need = np.array([wanted[p] for p in names], dtype=float)
    # More copies of a layout than max over its profiles of ceil(demand / per-GPU count) are never
    # useful (dropping one still covers): a tight upper bound per variable.
    useful = np.array([max(math.ceil(wanted[p] / c) for p, c in layout) for layout in layouts],
                      dtype=float)
    return _Program(layouts, shipped, matrix, need, useful)


def _fewest_gpus(program: _Program):
    """(a): the proven fewest GPUs, one plan with that many, and the LP relaxation (its bound and
    duals serve the later steps)."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, linprog

    n = program.size
    cover = LinearConstraint(program.matrix, lb=program.need, ub=np.inf)
    with _quiet_native_output():
        result = _solve(np.ones(n), np.ones(n), Bounds(0, program.useful), [cover], None)
        relaxation = linprog(np.ones(n), A_ub=-program.matrix, b_ub=-program.need, bounds=(0, None),
                             method="highs")
    if result.status != 0 or result.x is None:     # cannot happen: one instance per GPU always fits
        raise RuntimeError(f"MIG planner: the solver failed ({result.message})")
    return int(round(result.fun)), np.round(result.x).astype(int), relaxation


def _layout_caps(program: _Program, best_gpus: int, relaxation):
    """Per layout, the most copies an optimal plan can hold.

    Reduced-cost fixing (exact): with LP duals d >= 0 and reduced costs r = 1 - d.A >= 0, every
    cover x satisfies sum(x) >= d.need + r.x, so a plan with best_gpus GPUs has
    r_L * x_L <= best_gpus - LP for each layout. Layouts with a larger reduced cost cannot
    appear in any optimal plan; the others get a tighter bound. This keeps (b) and (c) small."""
    import numpy as np

    caps = np.minimum(program.useful, float(best_gpus))
    if relaxation.status == 0:
        duals = -np.asarray(relaxation.ineqlin.marginals)
        reduced = 1.0 - duals @ program.matrix
        slack = best_gpus - relaxation.fun + 1e-7
        for i in range(program.size):
            if reduced[i] > 1e-9:
                caps[i] = min(caps[i], math.floor(slack / reduced[i]))
    return caps


def _secondary_goals(program: _Program, best_gpus: int, solution, relaxation):
    """(b) fewest distinct layouts with exactly best_gpus GPUs (x_L <= cap_L * y_L), then (c).
    Returns the plan and whether both goals were proven within the node limit."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint

    n = program.size
    caps = _layout_caps(program, best_gpus, relaxation)
    link = LinearConstraint(np.hstack([np.eye(n), -np.diag(caps)]), lb=-np.inf, ub=0)
    cover = LinearConstraint(np.hstack([program.matrix, np.zeros_like(program.matrix)]), lb=program.need, ub=np.inf)
    total = LinearConstraint(np.hstack([np.ones((1, n)), np.zeros((1, n))]), lb=best_gpus, ub=best_gpus)
    var_bounds = Bounds(np.zeros(2 * n), np.concatenate([caps, np.ones(n)]))
    with _quiet_native_output():
        second = _solve(np.concatenate([np.zeros(n), np.ones(n)]), np.ones(2 * n), var_bounds,
                        [cover, total, link], SECONDARY_NODE_LIMIT)
    if second.x is None or second.status not in (0, 1):
        return solution, False
    candidate = np.round(second.x[:n]).astype(int)
    if np.count_nonzero(candidate) <= np.count_nonzero(solution):
        solution = candidate
    solution, third_proven = _prefer_shipped(program, caps, solution, int(round(second.fun)),
                                             [cover, total, link])
    return solution, second.status == 0 and third_proven


def _prefer_shipped(program: _Program, caps, solution, best_distinct: int, constraints: list):
    """(c) with that many distinct layouts: most GPUs on configs NVIDIA ships. Skipped when (b)
    already puts every GPU on one (nothing to improve). The search is over the layouts of (b)'s
    plan plus the shipped configs: a tie-break among equally good plans, kept small so that it
    never dominates the run time."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint

    n = program.size
    off_shipped = np.array([0.0 if program.layouts[i] in program.shipped else 1.0 for i in range(n)])
    if float(off_shipped @ solution) <= 0:
        return solution, True
    distinct = LinearConstraint(np.concatenate([np.zeros(n), np.ones(n)])[None, :], lb=-np.inf, ub=best_distinct)
    allowed = np.array([1.0 if solution[i] or program.layouts[i] in program.shipped else 0.0 for i in range(n)])
    third_bounds = Bounds(np.zeros(2 * n), np.concatenate([caps * allowed, allowed]))
    with _quiet_native_output():
        third = _solve(np.concatenate([off_shipped, np.zeros(n)]), np.ones(2 * n), third_bounds,
                       [*constraints, distinct], SECONDARY_NODE_LIMIT)
    if third.x is None or third.status not in (0, 1):
        return solution, False
    candidate = np.round(third.x[:n]).astype(int)
    if float(off_shipped @ candidate) <= float(off_shipped @ solution):
        solution = candidate
    return solution, third.status == 0


def _checked_plan(gpu: GpuModel, program: _Program, solution) -> list[LayoutCount]:
    plan = [LayoutCount(int(solution[i]), dict(program.layouts[i])) for i in range(program.size) if solution[i]]
    plan.sort(key=lambda lc: (-lc.count, sorted(lc.profiles.items())))
    for layout in plan:     # belt and braces: every emitted layout has a placement
        if find_placement(gpu, layout.profiles) is None:
            raise RuntimeError(f"MIG planner produced an unplaceable layout {layout.profiles}")
    return plan


def first_fit_decreasing(model: GpuModel | str, demand: Mapping[str, int],
                         catalogue: Catalogue | None = None) -> list[dict[str, int]]:
    """Baseline heuristic (for benchmarks): biggest instances first, each onto the first GPU
    where it still fits (checked by placement), else a new GPU. Not optimal."""
    gpu = validate_demand(model, demand, catalogue)
    demand = canonical_demand(gpu, demand)
    order = sorted((n for n, c in demand.items() if c),
                   key=lambda n: (-gpu.profiles[n].memory_slices, -gpu.profiles[n].compute_slices, n))
    gpus: list[dict[str, int]] = []
    for name in order:
        for _ in range(demand[name]):
            for layout in gpus:
                trial = dict(layout)
                trial[name] = trial.get(name, 0) + 1
                if _fits(gpu, trial):
                    layout[name] = trial[name]
                    break
            else:
                gpus.append({name: 1})
    return gpus


def _fits(gpu: GpuModel, layout: Mapping[str, int]) -> bool:
    media = sum(c for n, c in layout.items() if gpu.profiles[n].is_media_extension)
    if media > 1 or any(c > gpu.profiles[n].max_count for n, c in layout.items()):
        return False
    return find_placement(gpu, layout) is not None
