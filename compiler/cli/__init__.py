"""The `kueue-policy` command line. Each command lives beside the stage it drives."""

from __future__ import annotations

import importlib

import click

from compiler import __version__
from compiler.core import codes

# Each command lives beside the stage it drives and is imported only when it runs: `evaluate`
# need not load the compiler's templates and schemas, nor `compile` GitPython. (`--help` lists
# them all, so it imports them all.)
COMMANDS = {
    "validate": ("compiler.stages.cli", "validate"),
    "compile": ("compiler.stages.cli", "compile_command"),
    "check": ("compiler.stages.cli", "check"),
    "evaluate": ("compiler.evaluator.cli", "evaluate"),
    "plan-mig": ("compiler.mig.cli", "plan_mig"),
    "devices": ("compiler.dra.cli", "devices"),
    "simulate": ("compiler.simulate.cli", "simulate"),
    "trace": ("compiler.simulate.cli", "trace"),
    "diff": ("compiler.deliver.cli", "diff"),
    "pr": ("compiler.deliver.cli", "pr"),
    "schema": ("compiler.language.cli", "schema"),
    "sandbox": ("compiler.sandbox.cli", "sandbox"),
    "drift": ("compiler.drift.cli", "drift"),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            module, attribute = COMMANDS[name]
            self.add_command(getattr(importlib.import_module(module), attribute), name)
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kueue-policy")
def main() -> None:
    """Compile GPU-sharing policy into Kueue and DRA manifests, and prove what Kueue will admit."""


@main.command()
@click.argument("code", required=False)
def explain(code: str | None) -> None:
    """Print the long explanation of a diagnostic code (all codes without an argument)."""
    if code is None:
        for info in codes.all_codes():
            click.echo(f"{info.code}  {info.summary}")
        return
    info = codes.lookup(code)
    if info is None:
        raise click.UsageError(f"unknown diagnostic code {code!r}; run `kueue-policy explain` for the list")
    click.echo(f"{info.code}: {info.summary}\n\n{info.explanation}")
