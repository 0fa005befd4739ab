"""`kueue-policy capacity`: the cheapest change to the policy that meets every target on a trace."""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import click

from compiler.capacity import targets as targets_module
from compiler.capacity.targets import Bound
from compiler.capacity.candidate import apply, read_policy_files
from compiler.capacity.demand import TeamPools, offered_load
from compiler.capacity.evaluate import Evaluation, Problem
from compiler.capacity.search import PoolSpace, Search, Space, TeamBase, estimated_total, space_from
from compiler.cli.common import (console as terminal_console, diagnostics_json, emit_json, format_option,
                                 handles_errors)
from compiler.core import codes
from compiler.core.errors import Diagnostic, EnvironmentFailure, InputError, PolicyError, Severity, SourcePosition
from compiler.runtime.parallel import WORKERS_ENV, available_cpus
from compiler.simulate.cli import warn_trace_notes

if TYPE_CHECKING:
    from compiler.simulate.trace import Trace


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


class _Bar:
    """What the search tells the progress bar: a candidate done, and how far the simulations
    under way have got (in_flight.py). Without a terminal, nothing is shown."""

    def __init__(self, bar=None, task=None, total: int = 0, arrivals: tuple[int, int] = (0, 0)) -> None:
        self.bar, self.task, self.arrivals = bar, task, arrivals  # the first and the last arrival
        self.done_count, self.total, self.best_text = 0, total, "no candidate meets yet"

    def done(self, evaluation: Evaluation, best: Evaluation | None) -> None:
        if self.bar is None:
            return
        self.done_count += 1
        self.total = max(self.total, self.done_count + 1)
        if best is not None:
            self.best_text = f"best {best.cost:,.2f}/h: {best.candidate.label()}"
        self.bar.update(self.task, completed=self.done_count, total=self.total, description=self.best_text)

    def running(self, reached: list[int]) -> None:
        if self.bar is None or not reached:
            return
        first, last = self.arrivals
        # (a simulation goes on past the last arrival until its jobs end: shown as "+")
        hours = ", ".join(f"{(min(max(second, first), last) - first) / 3600:.1f}{'+' if second > last else ''}"
                          for second in reached)
        self.bar.update(self.task, description=f"{self.best_text}; simulating: {hours} of {(last - first) / 3600:.1f} h")


@contextlib.contextmanager
def _progress(total: int, arrivals: tuple[int, int], quiet: bool) -> Iterator[_Bar]:
    """Candidates done, the best so far, the time left and how far the simulations under way
    have got (hours since the first of `arrivals`, the first and the last), on stderr (a
    terminal only)."""
    if quiet or not sys.stderr.isatty():
        yield _Bar()
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn("capacity"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                   TimeRemainingColumn(), console=terminal_console(stderr=True), transient=True)
    with bar:
        yield _Bar(bar, bar.add_task("no candidate meets yet", total=total), total, arrivals)


def _pool_spaces(artifacts, requirements) -> list[PoolSpace]:
    """The pools as the search may size them. A pool with a regular topology moves in whole
    top-level domains. A pool whose nodes are a real node list (`nodesFrom`) is kept as it is:
    the search cannot add nodes to that list (a bound asking it to is refused)."""
    pools, bounds = [], dict(requirements.bounds)
    for p in artifacts.cluster.pools:
        topology = p.spec.topology
        granule = math.prod(level.holds or 1 for level in topology.levels) if topology and not topology.nodesFrom else 1
        layout = tuple(sorted(p.spec.mig.layout.items())) if p.spec.mig not in ("none", "planned") else ()
        pools.append(PoolSpace(p.name, p.spec.nodes, p.spec.nodes, p.spec.nodes, p.spec.gpusPerNode, p.is_mig,
                               p.spec.gpu, layout, granule))
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


def _space(artifacts, requirements, mig_choices, guarantees: str, trace) -> Space:
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


def _requirements(target_texts: tuple[str, ...], node_bounds: tuple[str, ...], fixed_pools: tuple[str, ...],
                  targets_file: Path | None) -> targets_module.Requirements:
    """The targets and bounds of the flags and the targets file; at least one target."""
    requirements = targets_module.from_flags(target_texts, node_bounds, fixed_pools)
    if targets_file is not None:
        targets_module.from_file(targets_file, requirements)
    if not requirements.targets:
        if targets_file is not None:
            raise InputError([Diagnostic(codes.CAPACITY_TARGET_BAD, "the targets file lists no target and no "
                                         "--target is given: give at least one (e.g. p95-wait<=30m)",
                                         SourcePosition(str(targets_file)))])
        raise click.UsageError("give at least one target (--target or a --targets file)")
    return requirements


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


