import click


@click.command("plan-mig")
def plan_mig() -> None:
    """(placeholder, being built) Minimal MIG layout for a demand."""
    raise click.ClickException("plan-mig is not built yet")
