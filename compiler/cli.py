"""The `kueue-policy` command line. Each command lives beside the stage it drives."""

from __future__ import annotations

import click

from compiler import __version__, codes


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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


def _register_commands() -> None:
    # Imported here so that each area owns its command module.
    from compiler.cli_policy import check, compile_command, validate
    from compiler.evaluator.cli import evaluate
    from compiler.mig.cli import plan_mig
    from compiler.dra.cli import devices
    from compiler.deliver.cli import diff, pr
    from compiler.simulate import simulate, trace
    from compiler.schema_cli import schema

    for command in (validate, compile_command, check, evaluate, plan_mig, devices, simulate, trace, diff, pr, schema):
        main.add_command(command)


_register_commands()