def _write(policy_dir: Path, files: dict[str, bytes], changed: dict[str, bytes]) -> list[str]:
    """The changed files written: every one to a temporary beside it first, then all renamed over
    the originals, so a write that fails leaves the policy as it was (never half a candidate that
    was not simulated). A symlinked file is written where it points, and stays a link."""
    staged: list[tuple[Path, Path, str]] = []   # (temporary, target, path shown)
    try:
        for name, content in changed.items():
            if files.get(name) == content:
                continue
            shown = policy_dir / name if policy_dir.is_dir() else policy_dir
            target = shown.resolve()
            temporary = target.with_name(f".{target.name}.capacity")
            staged.append((temporary, target, str(shown)))
            try:
                temporary.write_bytes(content)
                os.chmod(temporary, target.stat().st_mode & 0o7777)   # (its permissions kept)
            except OSError as error:
                raise EnvironmentFailure(f"cannot write {temporary} (for {target}): "
                                         f"{error.strerror or error}; nothing was written") from None
        for temporary, target, _ in staged:
            try:
                os.replace(temporary, target)
            except OSError as error:   # (a rename in one folder: all but impossible once written)
                raise EnvironmentFailure(f"cannot replace {target}: {error.strerror or error}") from None
    finally:
        for temporary, _, _ in staged:
            if temporary.is_file() and not temporary.is_symlink():
                temporary.unlink()
    return [shown for _, _, shown in staged]


def _prepare(policy_dir: Path, trace_path: Path, cluster: str | None, requirements, mig_choices: tuple[str, ...],
             guarantees: str, full_runs: bool) -> tuple[Problem, Space, dict[str, bytes]]:
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
    space = _space(artifacts, requirements, mig_choices, guarantees, trace)
    costs = {p.name: float(p.spec.cost) if p.spec.cost is not None else 1.0 for p in artifacts.cluster.pools}
    problem = Problem(files, label, artifacts.name, trace, notes, str(trace_path), requirements.targets, costs,
                      {p.name: p.spec.gpusPerNode for p in artifacts.cluster.pools}, full_runs,
                      frozenset((v.team, v.workload) for v in artifacts.verdicts if v.verdict == NEVER))
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


# Misses shown per largest candidate: a policy of many teams can miss a target in every one.
MAX_MISSES_SHOWN = 10


def _infeasible(answer, trace_label: str) -> list[Diagnostic]:
    """Why no candidate meets the targets: what each largest candidate misses (one per cut
    compared, and per set of guarantees tried). Waits only shrink as pools grow, so a miss of
    the largest is a miss of every candidate; preemptions do not (more room, more borrowing,
    more reclaiming), and a note says so when a largest candidate misses only them."""
    tops = list({e.candidate: e for cut in answer.cuts for e in (cut.tops or [cut.largest])}.values())
    tops = tops or [answer.baseline]
    where = SourcePosition(trace_label)
    problems = []
    for largest in tops:
        misses = largest.misses or ["(no figure)"]
        shown = misses[:MAX_MISSES_SHOWN] + ([f"and {len(misses) - MAX_MISSES_SHOWN} more"]
                                               if len(misses) > MAX_MISSES_SHOWN else [])
        problems += [Diagnostic(codes.CAPACITY_INFEASIBLE, "no candidate within the bounds meets the targets; the "
                                f"largest ({largest.candidate.label()}) misses: {miss}", where) for miss in shown]
    if any(e.misses and all(" suffered " in miss for miss in e.misses) for e in tops):   # (preemptions' sentences)
        problems.append(Diagnostic(codes.CAPACITY_INFEASIBLE, "a largest candidate misses only preemption targets, "
                                   "and preemptions "
                                   "can grow with the pools (more room to borrow, more to reclaim): a smaller "
                                   "candidate may meet them; bound the pools (--nodes) to search below the largest",
                                   where, Severity.NOTE))
    return problems


@click.command()
@click.argument("policy_dir", default="policies", type=click.Path(path_type=Path))
@click.option("--trace", "trace_path", required=True, type=click.Path(path_type=Path),
              help="The jobs, in any form `simulate` reads (YAML jobs, CSV, a Kueue export).")
