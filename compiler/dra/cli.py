"""`kueue-policy devices check --inventory FILE [--out DIR | MANIFEST...] [--format text|json]`."""

from __future__ import annotations

from pathlib import Path

import click

from compiler.core import codes
from compiler.cli.common import emit_json, format_option, handles_errors, print_diagnostics
from compiler.dra.check import check_devices
from compiler.dra.inventory import load_inventory, load_manifests, manifest_paths
from compiler.core.errors import Diagnostic, InputError, PolicyError, SourcePosition


@click.group()
def devices() -> None:
    """Check DeviceClasses and claim templates against a cluster's devices (ResourceSlices)."""


def _existing(paths: list[Path], what: str) -> None:
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise InputError([Diagnostic(codes.UNREADABLE, f"{what} {p} does not exist", SourcePosition(str(p)))
                          for p in missing])


@devices.command("check")
@click.option("--inventory", "inventories", multiple=True, required=True, type=click.Path(path_type=Path),
              help="ResourceSlices, as `kubectl get resourceslices -o yaml` prints them (repeatable).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="A compiled output folder; its DeviceClasses and ResourceClaimTemplates are checked.")
@click.argument("manifests", nargs=-1, type=click.Path(path_type=Path))
@format_option("text", "json")
@handles_errors
def check(inventories: tuple[Path, ...], out_dir: Path | None, manifests: tuple[Path, ...],
          output_format: str) -> None:
    """Per DeviceClass and per claim template, how many devices match its CEL selectors."""
    if out_dir is None and not manifests:
        raise click.UsageError("give --out DIR or manifest files holding DeviceClasses")
    _existing(list(inventories), "inventory file")
    _existing(([out_dir] if out_dir else []) + list(manifests), "manifest path")
    inventory = load_inventory(inventories)
    loaded = load_manifests(manifest_paths(out_dir, manifests))
    if not loaded.device_classes and not loaded.claim_templates:
        raise InputError([Diagnostic(codes.BAD_MANIFEST,
                                     "no DeviceClass or ResourceClaimTemplate found in the manifests")])
    report = check_devices(loaded, inventory)
    if output_format == "json":
        emit_json(report.to_dict())
    else:
        click.echo(f"inventory: {report.devices} device(s)")
        for entry in report.classes:
            click.echo(f"DeviceClass {entry.name}: {entry.matching} device(s) match on {entry.nodes} node(s)")
        for entry in report.claims:
            click.echo(f"ResourceClaimTemplate {entry.name} request {entry.request} "
                       f"({entry.device_class}): {entry.matching} match, {entry.requested} requested")
    if not report.ok:
        raise PolicyError(report.diagnostics)
    print_diagnostics(report.diagnostics)     # warnings only
