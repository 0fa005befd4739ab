"""`kueue-policy capacity`: the cheapest change to the policy that meets every target on a trace."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Iterator

import click

from compiler.capacity import targets as targets_module
from compiler.capacity.candidate import apply, write_policy_files
from compiler.capacity.evaluate import Evaluation
from compiler.capacity.targets import can_grow_with_pools
from compiler.capacity.problem import prepare
from compiler.capacity.search import PROOF_BUDGET, Search, estimated_total
from compiler.cli.common import (console as terminal_console, diagnostics_json, emit_json, format_option,
                                 handles_errors)
from compiler.core import codes
from compiler.core.errors import Diagnostic, InputError, Severity, SourcePosition
from compiler.runtime.parallel import WORKERS_ENV, available_cpus
from compiler.simulate.cli import warn_trace_notes


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


# Misses shown per largest candidate: a policy of many teams can miss a target in every one.
MAX_MISSES_SHOWN = 10


def _infeasible(answer, trace_label: str, movable: bool) -> list[Diagnostic]:
    """Why no candidate meets the targets: what each largest candidate misses (one per cut
    compared, and per set of guarantees tried). Waits only shrink as pools grow, so a wait the
    largest misses, every candidate misses. Two kinds of miss do not shrink so: preemptions (more
    room, more borrowing, more reclaiming) and jobs on a pool whose nodes cannot hold their pods
    (a larger such pool takes more of them). When a largest candidate misses only those, and a
    pool may shrink (`movable`), a note says a smaller candidate may meet the targets. Every
    candidate within the bounds is simulated when they are no more than the answer's
    `grid_budget` (None: a single pool, where no split over flavors makes waits depend on more
    than its nodes, so none are); the claim says so, or a note says what it rests on."""
    tops = list({e.candidate: e for cut in answer.cuts for e in (cut.tops or [cut.largest])}.values())
    tops = tops or [answer.baseline]
    where = SourcePosition(trace_label)
    every_candidate = bool(answer.cuts) and all(cut.every_candidate for cut in answer.cuts)
    unproven = (movable and not every_candidate
                and any(e.misses and all(can_grow_with_pools(miss) for miss in e.misses) for e in tops))
    claim = ("no candidate within the bounds meets the targets (every one was simulated)" if every_candidate
             else "the search found no candidate meeting the targets" if unproven
             else "no candidate within the bounds meets the targets")
    problems = []
    for largest in tops:
        misses = largest.misses or ["(no figure)"]
        shown = misses[:MAX_MISSES_SHOWN]
        if len(misses) > MAX_MISSES_SHOWN:   # (on the last one shown: the text output sorts the lines)
            shown[-1] += f"; and {len(misses) - MAX_MISSES_SHOWN} more"
        problems += [Diagnostic(codes.CAPACITY_INFEASIBLE, f"{claim}; the largest ({largest.candidate.label()}) "
                                f"misses: {miss}", where) for miss in shown]
    if unproven:
        problems.append(Diagnostic(codes.CAPACITY_INFEASIBLE, "a largest candidate misses only preemption targets or "
                                   "has jobs on a pool whose nodes cannot hold their pods, and those can grow with "
                                   "the pools (more room to borrow and reclaim, more room for jobs that do not "
                                   "fit): the search descended below it, then simulated the cheaper candidates no "
                                   "missed wait rules out (if no more than --proof-budget), and found none meeting the targets; "
                                   "raise --proof-budget or bound the pools (--nodes) to search further",
                                   where, Severity.NOTE))
    elif movable and not every_candidate and answer.grid_budget is not None:
        problems.append(Diagnostic(codes.CAPACITY_INFEASIBLE, f"the bounds hold more candidates than --proof-budget "
                                   f"({answer.grid_budget}), so not every one was simulated: this rests on waits only "
                                   "growing with the pools, which the split of a team's guarantee and burst over its "
                                   "flavors by their size can, rarely, break; raise --proof-budget to simulate them "
                                   "all", where, Severity.NOTE))
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
@click.option("--proof-budget", type=click.IntRange(min=0), default=PROOF_BUDGET, show_default=True,
              help="Cheaper candidates that move nodes between pools simulated to prove the answer the "
                   "cheapest within the bounds (0: prove only that no single pool can shrink).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@format_option("table", "json")
@handles_errors
def capacity(policy_dir: Path, trace_path: Path, target_texts: tuple[str, ...], targets_file: Path | None,
             node_bounds: tuple[str, ...], fixed_pools: tuple[str, ...], mig_choices: tuple[str, ...],
             guarantees: str, cluster: str | None, workers: int | None, address: str | None, write_files: bool,
             html_path: Path | None, full_runs: bool, proof_budget: int, quiet: bool, output_format: str) -> None:
    """The cheapest nodes per pool, MIG cuts and guarantees that meet every target on a trace."""
    from compiler.capacity.report import document, print_tables
    from compiler.capacity.workers import executor_for

    requirements = _requirements(target_texts, node_bounds, fixed_pools, targets_file)
    problem, space, files = prepare(policy_dir, trace_path, cluster, requirements, mig_choices, guarantees,
                                     full_runs)
    warn_trace_notes(problem.notes.to_json(), problem.cluster)   # (a Kueue export's jobs of no team are not planned for)
    costs = problem.costs
    executor = executor_for(problem, workers or available_cpus(), address)
    try:
        times = [job.at for job in problem.trace.jobs]
        with _progress(estimated_total(space), (min(times, default=0), max(times, default=0)), quiet) as bar:
            answer = Search(space, executor, bar.done, bar.running, proof_budget).run()
    finally:
        executor.close()
    data = document(answer, space, costs, problem.cluster, str(trace_path), [t.text for t in requirements.targets],
                    executor.workers)
    data["notes"] = problem.notes.to_json()
    if html_path is not None:
        from compiler.capacity.html import write_page

        write_page(html_path, data)
    if data["answer"] is None:
        problems = _infeasible(answer, str(trace_path), any(p.movable for p in space.pools))
        if output_format == "json":
            emit_json({"ok": False, "exitCode": InputError.exit_code, "diagnostics": diagnostics_json(problems),
                       **data})
        raise InputError(problems)
    if write_files:
        best = answer.best.answer
        written = write_policy_files(policy_dir, files, apply(files, best.candidate, problem.cluster))
        data["written"] = written
    if output_format == "json":
        emit_json(data)
        return
    print_tables(data, terminal_console())
    for path in data.get("written", []):
        click.echo(f"wrote {path}")
