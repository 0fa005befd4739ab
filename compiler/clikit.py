"""What every command shares: options defined once, and the one place errors become exit codes."""

from __future__ import annotations

import functools
import json
import sys
from typing import Any, Callable, Iterable

import click

from compiler.errors import Diagnostic, EnvironmentFailure, KueuePolicyError, PolicyError, Severity


def format_option(*choices: str, default: str | None = None) -> Callable:
    """`--format` with the choices a command supports; the first is the default."""
    return click.option(
        "--format", "output_format", type=click.Choice(list(choices)),
        default=default or choices[0], show_default=True, help="Output format.",
    )


def jobs_option(command: Callable) -> Callable:
    """`--jobs N`: how many processes a compile may use (KUEUE_POLICY_JOBS sets it too)."""
    return click.option(
        "--jobs", type=click.IntRange(min=1), default=None, envvar="KUEUE_POLICY_JOBS", show_envvar=True,
        help="Processes a compile may use; 1 keeps it in one process (default: a second one for "
             "large policies on a machine with two or more cores).")(command)


def print_diagnostics(diagnostics: Iterable[Diagnostic]) -> None:
    """Diagnostics go to stderr, one per line, `path:line:col: error[KPnnn]: message`."""
    for diagnostic in diagnostics:
        click.echo(diagnostic.render(), err=True)


def emit_json(payload: Any) -> None:
    click.echo(json.dumps(payload, indent=2, sort_keys=False))


def handles_errors(command: Callable) -> Callable:
    """Map kueue-policy's error hierarchy to exit codes; a user mistake never shows a traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except PolicyError as error:
            print_diagnostics(error.diagnostics)
            count = sum(1 for d in error.diagnostics if d.severity is Severity.ERROR)
            click.echo(f"kueue-policy: {count} error(s)", err=True)
            sys.exit(error.exit_code)
        except EnvironmentFailure as error:
            click.echo(f"kueue-policy: {error.render()}", err=True)
            sys.exit(error.exit_code)
        except KueuePolicyError as error:
            click.echo(f"kueue-policy: {error}", err=True)
            sys.exit(error.exit_code)

    return wrapper
