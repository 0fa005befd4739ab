"""Why a pod set cannot be placed, in a user's words: what it needs, what the roomiest domain
holds, and which nodes were left out and why (Kueue's notFitMessage says the same in counts)."""

from __future__ import annotations

from collections import Counter

from compiler.evaluator.topology.records import TopologyRequest
from compiler.evaluator.topology.tree import DomainTree
from compiler.core.quantity import format_units


def _level_name(level: str) -> str:
    """`example.com/rack` -> `rack`, `kubernetes.io/hostname` -> `host`."""
    short = level.rsplit("/", 1)[-1]
    return "host" if short == "hostname" else short


def _per_pod(request: TopologyRequest) -> str:
    parts = [f"{format_units(r, a)} {r}" for r, a in sorted(request.per_pod.items()) if a]
    return f" x {', '.join(parts)}" if parts else ""


def not_fit_message(tree: DomainTree, request: TopologyRequest, requested_level: int, slice_level: int,
                    excluded_for_pod_set: dict[str, str]) -> str:
    """After fillInCounts: the counts of the requested level's domains are what fits there."""
    if not tree.leaves:
        return f'topology "{tree.flavor.topology_name}" has no usable node{_exclusions(tree, excluded_for_pod_set)}'
    level = tree.levels[requested_level]
    domains = tree.domains_per_level[requested_level].values()
    if request.slices:
        size = request.slices[0].size
        unit = f"slices of {size} pods{_per_pod(request)} per {_level_name(tree.levels[slice_level])}"
        wanted, best = request.count // size, max(d.slice_count for d in domains)
    else:
        unit = f"pods{_per_pod(request)}"
        wanted, best = request.count, max(d.pod_count for d in domains)
    if request.required is not None:
        where = f"in one {_level_name(level)}; the roomiest {_level_name(level)} has room for {best}"
    else:
        total = sum(d.slice_count if request.slices else d.pod_count for d in domains)
        where = f"on topology \"{tree.flavor.topology_name}\"; it has room for {total}"
    return f"needs {wanted} {unit} {where}{_exclusions(tree, excluded_for_pod_set)}"


def _exclusions(tree: DomainTree, excluded_for_pod_set: dict[str, str]) -> str:
    reasons = Counter(tree.excluded.values()) + Counter(excluded_for_pod_set.values())
    if not reasons:
        return ""
    listed = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
    return f" (nodes left out: {listed})"
