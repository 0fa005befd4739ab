import click


@click.command()
def validate() -> None:
    """(placeholder, being built)"""


@click.command("compile")
def compile_command() -> None:
    """(placeholder, being built)"""


@click.command()
def check() -> None:
    """(placeholder, being built)"""
