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


def verbatim_groups(team: Any) -> list[dict[str, Any]] | None:
    """The team's resource groups as written, or None when the compiler derives them."""
    fields = team.spec.kueue
    return None if fields is None else fields.resourceGroups


def _amount(value: object) -> Fraction | None:
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None  # verify refuses the object with Kueue's schema; reports then show no amount


def verbatim_quotas(groups: list[dict[str, Any]]) -> dict:
    """flavor -> resource -> FlavorQuota of resource groups written in Kueue's form."""
    from compiler.stages.build import FlavorQuota  # the typed quota build and reports share

    result: dict = {}
    for group in groups:
        for flavor in group.get("flavors") or []:
            per = result.setdefault(str(flavor.get("name")), {})
            for entry in flavor.get("resources") or []:
                nominal = _amount(entry.get("nominalQuota"))
                per[str(entry.get("name"))] = FlavorQuota(nominal if nominal is not None else Fraction(0),
                                                          _amount(entry.get("borrowingLimit")),
                                                          _amount(entry.get("lendingLimit")))
    return result


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


def declared_topologies(builder: Any, built: dict[str, Any]) -> None:
    """Add the cluster's `kueueTopologies` to `built` (name -> BuiltObject), pools' own first."""
    from compiler.stages.build import WAVE_FOUNDATION, BuiltObject, Origin

    cluster = builder.cluster
    for index, declared in enumerate(cluster.spec.kueueTopologies):
        if declared.name in built:
            continue
        obj = render_object("kueue/topology.yaml.j2", api_version=builder.api_version, name=declared.name,
                            labels=builder.labels, annotations=builder._annotations(WAVE_FOUNDATION),
                            levels=list(declared.levels))
        built[declared.name] = BuiltObject(obj, Origin(cluster.located, ("spec", "kueueTopologies", index)),
                                           WAVE_FOUNDATION, f"kueue/topologies/{declared.name}.yaml")
