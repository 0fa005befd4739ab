"""What every command shares: options defined once, output that fits where it goes, and the one
place errors become exit codes.

Output rules:
- machine output (`--format json`) goes to stdout and stays one valid JSON document even when the
  command fails: `{"ok": false, "diagnostics": [...]}`;
- `--format github` prints GitHub Actions workflow commands (`::error file=...,line=...::...`)
  on stdout, so a policy error is annotated on the pull request's diff;
- human diagnostics always go to stderr, `path:line:col: error[KPnnn]: message`;
- tables take the terminal's width (or COLUMNS; 160 when there is no terminal); verdicts are coloured only on a terminal, never
  under NO_COLOR (rich reads both); `-q/--quiet` drops summaries;
- a progress bar shows on stderr only when stderr is a terminal and the work lasts over a second.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import threading
from typing import Any, Callable, Iterable, Iterator

import click
from rich.console import Console
from rich.text import Text

from compiler.core.errors import Diagnostic, EnvironmentFailure, KueuePolicyError, PolicyError, Severity

MACHINE_FORMATS = ("json", "github")
VERDICT_STYLES = {"guaranteed": "green", "borrowing": "yellow", "never": "bold red"}
# How long a compile runs before its progress bar appears (seconds); tests set it to 0.
PROGRESS_DELAY_ENV = "KUEUE_POLICY_PROGRESS_AFTER"


def format_option(*choices: str, default: str | None = None) -> Callable:
    """`--format` with the choices a command supports; the first is the default."""
    meanings = {"json": "json: one JSON document on stdout, errors included",
                "github": "github: GitHub Actions annotations"}
    said = "; ".join(meanings[choice] for choice in choices if choice in meanings)
    return click.option(
        "--format", "output_format", type=click.Choice(list(choices)),
        default=default or choices[0], show_default=True,
        help="Output format" + (f" ({said})." if said else "."))


quiet_option = click.option("-q", "--quiet", is_flag=True,
                            help="Print no summaries: only problems (and machine output).")


# Output that goes to a file or a CI log has no terminal width: rich's 80 columns would fold
# every table; COLUMNS still wins.
NO_TERMINAL_WIDTH = 160


def console(*, stderr: bool = False) -> Console:
    """A console as wide as the terminal (COLUMNS when set); colour only on a terminal without NO_COLOR."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if os.environ.get("COLUMNS") or stream.isatty() else NO_TERMINAL_WIDTH
    return Console(highlight=False, soft_wrap=False, stderr=stderr, width=width)


def verdict_text(verdict: str) -> Text:
    return Text(verdict, style=VERDICT_STYLES.get(verdict, ""))


# --- Diagnostics as data -------------------------------------------------------------------------

def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(diagnostic: Diagnostic) -> str:
    """One workflow command: `::error file=F,line=L,col=C,title=KP123::message`."""
    level = {Severity.ERROR: "error", Severity.WARNING: "warning"}.get(diagnostic.severity, "notice")
    properties = []
    if diagnostic.position is not None:
        position = diagnostic.position
        properties += [f"file={_escape_property(position.path)}", f"line={position.line}",
                       f"col={position.column}"]
    properties.append(f"title={_escape_property(diagnostic.code)}")
    message = diagnostic.message + (f" (see {diagnostic.related})" if diagnostic.related else "")
    return f"::{level} {','.join(properties)}::{_escape_data(message)}"

def jobs_option(command: Callable) -> Callable:
    """`--jobs N`: how many processes a compile may use (KUEUE_POLICY_JOBS sets it too)."""
    return click.option(
        "--jobs", type=click.IntRange(min=1), default=None, envvar="KUEUE_POLICY_JOBS", show_envvar=True,
        help="Processes a compile may use; 1 keeps it in one process (default: a second one for "
             "large policies on a machine with two or more cores).")(command)



def print_diagnostics(diagnostics: Iterable[Diagnostic], output_format: str = "text") -> None:
    """Diagnostics for people on stderr; with --format github also as annotations on stdout."""
    diagnostics = list(diagnostics)
    for diagnostic in diagnostics:
        click.echo(diagnostic.render(), err=True)
    if output_format == "github":
        for diagnostic in diagnostics:
            click.echo(github_annotation(diagnostic))


def diagnostics_json(diagnostics: Iterable[Diagnostic]) -> list[dict]:
    return [d.to_dict() for d in diagnostics]


# Set once a command has printed its JSON document: a failure after it (plan-mig reports an
# infeasible plan, then fails) must not add a second document to stdout.
_JSON_STATE = {"emitted": False}


def emit_json(payload: Any) -> None:
    _JSON_STATE["emitted"] = True
    click.echo(json.dumps(payload, indent=2, sort_keys=False))


def _fail(diagnostics: list[Diagnostic], output_format: str, exit_code: int, summary: str) -> None:
    print_diagnostics(diagnostics, output_format)
    click.echo(f"kueue-policy: {summary}", err=True)
    if output_format == "json" and not _JSON_STATE["emitted"]:
        emit_json({"ok": False, "exitCode": exit_code, "diagnostics": diagnostics_json(diagnostics)})
    sys.exit(exit_code)


def handles_errors(command: Callable) -> Callable:
    """Map kueue-policy's error hierarchy to exit codes; a user mistake never shows a traceback.

    With `--format json` stdout still gets one JSON document carrying the diagnostics."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        output_format = kwargs.get("output_format", "text")
        _JSON_STATE["emitted"] = False
        try:
            return command(*args, **kwargs)
        except PolicyError as error:
            count = sum(1 for d in error.diagnostics if d.severity is Severity.ERROR)
            _fail(list(error.diagnostics), output_format, error.exit_code, f"{count} error(s)")
        except EnvironmentFailure as error:   # git, network, disk: a code apart from the message
            _fail_plain(error.render(), error.code, error.message, output_format, error.exit_code)
        except KueuePolicyError as error:
            _fail_plain(str(error), None, str(error), output_format, error.exit_code)

    return wrapper


def _fail_plain(text: str, code: str | None, message: str, output_format: str, exit_code: int) -> None:
    click.echo(f"kueue-policy: {text}", err=True)
    if output_format == "json" and not _JSON_STATE["emitted"]:
        emit_json({"ok": False, "exitCode": exit_code,
                   "diagnostics": [{"code": code, "severity": "error", "message": message}]})
    elif output_format == "github":
        properties = f" title={code}" if code else ""
        click.echo(f"::error{properties}::{_escape_data(message)}")
    sys.exit(exit_code)


# --- Progress ------------------------------------------------------------------------------------

@contextlib.contextmanager
def progress(description: str, *, quiet: bool = False) -> Iterator[Callable[[str], None]]:
    """An indeterminate progress bar on stderr, shown only when stderr is a terminal and the
    work is still running after a second: quick commands and logs stay clean. Yields a function
    that replaces the bar's description (e.g. with how far the work has got)."""
    if quiet or not sys.stderr.isatty():
        yield lambda _text: None
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                   console=console(stderr=True), transient=True)
    task = bar.add_task(description, total=None)
    lock = threading.Lock()
    state = {"started": False, "done": False}

    def start() -> None:
        with lock:
            if not state["done"]:
                bar.start()
                state["started"] = True

    timer = threading.Timer(float(os.environ.get(PROGRESS_DELAY_ENV, "1.0")), start)
    timer.daemon = True
    timer.start()
    try:
        yield lambda text: bar.update(task, description=text)
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            if state["started"]:
                bar.stop()
