"""`validate`, `compile` and `check`: the commands that run the compile pipeline on a policy."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rich.console import Console
from rich.table import Table

from compiler.core import codes
from compiler.cli.common import (console, diagnostics_json, emit_json, format_option, handles_errors, print_diagnostics,
                             jobs_option, progress, quiet_option, verdict_text)
from compiler.stages.emit import write_tree
from compiler.core.errors import Diagnostic, PolicyError, Severity, SourcePosition
from compiler.core.humanize import never_in_plain_words, plain_reason, teams_by_name
from compiler.core.resources import is_mig
from compiler.stages.out_differences import differences
from compiler.stages.pipeline import CompileResult, PolicySource, compile_policy

policy_dir_argument = click.argument("policy_dir", default="policies", type=click.Path(path_type=Path))
cluster_option = click.option("--cluster", default=None, help="Compile only this cluster.")
allow_inadmissible_option = click.option(
    "--allow-inadmissible", is_flag=True,
    help="Do not fail when a declared workload could never be admitted (the verdicts are still reported).")


# A summary is for reading: past these, the table says how many more rows REPORT.md holds.
MAX_TEAM_ROWS = 40
MAX_WORKLOAD_ROWS = 60
DIAGNOSTIC_FORMATS = ("text", "json", "github")


def _summary(result: CompileResult, out: Path | None) -> None:
    out_console = console()
    for name, artifacts in result.clusters.items():
        report = artifacts.report
        out_console.print(_pool_table(report, name, out))
        out_console.print(_team_table(report, name))
        _verdict_table(out_console, report["workloads"], teams_by_name(report), limit=MAX_WORKLOAD_ROWS,
                       where=f"{name}/REPORT.md")


def _pool_table(report: dict, name: str, out: Path | None) -> Table:
    title = f"{name}: {len(report['teams'])} teams, {len(report['pools'])} pools"
    if out is not None:
        title += f" -> {out / name}"
    pools = Table(title=title, title_justify="left")
    for column in ("pool", "GPU", "capacity", "GPUs", "guaranteed", "shared", "MIG instances"):
        pools.add_column(column, justify="right" if column in ("GPUs", "guaranteed", "shared") else "left")
    for pool in report["pools"]:
        pools.add_row(pool["name"], pool["gpu"], pool["capacity"], str(pool["gpus"]),
                      "-" if pool["guaranteed"] is None else str(pool["guaranteed"]),
                      "-" if pool["shared"] is None else str(pool["shared"]), pool.get("migSummary") or "-")
    return pools


def _team_table(report: dict, name: str) -> Table:
    teams = Table(title="quota per team and flavor", title_justify="left")
    for column in ("team", "cohort", "flavor", "resource", "guaranteed", "burst", "lend"):
        teams.add_column(column)
    for team in report["teams"][:MAX_TEAM_ROWS]:
        # MIG profiles a team may only borrow are noise here; report.json lists them all.
        rows = [f for f in team["flavors"] if f["guaranteed"] or not is_mig(f["resource"])]
        for index, flavor in enumerate(rows):
            first = index == 0
            teams.add_row(team["name"] if first else "", (team["cohort"] or "-") if first else "",
                          flavor["flavor"], flavor["resource"], str(flavor["guaranteed"]),
                          "unlimited" if flavor["burst"] is None else str(flavor["burst"]),
                          "all" if flavor["lend"] is None else str(flavor["lend"]))
    if len(report["teams"]) > MAX_TEAM_ROWS:
        teams.caption = f"... and {len(report['teams']) - MAX_TEAM_ROWS} more teams: see {name}/REPORT.md"
    return teams


def _verdict_table(out_console: Console, workloads: list[dict], teams: dict[str, dict],
                   limit: int | None = None, where: str = "") -> None:
    counts = {v: sum(1 for w in workloads if w["verdict"] == v) for v in ("guaranteed", "borrowing", "never")}
    title = "declared workloads: " + ", ".join(f"{n} {v}" for v, n in counts.items())
    table = Table(title=title, title_justify="left")
    for column in ("team", "workload", "verdict", "reason"):
        table.add_column(column, overflow="fold")
    # The ones that need attention first when the list is cut.
    shown = workloads if limit is None or len(workloads) <= limit else (
        sorted(workloads, key=lambda w: ("never", "borrowing", "guaranteed").index(w["verdict"]))[:limit])
    for workload in shown:
        table.add_row(workload["team"], workload["name"], verdict_text(workload["verdict"]),
                      plain_reason(workload, teams))
    if len(shown) < len(workloads):
        table.caption = f"... and {len(workloads) - len(shown)} more: see {where}"
    out_console.print(table)


def _teams_of(result: CompileResult) -> dict[str, dict]:
    return {name: team for report in result.reports.values() for name, team in teams_by_name(report).items()}


@click.command()
@policy_dir_argument
@format_option(*DIAGNOSTIC_FORMATS)
@quiet_option
@jobs_option
@handles_errors
def validate(policy_dir: Path, output_format: str, quiet: bool, jobs: int | None) -> None:
    """Load, validate, resolve and verify a policy. Writes nothing."""
    with progress(f"validating {policy_dir}", quiet=quiet):
        result = compile_policy(PolicySource.from_directory(policy_dir), jobs=jobs)
    print_diagnostics(result.warnings, output_format)
    teams = sum(len(c.report["teams"]) for c in result.clusters.values())
    if output_format == "json":
        emit_json({"ok": True, "clusters": len(result.clusters), "teams": teams,
                   "diagnostics": diagnostics_json(result.warnings)})
    elif not quiet:
        click.echo(f"ok: {policy_dir} is a valid policy ({len(result.clusters)} cluster(s), {teams} team(s))")


@click.command("compile")
@policy_dir_argument
@click.option("--out", "out_dir", default="out", show_default=True, type=click.Path(path_type=Path),
              help="Where the compiled manifests go (one folder per cluster).")
@cluster_option
@allow_inadmissible_option
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing; exit 1 when OUT differs from what the policies compile to (pre-commit, CI).")
@format_option(*DIAGNOSTIC_FORMATS)
@quiet_option
@jobs_option
@handles_errors
def compile_command(policy_dir: Path, out_dir: Path, cluster: str | None, allow_inadmissible: bool,
                    check_only: bool, output_format: str, quiet: bool, jobs: int | None) -> None:
    """Compile a policy into Kueue and DRA manifests under OUT/<cluster>/."""
    with progress(f"compiling {policy_dir}", quiet=quiet):
        result = compile_policy(PolicySource.from_directory(policy_dir), cluster=cluster, jobs=jobs)
    never = never_in_plain_words(result)
    if never and not allow_inadmissible:
        raise PolicyError(never + [_hint()])
    notes = result.warnings + never
    if check_only:
        _check_out(result, out_dir, notes, output_format, quiet)
        return
    print_diagnostics(notes, output_format)
    written = write_tree(result, out_dir)
    if output_format == "json":
        emit_json({"ok": True, "out": str(out_dir), "files": written, "diagnostics": diagnostics_json(notes),
                   "clusters": {name: {"workloads": r["workloads"]} for name, r in result.reports.items()}})
    elif not quiet:
        _summary(result, out_dir)
        click.echo(f"wrote {len(written)} files under {out_dir}/")


def _check_out(result: CompileResult, out_dir: Path, notes: list[Diagnostic], output_format: str,
               quiet: bool) -> None:
    differing = differences(result, out_dir)
    if differing:
        problems = [Diagnostic(codes.OUT_STALE, f"{d.status}: what the policies compile to differs",
                               SourcePosition(str(out_dir / d.path))) for d in differing]
        raise PolicyError(notes + problems + [Diagnostic(
            codes.OUT_STALE, f"run `kueue-policy compile` and commit {out_dir}/", severity=Severity.NOTE)])
    print_diagnostics(notes, output_format)
    if output_format == "json":
        emit_json({"ok": True, "out": str(out_dir), "differing": [], "diagnostics": diagnostics_json(notes)})
    elif not quiet:
        click.echo(f"ok: {out_dir}/ is what the policies compile to ({len(result.files)} files)")


def _hint() -> Diagnostic:
    return Diagnostic(codes.NEVER_ADMISSIBLE, "nothing was written; fix the policy or pass --allow-inadmissible to compile anyway",
                      severity=Severity.NOTE)


@click.command()
@policy_dir_argument
@cluster_option
@allow_inadmissible_option
@format_option(*DIAGNOSTIC_FORMATS)
@quiet_option
@jobs_option
@handles_errors
def check(policy_dir: Path, cluster: str | None, allow_inadmissible: bool, output_format: str, quiet: bool,
          jobs: int | None) -> None:
    """Report whether every declared workload can be admitted, and why (exit 1 on `never`)."""
    with progress(f"checking {policy_dir}", quiet=quiet):
        result = compile_policy(PolicySource.from_directory(policy_dir), cluster=cluster, jobs=jobs)
    verdicts = [v.to_dict() for v in result.verdicts]
    never = never_in_plain_words(result)
    failed = bool(never) and not allow_inadmissible
    if output_format == "json":
        emit_json({"ok": not failed, "workloads": verdicts,
                   "summary": {verdict: sum(1 for v in verdicts if v["verdict"] == verdict)
                               for verdict in ("guaranteed", "borrowing", "never")},
                   "diagnostics": diagnostics_json(result.warnings + never)})
        print_diagnostics(result.warnings + never)
        if failed:
            sys.exit(1)
        return
    if not quiet:
        _verdict_table(console(), verdicts, _teams_of(result))
    print_diagnostics(result.warnings, output_format)
    if failed:
        raise PolicyError(never)
    print_diagnostics(never, output_format)