@click.option("--target", "target_texts", multiple=True, metavar="TARGET",
              help="[TEAM:]pXX-wait<=DURATION, [TEAM:]within-DURATION>=PERCENT or [TEAM:]preemptions<=N; "
                   "without TEAM: every team. Repeat for more.")
@click.option("--targets", "targets_file", type=click.Path(path_type=Path), default=None,
              help="A YAML file: `targets: [...]` (the same texts) and `bounds: {POOL: MIN..MAX | N | fixed}`.")
@click.option("--nodes", "node_bounds", multiple=True, metavar="POOL=MIN..MAX",
              help="Nodes a pool may have (default 1 to twice today's).")
@click.option("--fixed", "fixed_pools", multiple=True, metavar="POOL", help="A pool that may not change.")
@click.option("--mig", "mig_choices", multiple=True, metavar="POOL=none|planned|both",
              help="Cut a pool with MIG (planned), not (none), or compare both; default: as the policy says.")
@click.option("--guarantees", type=click.Choice(["demand", "keep"]), default="demand", show_default=True,
              help="demand: guarantees from each team's mean use, bursts from its peaks; keep: the policy's "
                   "(scaled down with the pools).")
@click.option("--cluster", default=None, help="The cluster (default: the only one).")
@click.option("--workers", type=click.IntRange(min=1), default=None, envvar=WORKERS_ENV, show_envvar=True,
              help="Candidates simulated side by side (default: the CPUs this process may use).")
@click.option("--address", default=None, metavar="ADDR",
              help="Run the candidates on the Dask cluster whose scheduler listens at ADDR (tcp://host:port).")
@click.option("--write", "write_files", is_flag=True, help="Write the answer into the policy files (round-trip).")
@click.option("--html", "html_path", type=click.Path(path_type=Path), default=None,
              help="Write a page with the frontier of cost against waits (one point per candidate).")
@click.option("--full-runs", is_flag=True,
              help="Simulate every candidate to the end of the trace, even once it is sure to miss a target "
                   "(slower; the frontier then shows every failing candidate's waits).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@format_option("table", "json")
@handles_errors
def capacity(policy_dir: Path, trace_path: Path, target_texts: tuple[str, ...], targets_file: Path | None,
             node_bounds: tuple[str, ...], fixed_pools: tuple[str, ...], mig_choices: tuple[str, ...],
             guarantees: str, cluster: str | None, workers: int | None, address: str | None, write_files: bool,
             html_path: Path | None, full_runs: bool, quiet: bool, output_format: str) -> None:
    """The cheapest nodes per pool, MIG cuts and guarantees that meet every target on a trace."""
    from compiler.capacity.report import document, print_tables
    from compiler.capacity.workers import executor_for

    requirements = _requirements(target_texts, node_bounds, fixed_pools, targets_file)
    problem, space, files = _prepare(policy_dir, trace_path, cluster, requirements, mig_choices, guarantees,
                                     full_runs)
    warn_trace_notes(problem.notes.to_json(), problem.cluster)   # (a Kueue export's jobs of no team are not planned for)
    costs = problem.costs
    executor = executor_for(problem, workers or available_cpus(), address)
    try:
        times = [job.at for job in problem.trace.jobs]
        with _progress(estimated_total(space), (min(times, default=0), max(times, default=0)), quiet) as bar:
            answer = Search(space, executor, bar.done, bar.running).run()
    finally:
        executor.close()
    data = document(answer, space, costs, problem.cluster, str(trace_path), [t.text for t in requirements.targets],
                    executor.workers)
    data["notes"] = problem.notes.to_json()
    if html_path is not None:
        from compiler.capacity.html import write_page

        write_page(html_path, data)
    if data["answer"] is None:
        problems = _infeasible(answer, str(trace_path))
        if output_format == "json":
            emit_json({"ok": False, "exitCode": InputError.exit_code, "diagnostics": diagnostics_json(problems),
                       **data})
        raise InputError(problems)
    if write_files:
        best = answer.best.answer
        written = _write(policy_dir, files, apply(files, best.candidate, problem.cluster))
        data["written"] = written
    if output_format == "json":
        emit_json(data)
        return
    print_tables(data, terminal_console())
    for path in data.get("written", []):
        click.echo(f"wrote {path}")
