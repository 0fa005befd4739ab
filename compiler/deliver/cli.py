import click


@click.command()
def diff() -> None:
    """(placeholder, being built) What a policy change does, per team."""
    raise click.ClickException("diff is not built yet")


@click.command()
def pr() -> None:
    """(placeholder, being built) Compile, commit, push and open or update the pull request."""
    raise click.ClickException("pr is not built yet")
