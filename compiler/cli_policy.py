"""`validate`, `compile` and `check`: the commands that run the compile pipeline on a policy."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from compiler import codes
from compiler.clikit import emit_json, format_option, handles_errors, jobs_option, print_diagnostics
from compiler.emit import write_tree
from compiler.errors import Diagnostic, PolicyError, Severity
from compiler.pipeline import CompileResult, PolicySource, compile_policy

policy_dir_argument = click.argument("policy_dir", default="policies", type=click.Path(path_type=Path))
cluster_option = click.option("--cluster", default=None, help="Compile only this cluster.")
allow_inadmissible_option = click.option(
    "--allow-inadmissible", is_flag=True,
    help="Do not fail when a declared workload could never be admitted (the verdicts are still reported).")


# A summary is for reading: past these, the table says how many more rows REPORT.md holds.
MAX_TEAM_ROWS = 40
MAX_WORKLOAD_ROWS = 60


def _console() -> Console:
    # A fixed width keeps the output identical in a terminal, in CI logs and in tests.
    return Console(width=140, highlight=False, soft_wrap=False)


def _summary(result: CompileResult, out: Path | None) -> None:
    console = _console()
    for name, artifacts in result.clusters.items():
        report = artifacts.report
        title = f"{name}: {len(report['teams'])} teams, {len(report['pools'])} pools"
        if out is not None:
            title += f" -> {out / name}"
        pools = Table(title=title, title_justify="left")
        for column in ("pool", "GPU", "capacity", "GPUs", "guaranteed", "shared", "MIG instances"):
            pools.add_column(column, justify="right" if column in ("GPUs", "guaranteed", "shared") else "left")
        for pool in report["pools"]:
            mig = pool.get("migSummary") or "-"
            pools.add_row(pool["name"], pool["gpu"], pool["capacity"], str(pool["gpus"]),
                          "-" if pool["guaranteed"] is None else str(pool["guaranteed"]),
                          "-" if pool["shared"] is None else str(pool["shared"]), mig)
        console.print(pools)
        teams = Table(title="quota per team and flavor", title_justify="left")
        for column in ("team", "cohort", "flavor", "resource", "guaranteed", "burst", "lend"):
            teams.add_column(column)
        for team in report["teams"][:MAX_TEAM_ROWS]:
            # MIG profiles a team may only borrow are noise here; report.json lists them all.
            rows = [f for f in team["flavors"]
                    if f["guaranteed"] or not f["resource"].startswith("nvidia.com/mig-")]
            for index, flavor in enumerate(rows):
                first = index == 0
                teams.add_row(team["name"] if first else "", (team["cohort"] or "-") if first else "",
                              flavor["flavor"], flavor["resource"], str(flavor["guaranteed"]),
                              "unlimited" if flavor["burst"] is None else str(flavor["burst"]),
                              "all" if flavor["lend"] is None else str(flavor["lend"]))
        if len(report["teams"]) > MAX_TEAM_ROWS:
            teams.caption = f"... and {len(report['teams']) - MAX_TEAM_ROWS} more teams: see {name}/REPORT.md"
        console.print(teams)
        _verdict_table(console, report["workloads"], limit=MAX_WORKLOAD_ROWS, where=f"{name}/REPORT.md")


def _verdict_table(console: Console, workloads: list[dict], limit: int | None = None, where: str = "") -> None:
    counts = {v: sum(1 for w in workloads if w["verdict"] == v) for v in ("guaranteed", "borrowing", "never")}
    title = "declared workloads: " + ", ".join(f"{n} {v}" for v, n in counts.items())
    table = Table(title=title, title_justify="left")
    for column in ("team", "workload", "verdict", "reason"):
        table.add_column(column, overflow="fold")
    # The ones that need attention first when the list is cut.
    shown = workloads if limit is None or len(workloads) <= limit else (
        sorted(workloads, key=lambda w: ("never", "borrowing", "guaranteed").index(w["verdict"]))[:limit])
    for workload in shown:
        table.add_row(workload["team"], workload["name"], workload["verdict"], workload["reason"])
    if len(shown) < len(workloads):
        table.caption = f"... and {len(workloads) - len(shown)} more: see {where}"
    console.print(table)


def _warn(result: CompileResult) -> None:
    print_diagnostics(result.warnings)


@click.command()
@policy_dir_argument
@jobs_option
@handles_errors
def validate(policy_dir: Path, jobs: int | None) -> None:
    """Load, validate, resolve and verify a policy. Writes nothing."""
    result = compile_policy(PolicySource.from_directory(policy_dir), jobs=jobs)
    _warn(result)
    teams = sum(len(c.report["teams"]) for c in result.clusters.values())
    click.echo(f"ok: {policy_dir} is a valid policy ({len(result.clusters)} cluster(s), {teams} team(s))")


@click.command("compile")
@policy_dir_argument
@click.option("--out", "out_dir", default="out", show_default=True, type=click.Path(path_type=Path),
              help="Where the compiled manifests go (one folder per cluster).")
@cluster_option
@allow_inadmissible_option
@format_option("text", "json")
@jobs_option
@handles_errors
def compile_command(policy_dir: Path, out_dir: Path, cluster: str | None, allow_inadmissible: bool,
                    output_format: str, jobs: int | None) -> None:
    """Compile a policy into Kueue and DRA manifests under OUT/<cluster>/."""
    result = compile_policy(PolicySource.from_directory(policy_dir), cluster=cluster, jobs=jobs)
    never = result.never_diagnostics()
    if never and not allow_inadmissible:
        raise PolicyError(never + [_hint()])
    _warn(result)
    if never:
        print_diagnostics(never)
    written = write_tree(result, out_dir)
    if output_format == "json":
        emit_json({"out": str(out_dir), "files": written,
                   "clusters": {name: {"workloads": r["workloads"]} for name, r in result.reports.items()}})
    else:
        _summary(result, out_dir)
        click.echo(f"wrote {len(written)} files under {out_dir}/")


def _hint() -> Diagnostic:
    return Diagnostic(codes.NEVER_ADMISSIBLE, "nothing was written; fix the policy or pass --allow-inadmissible to compile anyway",
                      severity=Severity.NOTE)


@click.command()
@policy_dir_argument
@cluster_option
@allow_inadmissible_option
@format_option("text", "json")
@jobs_option
@handles_errors
def check(policy_dir: Path, cluster: str | None, allow_inadmissible: bool, output_format: str,
          jobs: int | None) -> None:
    """Report whether every declared workload can be admitted, and why (exit 1 on `never`)."""
    result = compile_policy(PolicySource.from_directory(policy_dir), cluster=cluster, jobs=jobs)
    verdicts = [v.to_dict() for v in result.verdicts]
    if output_format == "json":
        emit_json({"workloads": verdicts,
                   "summary": {verdict: sum(1 for v in verdicts if v["verdict"] == verdict)
                               for verdict in ("guaranteed", "borrowing", "never")}})
    else:
        _verdict_table(_console(), verdicts)
    never = result.never_diagnostics()
    if never and not allow_inadmissible:
        raise PolicyError(never)
