import click


@click.command()
def evaluate() -> None:
    """(placeholder, being built) Run Kueue's admission logic on cluster manifests."""
    raise click.ClickException("evaluate is not built yet")
