"""`kueue-policy import FILE... --out DIR`: a policy folder from a live cluster's Kueue objects."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import click

from compiler.cli.common import handles_errors, print_diagnostics
from compiler.core import codes
from compiler.core.errors import Diagnostic, PolicyError, Severity
from compiler.importer.output import is_empty_dir, write_folder
from compiler.importer.run import import_cluster
from compiler.importer.translate import DNS_LABEL


@click.command("import")
@click.argument("files", nargs=-1, required=True)
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path),
              help="The policy folder to write (created; must be empty unless --force).")
@click.option("--force", is_flag=True, help="Replace a non-empty --out folder.")
@click.option("--name", "cluster_name", default=None,
              help="The Cluster's name (default: the kueue-policy.io/cluster label of the objects, else 'imported').")
@click.option("--kueue-version", default=None, help="Kueue version of the cluster, e.g. 0.19 (default: from the "
                                                     "objects' API version: v1beta1 -> 0.14, v1beta2 -> 0.19).")
@click.option("--strict", is_flag=True, help="Fail (exit 1, nothing written) when the policy does not reproduce "
                                             "some field of the export.")
@click.option("-q", "--quiet", is_flag=True, help="Print only problems, not the notes on carried fields.")
@handles_errors
def import_command(files: tuple[str, ...], out_dir: Path, force: bool, cluster_name: str | None,
                   kueue_version: str | None, strict: bool, quiet: bool) -> None:
    """Write a policy (a Cluster file and one Team file per ClusterQueue) that compiles back to a
    cluster's Kueue objects (`kubectl get resourceflavors,cohorts,clusterqueues,localqueues,
    workloadpriorityclasses,topologies -o yaml`, the Kueue manager ConfigMap, DeviceClasses, Nodes)."""
    if cluster_name is not None and not DNS_LABEL.match(cluster_name):
        raise click.UsageError(f"--name {cluster_name!r} is not a DNS label (lower-case letters, digits and '-')")
    if kueue_version is not None and not re.match(r"^\d+\.\d+$", kueue_version):
        raise click.UsageError(f"--kueue-version {kueue_version!r} is not MAJOR.MINOR, e.g. 0.19")
    if out_dir.exists() and not out_dir.is_dir():
        raise click.UsageError(f"--out {out_dir} is a file, not a folder")
    if out_dir.exists() and not is_empty_dir(out_dir) and not force:
        raise click.UsageError(f"--out {out_dir} is not empty; pass --force to replace it")
    stdin_text = sys.stdin.read() if "-" in files else None
    result = import_cluster(list(files), stdin_text, cluster_name=cluster_name, kueue_version=kueue_version)
    if strict and result.not_carried:
        raise PolicyError([Diagnostic(d.code, d.message, d.position, Severity.ERROR) for d in result.not_carried])
    shown = result.notes if not quiet else [d for d in result.notes if d.severity is not Severity.NOTE]
    print_diagnostics(shown)
    write_folder(out_dir, result.files)
    counts = Counter(note.code for note in result.notes)
    click.echo(f"imported {len(result.policy.teams)} team(s), {len(result.policy.cluster['spec']['pools'])} pool(s) "
               f"into {out_dir}: {counts[codes.IMPORT_CARRIED]} field(s) carried as written (KP941), "
               f"{counts[codes.IMPORT_NOT_CARRIED]} not reproduced (KP942), "
               f"{counts[codes.IMPORT_GUESSED]} pool size(s) guessed (KP943)", err=True)
