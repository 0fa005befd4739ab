"""`kueue-policy plan-mig --gpu MODEL PROFILE=N ... [--gpus AVAILABLE] [--format json]`."""

from __future__ import annotations

import math

import click

from compiler.core import codes
from compiler.cli.common import emit_json, format_option, handles_errors
from compiler.core.errors import Diagnostic, PolicyError
from compiler.mig.catalogue import load_catalogue
from compiler.mig.mig_manager import assign_nodes, layout_config_name, mig_manager_config
from compiler.mig.placement import describe_layout
from compiler.mig.planner import plan_mig as run_planner


def _parse_demand(items: tuple[str, ...]) -> dict[str, int]:
    demand: dict[str, int] = {}
    problems: list[Diagnostic] = []
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise click.UsageError(f"demand {item!r} is not PROFILE=N (e.g. 3g.40gb=2)")
        try:
            count = int(value)
        except ValueError:
            problems.append(Diagnostic(codes.MIG_BAD_DEMAND,
                                       f"demand {item!r}: {value!r} is not a whole number"))
            continue
        if count < 0:
            problems.append(Diagnostic(codes.MIG_BAD_DEMAND, f"demand {item!r}: count must be >= 0"))
        elif name in demand:
            problems.append(Diagnostic(codes.MIG_BAD_DEMAND, f"profile {name} is given twice"))
        else:
            demand[name] = count
    if problems:
        raise PolicyError(problems)
    return demand


@click.command("plan-mig")
@click.option("--gpu", "model", required=True, metavar="MODEL",
              help="GPU model from the MIG catalogue, e.g. H100-80GB.")
@click.argument("demand", nargs=-1, metavar="PROFILE=N...")
@click.option("--gpus", "gpus_available", type=click.IntRange(min=0), default=None,
              help="GPUs available; the plan fails (exit 1) if it needs more.")
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=None,
              help="Also assign node labels and emit the nvidia-mig-manager config.")
@format_option("text", "json")
@handles_errors
def plan_mig(model: str, demand: tuple[str, ...], gpus_available: int | None,
             gpus_per_node: int | None, output_format: str) -> None:
    """The fewest GPUs whose MIG layouts hold the demand (exact: bounds + integer program)."""
    if not demand:
        raise click.UsageError("give at least one PROFILE=N, e.g. 3g.40gb=2 1g.10gb=4")
    wanted = _parse_demand(demand)
    result = run_planner(model, wanted, gpus_available)
    catalogue = load_catalogue()
    gpu = catalogue.model(model)
    payload = result.to_dict()
    for layout, entry in zip(result.layouts, payload["layouts"]):
        entry["config"] = layout_config_name(layout.profiles, gpu)
    if gpus_per_node is not None and result.feasible:
        nodes = (gpus_available // gpus_per_node if gpus_available is not None
                 else math.ceil(result.gpus / gpus_per_node))
        assignment = assign_nodes([(l.count, l.profiles) for l in result.layouts], nodes,
                                  gpus_per_node, gpu)
        payload["nodes"] = [group.to_dict() for group in assignment.groups]
        payload["migManagerConfig"] = mig_manager_config(assignment.configs,
                                                         gpu.device_filter if gpu else ())
    if output_format == "json":
        emit_json(payload)
    else:
        status = "optimal" if result.feasible else "DOES NOT FIT"
        click.echo(f"{result.model}: {result.gpus} GPU(s), lower bound {result.lower_bound} ({status})")
        for layout, entry in zip(result.layouts, payload["layouts"]):
            click.echo(f"  {layout.count:>4} x {describe_layout(layout.profiles)}  [{entry['config']}]")
        if not result.secondary_proven:
            click.echo("  note: fewest distinct layouts not proven within the search limit; "
                       "the GPU count is optimal")
        for group in payload.get("nodes", []):
            click.echo(f"  nodes: {group['nodes']} x nvidia.com/mig.config={group['config']}")
    if not result.feasible:
        raise PolicyError([Diagnostic(codes.MIG_DEMAND_TOO_BIG, result.message)])
