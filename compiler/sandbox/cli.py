"""`kueue-policy sandbox up|down|status`: a real Kueue on this machine (see lifecycle.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from compiler.cli.common import emit_json, format_option, handles_errors
from compiler.sandbox.lifecycle import DEFAULT_JOB_CRDS

dir_option = click.option(
    "--dir", "root", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="The sandbox's folder; everything it writes stays in it "
         "(default: $KUEUE_POLICY_SANDBOX_DIR, else ~/.cache/kueue-policy/sandbox).")


def _root(root: Path | None) -> Path:
    from compiler.sandbox.workdir import default_dir
    return root if root is not None else default_dir()


@click.group("sandbox")
def sandbox() -> None:
    """A local Kubernetes API server with Kueue's own manager and webhooks (built by `make sandbox`)."""


@sandbox.command("up")
@dir_option
@click.option("--out", "tree", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="A compiled cluster folder (out/<cluster>) to apply and wait for; its Kueue "
                   "Configuration is the manager's.")
@click.option("--job-crds", default=",".join(DEFAULT_JOB_CRDS), show_default=True, metavar="NAMES",
              help="Comma-separated CRD names of the job kinds to install beside Kueue's "
                   "(e.g. pytorchjobs.kubeflow.org), or `all` (each costs the API server about a second).")
@handles_errors
def up_command(root: Path | None, tree: Path | None, job_crds: str) -> None:
    """Start etcd, kube-apiserver and Kueue on 127.0.0.1; print KUBECONFIG=<path> last.

    The servers keep running after this returns; `sandbox down` stops them."""
    from compiler.sandbox import lifecycle
    from compiler.sandbox.artifacts import UnknownJobCrd
    names = tuple(name.strip() for name in job_crds.split(",") if name.strip())
    try:
        result = lifecycle.up(_root(root), tree, job_crds=names,
                              progress=lambda step: click.echo(f"sandbox: {step}", err=True))
    except UnknownJobCrd as error:
        raise click.BadParameter(str(error), param_hint="--job-crds") from None
    ports = result.state.ports
    click.echo(f"sandbox: up in {result.seconds:.1f} s: kube-apiserver https://127.0.0.1:{ports['apiserver']}, "
               f"Kueue configuration from {result.configuration_from}", err=True)
    click.echo(f"KUBECONFIG={result.kubeconfig}")


@sandbox.command("down")
@dir_option
@handles_errors
def down_command(root: Path | None) -> None:
    """Stop the sandbox's servers and remove its folder."""
    from compiler.sandbox import lifecycle
    path = _root(root)
    stopped = lifecycle.down(path)
    click.echo(f"sandbox: stopped {', '.join(stopped)}; removed {path}" if stopped
               else f"sandbox: nothing ran in {path}", err=True)


@sandbox.command("status")
@dir_option
@format_option("text", "json")
@handles_errors
def status_command(root: Path | None, output_format: str) -> None:
    """Say what runs in the sandbox (exit 0 when every server runs, 1 otherwise)."""
    from compiler.sandbox import lifecycle
    found = lifecycle.status(_root(root))
    healthy = found.exists and bool(found.servers) and all(found.servers.values()) and found.ready
    if output_format == "json":
        emit_json({"dir": str(found.root), "exists": found.exists, "ready": found.ready,
                   "servers": found.servers, "ports": found.ports, "kubeconfig": found.kubeconfig})
    elif not found.exists:
        click.echo(f"no sandbox in {found.root}")
    else:
        for name, alive in found.servers.items():
            click.echo(f"{name:15} {'running' if alive else 'stopped'}")
        click.echo(f"{'ready':15} {'yes' if found.ready else 'no (up did not finish)'}")
        click.echo(f"KUBECONFIG={found.kubeconfig}")
    sys.exit(0 if healthy else 1)
