"""The escape hatch in build: a team's `kueue` fields copied into its ClusterQueue as written.

`kueue-policy import` writes them for what the team fields cannot state (exact quotas, several
resource groups, admission checks, ...); the compiler copies them unchanged, and reads the quota
back as typed amounts so reports and verdicts see the same numbers Kueue will.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any, Callable

from compiler.core.quantity import QuantityError, parse_quantity
from compiler.core.templating import render_object
from compiler.language.kueue_fields import ClusterQueueFields


def copied(value: Any) -> Any:
    """A deep copy: the policy model is frozen and shared, the built object is edited later."""
    return copy.deepcopy(value)


def _amount(value: object) -> Fraction | None:
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None  # verify refuses the object with Kueue's schema; reports then show no amount


def verbatim_quotas(groups: list[dict[str, Any]], quota: Callable[..., Any]) -> dict:
    """flavor -> resource -> quota (build's FlavorQuota, made by `quota`) of resource groups
    written in Kueue's form."""
    result: dict = {}
    # Written by hand, the groups may be malformed: verify then refuses the object with Kueue's
    # schema at the team's line; here what is not a mapping or a list is passed over.
    for group in _mappings(groups):
        for flavor in _mappings(group.get("flavors")):
            per = result.setdefault(str(flavor.get("name")), {})
            for entry in _mappings(flavor.get("resources")):
                nominal = _amount(entry.get("nominalQuota"))
                per[str(entry.get("name"))] = quota(nominal if nominal is not None else Fraction(0),
                                                    _amount(entry.get("borrowingLimit")),
                                                    _amount(entry.get("lendingLimit")))
    return result


def _mappings(items: object) -> list[dict[str, Any]]:
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def apply_cluster_queue_fields(obj: dict[str, Any], fields: ClusterQueueFields | None) -> None:
    """Copy the team's `kueue` fields into its ClusterQueue object, replacing what was derived."""
    if fields is None:
        return
    spec = obj["spec"]
    if fields.resourceGroups is not None:
        spec["resourceGroups"] = copy.deepcopy(fields.resourceGroups)
    for name, value in fields.spec_fields().items():
        spec[name] = copy.deepcopy(value)


def local_queues(team: Any, make: Callable[..., Any]) -> list[Any]:
    """The team's LocalQueues: `default` in each namespace, or those it names (`kueue.localQueues`).
    `make(team, namespace, name, node_path)` builds one (ClusterBuilder.local_queue_object)."""
    named = team.spec.kueue.localQueues if team.spec.kueue is not None else None
    if named is None:
        return [make(team, namespace, "default", ("spec", "namespaces", index))
                for index, namespace in enumerate(team.namespaces)]
    built = [make(team, queue.namespace, queue.name, ("spec", "kueue", "localQueues", index))
             for index, queue in enumerate(named)]
    for queue, one in zip(named, built):
        if queue.stopPolicy is not None:
            one.obj["spec"]["stopPolicy"] = queue.stopPolicy
    return built


def declared_topologies(builder: Any, built: dict[str, Any],
                        annotations: dict[str, str]) -> list[tuple[int, str, dict[str, Any]]]:
    """(index, name, object) of the cluster's `kueueTopologies` not already in `built` (pools' own)."""
    found = []
    for index, declared in enumerate(builder.cluster.spec.kueueTopologies):
        if declared.name in built or any(name == declared.name for _, name, _ in found):
            continue
        obj = render_object("kueue/topology.yaml.j2", api_version=builder.api_version, name=declared.name,
                            labels=builder.labels, annotations=annotations, levels=list(declared.levels))
        found.append((index, declared.name, obj))
    return found
