"""`kueue-policy evaluate FILE... [-]`: the admission engine on real manifests."""

from __future__ import annotations

import sys

import click

from compiler.core import codes
from compiler.cli.common import console, emit_json, format_option, handles_errors, print_diagnostics, progress
from compiler.core.errors import Diagnostic, InputError
from compiler.evaluator import evaluate as run_evaluation
from compiler.evaluator.loader import load_documents
from compiler.evaluator.reader import read_files
from compiler.runtime.garbage_collection import few_collections


@click.command()
@click.argument("files", nargs=-1, required=True)
@click.option("--cycles", type=click.IntRange(min=1), default=None,
              help="Run N scheduling cycles (default: until nothing changes).")
@format_option("table", "json")
@click.option("--explain", "explain_name", metavar="NS/NAME", default=None,
              help="Print the reasoning for one workload.")
@click.option("--engine", type=click.Choice(["python", "kueue"]), default="python", show_default=True,
              help="python: the built-in engine; kueue: Kueue's own scheduler (kueue-oracle, `make oracle`).")
@handles_errors
def evaluate(files: tuple[str, ...], cycles: int | None, output_format: str, explain_name: str | None,
             engine: str) -> None:
    """Run Kueue's admission logic on cluster manifests (`kubectl get -o yaml` output)."""
    stdin_text = sys.stdin.read() if "-" in files else None
    if engine == "kueue":
        if explain_name is not None:
            raise click.UsageError("--explain needs --engine python (kueue-oracle reports outcomes only)")
        _evaluate_with_kueue(list(files), stdin_text, cycles, output_format)
        return
    with few_collections():  # reading, loading and the run build large long-lived graphs
        documents = read_files(list(files), stdin_text)
        state = load_documents(documents)
        print_diagnostics(state.warnings)
        with progress("evaluating") as describe:
            result = run_evaluation(state, cycles, after_cycle=lambda engine: describe(
                f"evaluating: cycle {engine.cycle:,}, {engine.decisions:,} decisions"))
    if not result.converged:
        click.echo(f"kueue-policy: warning: {_not_converged(result)}", err=True)
    if explain_name is not None:
        try:
            click.echo(result.explain(explain_name))
        except KeyError as error:
            raise InputError([Diagnostic(codes.EVAL_UNREADABLE, str(error.args[0]))]) from None
        return
    if output_format == "json":
        emit_json(result.to_json())
        return
    _print_table(f"Kueue admission ({result.cycles} cycle(s))", result.table())


def _not_converged(result) -> str:
    if result.circle is None:
        return (f"still changing after {result.cycles} cycles (workloads keep preempting each other); "
                "showing the state at that point")
    first, period = result.circle
    return (f"workloads keep preempting each other in a circle: from cycle {first:,} the cluster comes back "
            f"to the same state every {period:,} cycle{'s' if period > 1 else ''}, as Kueue's own scheduler "
            f"would go round; showing the state at the cycle cap ({result.cycles:,} cycles), worked out "
            "from the circle without running every cycle")


def _evaluate_with_kueue(files: list[str], stdin_text: str | None, cycles: int | None, output_format: str) -> None:
    from compiler.evaluator.oracle_client import OracleInputError, run_oracle, table_rows

    try:
        result = run_oracle(files, stdin_text, cycles)
    except OracleInputError:
        sys.exit(1)  # kueue-oracle named the file, line and cause on stderr
    if output_format == "json":
        emit_json(result.payload)
        return
    _print_table("Kueue admission (Kueue's own scheduler, kueue-oracle)", table_rows(result.payload))


def _print_table(title: str, rows: list[tuple[str, ...]]) -> None:
    from rich.table import Table

    table = Table(title=title)
    for column in ("workload", "clusterQueue", "status", "flavors", "borrowing", "code", "reason"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    console().print(table)
