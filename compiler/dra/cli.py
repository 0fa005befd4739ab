import click


@click.group()
def devices() -> None:
    """(placeholder, being built) Check DeviceClasses and claims against an inventory."""
