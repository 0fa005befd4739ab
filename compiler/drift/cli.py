"""`kueue-policy drift [DIR] --cluster C [--live EXPORT... | --kubeconfig PATH [--context C]]`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from compiler.cli.common import format_option, handles_errors, print_diagnostics
from compiler.core import codes
from compiler.core.errors import Diagnostic, InputError, PolicyError, SourcePosition
from compiler.drift import render
from compiler.drift.detect import DesiredObject, DriftReport, detect
from compiler.drift.live import Kubectl, LiveCluster, from_cluster, from_exports, key_of
from compiler.stages.pipeline import PolicySource, compile_policy


def _compiled(policy: Path, cluster: str | None):
    result = compile_policy(PolicySource.from_directory(policy), cluster=cluster)
    print_diagnostics(result.warnings)
    if cluster is None:
        if len(result.clusters) != 1:
            raise click.UsageError(f"the policy defines clusters {', '.join(sorted(result.clusters))}: "
                                   "name the one to compare with --cluster")
        cluster = next(iter(result.clusters))
    return result.clusters[cluster]


@click.command("drift")
@click.argument("policy", required=False, default="policies", type=click.Path(path_type=Path))
@click.option("--cluster", default=None, help="The policy's cluster the live cluster should match.")
@click.option("--live", "exports", multiple=True, type=click.Path(path_type=Path),
              help="The cluster's objects as `kubectl get ... -o yaml` prints them (repeatable); "
                   "without it the cluster is read with kubectl.")
@click.option("--kubeconfig", type=click.Path(path_type=Path), default=None,
              help="The kubeconfig kubectl reads the cluster with (default: kubectl's own).")
@click.option("--context", default=None, help="The kubeconfig context to use.")
@format_option("text", "markdown", "json")
@handles_errors
def drift(policy: Path, cluster: str | None, exports: tuple[Path, ...], kubeconfig: Path | None,
          context: str | None, output_format: str) -> None:
    """Compare the live cluster with what the policy compiles to; exit 1 on drift.

    Reports objects missing, extra (labelled as kueue-policy's) or changed field by field, and
    what the GitOps tool does not see: inactive ClusterQueues, LocalQueues pointing nowhere,
    pools with fewer Ready nodes than declared, and a Kueue Configuration that differs."""
    if exports and (kubeconfig or context):
        raise click.UsageError("--live reads exports; --kubeconfig and --context read a cluster: give one or the other")
    if not policy.is_dir():
        raise click.UsageError(f"{policy} is not a folder of policy files")
    missing = [p for p in exports if not p.is_file()]
    if missing:
        raise InputError([Diagnostic(codes.EVAL_UNREADABLE, "no such file", SourcePosition(str(p))) for p in missing])
    artifacts = _compiled(policy, cluster)
    desired = [DesiredObject(b.obj, b.origin.file) for b in artifacts.objects if not b.is_patch]
    live: LiveCluster
    if exports:
        live = from_exports(list(exports))
    else:
        keys = sorted(k for k in (key_of(d.obj) for d in desired) if k is not None)
        live = from_cluster(Kubectl(kubeconfig, context), keys)
    pools = {pool["name"]: pool for pool in artifacts.report.get("pools", [])}
    report = detect(artifacts.name, desired, artifacts.kueue_configuration, pools, live)
    _print(report, output_format)
    if report.drifted:
        sys.exit(1)


def _print(report: DriftReport, output_format: str) -> None:
    if output_format == "json":
        click.echo(render.as_json(report))
    elif output_format == "markdown":
        click.echo(render.markdown(report))
    else:
        click.echo(render.text(report))


__all__ = ["drift", "PolicyError"]
