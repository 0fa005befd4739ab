"""`kueue-policy simulate` and `kueue-policy trace synth`."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from compiler.core import codes
from compiler.core.resources import MIG_PREFIX
from compiler.cli.common import console as terminal_console, emit_json, format_option, handles_errors, progress
from compiler.core.errors import Diagnostic, EnvironmentFailure, InputError, SourcePosition
from compiler.stages.pipeline import PolicySource
from compiler.simulate import synth
from compiler.simulate.trace import MAX_DURATION
from compiler.simulate.compare import compare, human_duration
from compiler.simulate.runner import SimulationReport, compiled_cluster, simulate_both, simulate_policy


def _run(policy_dir: Path, trace_path: Path, cluster: str | None) -> SimulationReport:
    with progress("simulate"):
        return simulate_policy(PolicySource.from_directory(policy_dir), trace_path, cluster)


def _policy_at(policy_dir: Path, revision: str) -> PolicySource:
    """The policy folder as it is at a git revision (for --compare)."""
    import git

    from compiler.core import git_ops
    from compiler.language.load import POLICY_SUFFIXES

    try:
        repo = git.Repo(policy_dir, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise EnvironmentFailure(f"error[{codes.NOT_A_GIT_REPO}]: --compare needs {policy_dir} inside a git "
                                 "repository") from None
    folder = Path(policy_dir).resolve().relative_to(Path(repo.working_tree_dir).resolve()).as_posix()
    try:
        files = git_ops.files_at(repo, revision, folder, POLICY_SUFFIXES)
    except (git.BadName, ValueError, git.GitCommandError):
        raise InputError([Diagnostic(codes.UNKNOWN_REVISION, f"unknown git revision '{revision}'",
                                     SourcePosition(str(policy_dir)))]) from None
    if not files:
        raise InputError([Diagnostic(codes.UNKNOWN_REVISION, f"the policy folder '{folder}' does not exist at "
                                     f"'{revision}'", SourcePosition(str(policy_dir)))])
    return PolicySource.in_git(repo, revision, files, folder)


@click.command()
@click.argument("policy_dir", default="policies", type=click.Path(path_type=Path))
@click.option("--trace", "trace_path", required=True, type=click.Path(path_type=Path),
              help="The jobs: a YAML `jobs` list, a CSV file, or a Kueue export "
                   "(`kubectl get workloads -A -o yaml`).")
@click.option("--cluster", default=None, help="The cluster to simulate (default: the only one).")
@click.option("--compare", "compare_rev", metavar="REV", default=None,
              help="Also run the trace through the policy at git revision REV and show what changes.")
@click.option("--html", "html_path", type=click.Path(path_type=Path), default=None,
              help="Write a self-contained page with charts of the run.")
@format_option("text", "json")
@handles_errors
def simulate(policy_dir: Path, trace_path: Path, cluster: str | None, compare_rev: str | None,
             html_path: Path | None, output_format: str) -> None:
    """Replay a job trace through the policy over time: waits, usage, preemptions, idle GPUs."""
    before = None
    if compare_rev is not None:
        base_source = _policy_at(policy_dir, compare_rev)
        with progress(f"simulate at {compare_rev} and in the working tree"):
            at_revision, here = simulate_both(base_source, PolicySource.from_directory(policy_dir), trace_path, cluster)
        before, head = at_revision.get(), here.get()
    else:
        head = _run(policy_dir, trace_path, cluster)
    if html_path is not None:
        from compiler.simulate.html import write_page

        write_page(html_path, head)
    if before is not None:
        changes = compare(before, head.summary)
        if output_format == "json":
            emit_json({"base": compare_rev, "before": before, "after": head.summary, "changes": changes})
            return
        _print_changes(compare_rev, changes)
        return
    if output_format == "json":
        emit_json(head.summary)
        return
    _print_summary(head.summary)


def _print_changes(revision: str, changes: list[dict]) -> None:
    if not changes:
        click.echo(f"The same trace runs the same at {revision} and in the working tree.")
        return
    click.echo(f"What the change since {revision} does to the same trace:")
    for change in changes:
        mark = {True: " (worse)", False: " (better)"}.get(change["worse"], "")
        click.echo(f"  {change['text']}{mark}")


def _print_summary(summary: dict) -> None:
    console = terminal_console()
    run = summary["run"]
    mig = [p for p in summary["pools"] if p["resource"].startswith(MIG_PREFIX)]
    instances = (f"{sum(p['usedHours'] for p in mig):,.1f} MIG instance-hours used, "
                 f"{sum(p['idleHours'] for p in mig):,.1f} idle; " if mig else "")
    console.print(f"{summary['cluster']}: {run['jobs']} jobs over {human_duration(run['makespan'])}; "
                  f"{run['gpuHours']:,.1f} GPU-hours used, {run['idleGpuHours']:,.1f} idle; {instances}"
                  f"{run['preemptions']} preemptions; {run['neverStarted']} never started")
    teams = Table(title="per team", title_justify="left")
    for column in ("team", "jobs", "never started", "p50 wait", "p95 wait", "max wait", "GPU-hours",
                   "borrowed", "lent", "preempted", "caused", "share / weight"):
        teams.add_column(column)
    for t in summary["teams"]:
        teams.add_row(t["team"], str(t["jobs"]), str(t["neverStarted"]), human_duration(t["wait"]["p50"]),
                      human_duration(t["wait"]["p95"]), human_duration(t["wait"]["max"]), f"{t['gpuHours']:,.1f}",
                      f"{t['borrowedGpuHours']:,.1f}", f"{t['lentGpuHours']:,.1f}", str(t["preemptionsSuffered"]),
                      str(t["preemptionsCaused"]), f"{t['share']:.0%} / {t['fairShareWeight']:.0%}")
    console.print(teams)
    pools = Table(title="per pool", title_justify="left")
    for column in ("pool", "resource", "capacity", "used (h)", "idle (h)", "utilization"):
        pools.add_column(column)
    for p in summary["pools"]:
        pools.add_row(p["pool"], p["resource"], str(p["capacity"]), f"{p['usedHours']:,.1f}",
                      f"{p['idleHours']:,.1f}", "-" if p["utilization"] is None else f"{p['utilization']:.0%}")
    console.print(pools)
    warn_trace_notes(summary["notes"], summary["cluster"])


def warn_trace_notes(notes: dict, cluster: str) -> None:
    """On stderr, what the trace reader left out (`TraceNotes.to_json`): `simulate`'s and
    `capacity`'s figures are of the rest. (A namespace of another cluster's team is left out too:
    the run is of `cluster` alone.)"""
    for namespace, count in notes["unknownTeams"].items():
        click.echo(f"kueue-policy: warning: {count} job(s) of namespace '{namespace}' belong to no team of "
                   f"cluster '{cluster}'; left out", err=True)
    for skipped in notes["skipped"]:
        click.echo(f"{skipped['at'] + ': ' if skipped['at'] else ''}warning[{skipped['code']}]: "
                   f"{skipped['message']}", err=True)
    for message in notes.get("warnings", []):
        click.echo(f"kueue-policy: warning: {message}", err=True)


def _finite(context: click.Context, parameter: click.Parameter, value: float) -> float:
    # (click's FloatRange lets nan through: every comparison with nan is false)
    if value != value:
        raise click.BadParameter("is not a number", context, parameter)
    return value


@click.group()
def trace() -> None:
    """Make job traces for `simulate`."""


@trace.command("synth")
@click.argument("policy_dir", default="policies", type=click.Path(path_type=Path))
@click.option("--cluster", default=None, help="The cluster whose declared workloads to use.")
@click.option("--jobs", "job_count", type=click.IntRange(1, 1_000_000), default=1000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--rate", type=click.FloatRange(min=0.001, max=1e9), default=60.0, show_default=True,
              callback=_finite, help="Arrivals per hour (whole cluster, Poisson).")
@click.option("--duration", "mean_duration", type=click.FloatRange(min=1, max=MAX_DURATION), default=3600.0,
              show_default=True, callback=_finite, help="Mean run time in seconds.")
@click.option("--distribution", type=click.Choice(synth.DISTRIBUTIONS), default="exponential", show_default=True)
@click.option("--sigma", type=click.FloatRange(min=0.01, max=5), default=1.0, show_default=True, callback=_finite,
              help="Spread of log(duration) for --distribution lognormal.")
@click.option("--out", "out_path", type=click.Path(path_type=Path), default=None,
              help="Write here (.csv for CSV, else YAML); default: YAML on stdout.")
@handles_errors
def synth_command(policy_dir: Path, cluster: str | None, job_count: int, seed: int, rate: float,
                  mean_duration: float, distribution: str, sigma: float, out_path: Path | None) -> None:
    """A seeded synthetic trace from the policy's declared workloads."""
    artifacts = compiled_cluster(PolicySource.from_directory(policy_dir), cluster)
    if not synth.declared_shapes(artifacts.cluster):
        raise InputError([Diagnostic(codes.TRACE_BAD, "no team of the policy declares a workload: "
                                     "`trace synth` draws its jobs from `spec.workloads`",
                                     SourcePosition(str(policy_dir)))])
    options = synth.SynthOptions(job_count, seed, rate, mean_duration, distribution, sigma)
    jobs = synth.synthesize(artifacts.cluster, options)
    text = synth.to_csv(jobs) if out_path is not None and out_path.suffix.lower() == ".csv" else synth.to_yaml(jobs)
    if out_path is None:
        click.echo(text, nl=False)
        return
    try:
        out_path.write_text(text)
    except OSError as error:
        raise EnvironmentFailure(f"cannot write {out_path}: {error.strerror or error}") from None
