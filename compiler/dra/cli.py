"""`kueue-policy devices check --inventory FILE [--out DIR | MANIFEST...] [--format text|json]`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from compiler.core import codes

REPORT_FILE = "report.json"
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


def _compiled_report(out_dir: Path, cluster: str | None) -> dict | None:
    """The report.json of the cluster the inventory is of (out/<cluster>/ or out/ with one)."""
    found = {p.parent.name: p for p in sorted(Path(out_dir).rglob(REPORT_FILE))}
    if cluster is not None:
        if cluster not in found:
            raise click.UsageError(f"--cluster {cluster}: {out_dir} holds reports of "
                                   f"{', '.join(found) or 'no cluster'}")
        chosen = found[cluster]
    elif len(found) == 1:
        chosen = next(iter(found.values()))
    elif not found:
        return None
    else:
        raise click.UsageError(f"{out_dir} holds clusters {', '.join(found)}: name the inventory's with --cluster")
    try:
        data = json.loads(chosen.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError([Diagnostic(codes.BAD_MANIFEST, f"not a compiled report: {error}",
                                     SourcePosition(str(chosen)))]) from None
    return data if isinstance(data, dict) else None


@devices.command("check")
@click.option("--inventory", "inventories", multiple=True, required=True, type=click.Path(path_type=Path),
              help="ResourceSlices, as `kubectl get resourceslices -o yaml` prints them (repeatable).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="A compiled output folder; its DeviceClasses and ResourceClaimTemplates are checked.")
@click.option("--cluster", default=None,
              help="With --out holding several clusters: the one the inventory is of (its pools are checked).")
@click.argument("manifests", nargs=-1, type=click.Path(path_type=Path))
@format_option("text", "json")
@handles_errors
def check(inventories: tuple[Path, ...], out_dir: Path | None, cluster: str | None, manifests: tuple[Path, ...],
          output_format: str) -> None:
    """Per DeviceClass and per claim template, how many devices match its CEL selectors.

    With --out, the pools the compiled report declares are checked too: a pool whose GPUs,
    nodes or MIG instances the inventory does not hold is an error."""
    if out_dir is None and not manifests:
        raise click.UsageError("give --out DIR or manifest files holding DeviceClasses")
    _existing(list(inventories), "inventory file")
    _existing(([out_dir] if out_dir else []) + list(manifests), "manifest path")
    inventory = load_inventory(inventories)
    loaded = load_manifests(manifest_paths(out_dir, manifests))
    if not loaded.device_classes and not loaded.claim_templates:
        raise InputError([Diagnostic(codes.BAD_MANIFEST,
                                     "no DeviceClass or ResourceClaimTemplate found in the manifests")])
    report = check_devices(loaded, inventory, _compiled_report(out_dir, cluster) if out_dir else None)
    if output_format == "json":
        emit_json(report.to_dict())
    else:
        click.echo(f"inventory: {report.devices} device(s)")
        for entry in report.classes:
            click.echo(f"DeviceClass {entry.name}: {entry.matching} device(s) match on {entry.nodes} node(s)")
        for entry in report.claims:
            click.echo(f"ResourceClaimTemplate {entry.name} request {entry.request} "
                       f"({entry.device_class}): {entry.matching} match, {entry.requested} requested")
        for shortfall in report.shortfalls:
            click.echo(f"pools {', '.join(shortfall.pools)}: {shortfall.declared_devices} device(s) declared, "
                       f"{shortfall.devices} in the inventory ({shortfall.device_class})")
    if not report.ok:
        raise PolicyError(report.diagnostics)
    print_diagnostics(report.diagnostics)     # warnings only
