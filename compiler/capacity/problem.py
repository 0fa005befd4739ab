"""The problem a capacity search solves, set up once: the policy compiled (its mistakes reported
as `compile` reports them), the trace read and checked against it (its mistakes that no candidate
can change refused up front, its warnings noted), and the space of candidates: each pool's
bounds and step, the MIG cuts to compare, and the guarantees from the policy and from demand."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import TYPE_CHECKING

from compiler.capacity import targets as targets_module
from compiler.capacity.candidate import read_policy_files
from compiler.capacity.demand import TeamPools, offered_load
from compiler.capacity.evaluate import Problem
from compiler.capacity.space import PoolSpace, Space, TeamBase, space_from
from compiler.capacity.targets import Bound, Requirements
from compiler.core import codes
from compiler.core.errors import Diagnostic, InputError, PolicyError, SourcePosition

if TYPE_CHECKING:
    from compiler.simulate.trace import Trace


def prepare(policy_dir: Path, trace_path: Path, cluster: str | None, requirements: Requirements,
            mig_choices: tuple[str, ...], guarantees: str, full_runs: bool) -> tuple[Problem, Space, dict[str, bytes]]:
    """The policy compiled once (its mistakes reported as `compile` would), the trace read once,
    and the space to search."""
    from compiler.simulate.runner import compiled_cluster, load_trace
    from compiler.stages.admissibility import NEVER
    from compiler.stages.pipeline import PolicySource

    if not policy_dir.exists():
        raise PolicyError([Diagnostic(codes.UNREADABLE, f"policy folder '{policy_dir}' does not exist",
                                      SourcePosition(str(policy_dir)))])
    files = read_policy_files(policy_dir)
    label = policy_dir.resolve().name if policy_dir.is_dir() else ""
    artifacts = compiled_cluster(PolicySource.from_files(files, label), cluster)
    targets_module.check_names(requirements, {t.name for t in artifacts.cluster.teams},
                               {p.name for p in artifacts.cluster.pools}, artifacts.name)
    trace, notes = load_trace(trace_path, artifacts)
    notes.warnings = _check_trace(artifacts, trace, str(trace_path))
    with_jobs = {job.team for job in trace.jobs}
    notes.warnings += [f"target '{t.text}': team '{t.team}' has no job in the trace, so every candidate meets it"
                       for t in requirements.targets if t.team is not None and t.team not in with_jobs]
    never = sorted((v.team, v.workload) for v in artifacts.verdicts if v.verdict == NEVER)
    if never:   # (`compile` refuses the policy as it is: candidates are held only to the workloads it admits)
        named = ", ".join(f"{team}/{workload}" for team, workload in never[:3])
        notes.warnings.append(f"the policy as it is has {len(never)} declared workload(s) that would never be "
                              f"admitted ({named}{', ...' if len(never) > 3 else ''}), which `compile` refuses; "
                              "the answer is not held to them")
    space = _space(artifacts, requirements, mig_choices, guarantees, trace)
    costs = {p.name: p.price for p in space.pools}
    problem = Problem(files, label, artifacts.name, trace, notes, str(trace_path), requirements.targets, costs,
                      {p.name: p.spec.gpusPerNode for p in artifacts.cluster.pools}, full_runs,
                      frozenset(never))
    return problem, space, files


# The trace's mistakes that no candidate can change (its teams, names and priorities are those of
# every candidate): refused before the search, as `simulate` refuses them.
_TRACE_MISTAKES = (codes.UNKNOWN_TEAM, codes.DUPLICATE_NAME, codes.UNKNOWN_PRIORITY)


def _check_trace(artifacts, trace: Trace, trace_label: str) -> list[str]:
    """The trace's jobs read against the policy as `simulate` reads them: raises their mistakes
    that hold in every candidate (those about MIG profiles depend on the cut: each candidate
    reports its own) and answers the warnings that hold in every candidate too (pods larger
    than any node: no candidate changes a node's size)."""
    from compiler.capacity.evaluate import whole_gpu_trace
    from compiler.simulate.driver import pods_larger_than_nodes, resolve_jobs

    with_mig = {team.name for team in artifacts.cluster.teams if team.mig_pools}
    try:
        jobs = resolve_jobs(artifacts.cluster, whole_gpu_trace(trace, with_mig), trace_label)
    except InputError as error:
        mistakes = [d for d in error.diagnostics if d.code in _TRACE_MISTAKES]
        if mistakes:
            raise InputError(mistakes) from None
        return []
    teams = {team.name: team for team in artifacts.cluster.teams}
    return [warning.message for warning in pods_larger_than_nodes(jobs.runs, teams)]


def _cuts(choices: tuple[str, ...], pools: dict[str, PoolSpace],
          own: dict[str, str]) -> list[tuple[tuple[str, str], ...]]:
    """The ways of cutting the pools to compare (`--mig POOL=none|planned|both`). A choice that is
    how the policy already cuts the pool (`own`: pool -> "none", "planned" or "layout") changes
    nothing and is left out of the cut: the policy as it is then stays a candidate of that cut."""
    from compiler.mig.catalogue import load_catalogue

    options, seen = [], set()
    for text in choices:
        pool, _, mode = text.partition("=")
        if pool not in pools or mode not in ("none", "planned", "both"):
            raise InputError([Diagnostic(codes.CAPACITY_TARGET_BAD, f"--mig '{text}': write POOL=none, POOL=planned or "
                                         f"POOL=both with a pool of the policy ({', '.join(pools)})",
                                         SourcePosition("--mig"))])
        if pool in seen:
            raise InputError([Diagnostic(codes.CAPACITY_TARGET_BAD, f"--mig '{text}': pool '{pool}' is given twice; "
                                         "give one choice (both compares none and planned)", SourcePosition("--mig"))])
        seen.add(pool)
        if mode != "none" and load_catalogue().model(pools[pool].gpu) is None:
            raise InputError([Diagnostic(codes.CAPACITY_TARGET_BAD, f"--mig '{text}': pool '{pool}' has "
                                         f"{pools[pool].gpu or 'no GPU model'}, which MIG cannot cut",
                                         SourcePosition("--mig"))])
        options.append([(pool, m) for m in (("none", "planned") if mode == "both" else (mode,))])
    return [tuple(sorted((pool, mode) for pool, mode in combination if own.get(pool) != mode))
            for combination in itertools.product(*options)] if options else [()]


def _pool_spaces(artifacts, requirements: Requirements) -> list[PoolSpace]:
    """The pools as the search may size them. A pool with a regular topology moves in whole
    top-level domains. A pool whose nodes are a real node list (`nodesFrom`) is kept as it is:
    the search cannot add nodes to that list (a bound asking it to is refused)."""
    pools, bounds = [], dict(requirements.bounds)
    for p in artifacts.cluster.pools:
        topology = p.spec.topology
        granule = math.prod(level.holds or 1 for level in topology.levels) if topology and not topology.nodesFrom else 1
        layout = tuple(sorted(p.spec.mig.layout.items())) if p.spec.mig not in ("none", "planned") else ()
        price = float(p.spec.cost) if p.spec.cost is not None else 1.0
        pools.append(PoolSpace(p.name, p.spec.nodes, p.spec.nodes, p.spec.nodes, p.spec.gpusPerNode, p.is_mig,
                               p.spec.gpu, layout, granule, price))
        if topology and topology.nodesFrom:
            bound = bounds.get(p.name)
            if bound is not None and not bound.fixed and (bound.minimum, bound.maximum) != (p.spec.nodes,) * 2:
                raise InputError([Diagnostic(codes.CAPACITY_TARGET_BAD, f"pool '{p.name}' takes its nodes from "
                                             f"{topology.nodesFrom}: the search cannot add or remove them; "
                                             f"give --fixed {p.name} (or change the node list)",
                                             requirements.origins.get(p.name))])
            bounds[p.name] = Bound(p.name, fixed=True)
    try:
        return space_from(pools, bounds)
    except targets_module.BadInput as error:
        message, pool = error.args
        raise InputError([Diagnostic(codes.CAPACITY_TARGET_BAD, message,
                                     requirements.origins.get(pool) or SourcePosition("--nodes"))]) from None


def _space(artifacts, requirements: Requirements, mig_choices, guarantees: str, trace) -> Space:
    bounded = _pool_spaces(artifacts, requirements)
    accepted = {t.name: tuple(p.name for p in [*t.gpu_pools, *t.mig_pools]) for t in artifacts.cluster.teams}
    bursts = {t.name: t.spec.gpus.burst for t in artifacts.cluster.teams}
    # A team that never borrows (`burst: 0`, a choice the search keeps, or no cohort) gets its
    # ceiling (peak, and room for its largest job) as its guarantee from demand: its mean would
    # leave it waiting at every busy hour.
    borrows = {t.name: t.cohort is not None and t.spec.gpus.burst != 0 for t in artifacts.cluster.teams}
    # A team whose quota is Kueue's own resourceGroups (`kueue.resourceGroups`) keeps it: it has no
    # `gpus` to set (the compiler refuses both), so the search leaves its guarantee alone.
    verbatim = {t.name for t in artifacts.cluster.teams if t.spec.kueue is not None and t.spec.kueue.resourceGroups}
    _check_verbatim(artifacts, verbatim, bounded)
    teams = [TeamBase(t.name, t.spec.gpus.guaranteed, tuple(sorted((k, v) for k, v in t.spec.mig.items() if v)),
                      accepted[t.name], bursts[t.name])
             for t in artifacts.cluster.teams if t.name not in verbatim]
    overcommit = artifacts.cluster.pools[0].overcommit if artifacts.cluster.pools else 1.0
    own = {p.name: p.cut_in({}) for p in bounded}
    space = Space(bounded, teams, overcommit, _cuts(mig_choices, {p.name: p for p in bounded}, own), guarantees)
    accepts = [TeamPools(t.name, tuple(t.spec.models) if t.spec.models else None) for t in artifacts.cluster.teams]
    # A team's declared workloads must stay admissible (`compile` refuses a policy where one would
    # never be): its ceiling from demand is at least its largest declared whole-GPU workload.
    declared = {t.name: max((w.spec.replicas * (w.spec.gpus or 0) for w in t.workloads), default=0)
                for t in artifacts.cluster.teams}
    for cut in space.cuts:
        load = offered_load(trace, accepts, space.mig_models(cut))
        ceiling = {team: max(need.ceiling, declared.get(team, 0)) for team, need in load.items()}
        space.demand[cut] = [TeamBase(team, need.gpus if borrows[team] else ceiling[team], tuple(need.mig.items()),
                                      accepted[team], bursts[team], ceiling[team] if borrows[team] else None)
                             for team, need in sorted(load.items()) if team not in verbatim]
    return space


def _check_verbatim(artifacts, verbatim: set[str], pools: list[PoolSpace]) -> None:
    """A team whose quota is Kueue's own resourceGroups holds it whatever the pool's size, and the
    compiler does not count it against the pool: a search that shrinks such a pool would simulate
    GPUs the pool no longer has. Refused unless those pools are fixed (`--fixed POOL`)."""
    movable = {pool.name for pool in pools if pool.movable}
    problems = []
    for team in artifacts.cluster.teams:
        if team.name not in verbatim:
            continue
        held = {flavor.get("name") for group in team.spec.kueue.resourceGroups for flavor in group.get("flavors") or []}
        shrinking = sorted(held & movable)
        if shrinking:
            problems.append(Diagnostic(
                codes.CAPACITY_TARGET_BAD, f"team '{team.name}' holds quota in Kueue's own form (kueue.resourceGroups) "
                f"on {', '.join(shrinking)}, which the search would size without it: add "
                + " ".join(f"--fixed {name}" for name in shrinking) + ", or give the team's quota as gpus",
                team.located.position("spec", "kueue", "resourceGroups")))
    if problems:
        raise InputError(problems)
