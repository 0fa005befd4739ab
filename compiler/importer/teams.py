"""ClusterQueues and their LocalQueues -> Team documents (one per ClusterQueue).

The team is named after its ClusterQueue: the compiler names a team's ClusterQueue after the team,
so `team-a-cq` stays `team-a-cq` and the compile gives the same object name back. Namespaces come
from a selector of the compiler's own form (`kubernetes.io/metadata.name In [...]`); LocalQueues
named `default`, one per namespace, are what the language emits by itself; anything else is
carried in `kueue` as written.
"""

from __future__ import annotations

from typing import Any

from compiler.core import codes
from compiler.core.errors import Severity
from compiler.importer.export import ExportedObject
from compiler.importer.semantic import QUEUE_DEFAULTS
from compiler.importer.translate import (
    API_VERSION, CARRIED_QUEUE_FIELDS, DNS_LABEL, PRIORITY_ANNOTATION, TEAM_QUEUE_FIELDS, Translator, _preemption,
    _selected_namespaces, _weight,
)


def _local_queues_by_queue(translator: Translator) -> dict[str, list[ExportedObject]]:
    by_queue: dict[str, list[ExportedObject]] = {}
    for local in translator.export.of("LocalQueue"):
        by_queue.setdefault(str(local.spec.get("clusterQueue")), []).append(local)
    return by_queue


def _team_priority(locals_: list[ExportedObject], priorities: set[str]) -> str | None:
    """The priority kueue-policy recorded on the team's LocalQueues (one value on all of them)."""
    found = {(local.doc["metadata"].get("annotations") or {}).get(PRIORITY_ANNOTATION) for local in locals_}
    if len(found) == 1:
        only = next(iter(found))
        if only in priorities:
            return only
    return None


def team_documents(translator: Translator) -> dict[str, dict[str, Any]]:
    by_queue = _local_queues_by_queue(translator)
    known = {q.name for q in translator.queues}
    for name, locals_ in sorted(by_queue.items()):
        if name not in known:
            for local in locals_:
                translator.note(codes.IMPORT_NOT_CARRIED,
                                f"LocalQueue {local.namespace}/{local.name} points to ClusterQueue {name}, which the "
                                "export does not hold; no team owns it, so the policy does not emit it", local,
                                Severity.WARNING)
    priorities = {obj.name for obj in translator.export.of("WorkloadPriorityClass")}
    claimed: set[str] = set()
    teams: dict[str, dict[str, Any]] = {}
    for queue in translator.queues:
        if not DNS_LABEL.match(queue.name) or len(queue.name) > 63:
            translator.error(f"ClusterQueue {queue.name}: a team name is a DNS label (lower-case letters, digits and "
                             "'-', at most 63)", queue)
            continue
        teams[queue.name] = _team(translator, queue, sorted(by_queue.get(queue.name, []),
                                                            key=lambda o: (o.namespace or "", o.name)),
                                  claimed, priorities)
    return teams


def _team(translator: Translator, queue: ExportedObject, locals_: list[ExportedObject], claimed: set[str],
          priorities: set[str]) -> dict[str, Any]:
    spec = queue.spec
    team: dict[str, Any] = {}
    kueue: dict[str, Any] = {}
    cohort = spec.get("cohortName") or spec.get("cohort")
    if cohort:
        team["cohort"] = cohort
    namespaces = _selected_namespaces(spec.get("namespaceSelector"))
    if namespaces is not None and not claimed & set(namespaces):
        team["namespaces"] = namespaces
        claimed.update(namespaces)
    else:
        # Another form of selector ({} = every namespace, labels), none at all, or namespaces a team
        # before this one already selects (the policy gives each namespace to one team).
        kueue["namespaceSelector"] = spec.get("namespaceSelector") if "namespaceSelector" in spec else None
        translator.note(codes.IMPORT_CARRIED, f"ClusterQueue {queue.name}: namespaceSelector carried as written", queue)
    defaults = {(ns, "default") for ns in team.get("namespaces", [])}
    written = [(local.namespace or "", local.name) for local in locals_]
    if set(written) != defaults or len(written) != len(defaults) or any(
            local.spec.get("stopPolicy") not in (None, "None") for local in locals_):
        kueue["localQueues"] = [_local_queue(local) for local in locals_]
        if locals_:
            translator.note(codes.IMPORT_CARRIED, f"ClusterQueue {queue.name}: LocalQueues "
                            f"{', '.join(f'{ns}/{name}' for ns, name in written)} carried by name", queue)
    priority = _team_priority(locals_, priorities)
    if priority:
        team["priority"] = priority
    weight = _weight(spec)
    if weight is not None and weight != 1.0:
        team["weight"] = weight
    team["queueing"] = spec.get("queueingStrategy") or "BestEffortFIFO"
    team["preemption"] = _preemption(spec)
    kueue["resourceGroups"] = spec.get("resourceGroups") or []
    translator.note(codes.IMPORT_CARRIED, f"ClusterQueue {queue.name}: quota (spec.resourceGroups) carried as "
                    "written in kueue.resourceGroups", queue)
    translator._check_flavors(queue)
    defaults = QUEUE_DEFAULTS.get(queue.api_version.rsplit("/", 1)[-1], QUEUE_DEFAULTS["v1beta2"])
    for name in CARRIED_QUEUE_FIELDS:
        if spec.get(name) is not None and spec[name] != defaults.get(name):  # the API server's defaults: implied
            kueue[name] = spec[name]
            translator.note(codes.IMPORT_CARRIED, f"ClusterQueue {queue.name}: spec.{name} carried as written", queue)
    for name in sorted(set(spec) - set(CARRIED_QUEUE_FIELDS) - set(TEAM_QUEUE_FIELDS)):
        translator.note(codes.IMPORT_NOT_CARRIED, f"ClusterQueue {queue.name}: spec.{name} has no place in the "
                        "policy and is not emitted", queue, Severity.WARNING)
    if kueue.get("namespaceSelector") is None:
        kueue.pop("namespaceSelector", None)
        if "namespaces" not in team:
            # Kueue's nil selector admits no namespace: a selector nothing matches says the same.
            kueue["namespaceSelector"] = {"matchLabels": {"kueue-policy.io/no-namespace": "none"}}
            translator.note(codes.IMPORT_NOT_CARRIED, f"ClusterQueue {queue.name}: no namespaceSelector (no "
                            "namespace may submit); written as a selector no namespace matches", queue,
                            Severity.WARNING)
    team["kueue"] = kueue
    return {"apiVersion": API_VERSION, "kind": "Team", "metadata": {"name": queue.name}, "spec": team}


def _local_queue(local: ExportedObject) -> dict[str, Any]:
    entry: dict[str, Any] = {"namespace": local.namespace or "", "name": local.name}
    if local.spec.get("stopPolicy") not in (None, "None"):
        entry["stopPolicy"] = local.spec["stopPolicy"]
    return entry
