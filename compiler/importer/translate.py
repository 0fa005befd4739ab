"""The Kueue objects of an export -> a Cluster document and one Team document per ClusterQueue.

Each object becomes the policy's own fields where they compile back to the same Kueue field, and
the escape hatch (Team `kueue`, Pool `flavorSpec`, Cohort `resourceGroups`) where they do not:
a team's quota is always carried as written, because the budget fields (`gpus`, `mig`) compute
quotas from pool sizes and a ratio a hand-written setup never followed. Every field carried that
way is listed (KP941) with the object's file and line; `roundtrip.py` then proves the whole.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from compiler.core import codes
from compiler.core.errors import Diagnostic, Severity
from compiler.core.quantity import QuantityError, parse_quantity
from compiler.importer.export import ClusterExport, ExportedObject
from compiler.importer.semantic import object_key
from compiler.importer.pools import GPU_RESOURCE, capacity_of, guess_pool, natural_fields

API_VERSION = "kueue-policy/v1alpha1"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
NAME_LABEL = "kubernetes.io/metadata.name"
PRIORITY_ANNOTATION = "kueue-policy.io/default-priority-class"
CLUSTER_LABEL = "kueue-policy.io/cluster"
CONFIG_FILE = "kueue-config/controller_manager_config.yaml"
PREEMPTION_DEFAULT = {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never",
                      "borrowWithinCohort": {"policy": "Never"}}
# ClusterQueue spec fields the team carries in `kueue` as written.
CARRIED_QUEUE_FIELDS = ("flavorFungibility", "admissionChecks", "admissionChecksStrategy", "stopPolicy")
# ClusterQueue spec fields the team fields state.
TEAM_QUEUE_FIELDS = ("cohort", "cohortName", "namespaceSelector", "queueingStrategy", "preemption", "fairSharing",
                     "resourceGroups")


@dataclass
class ImportedPolicy:
    """The policy documents (plain data, in file order) and what import has to say about them."""

    cluster_name: str
    cluster: dict[str, Any]
    teams: dict[str, dict[str, Any]]
    configuration: dict[str, Any] | None
    notes: list[Diagnostic] = field(default_factory=list)


def _quantity(value: object) -> Fraction | None:
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def _weight(spec: dict[str, Any]) -> float | None:
    weight = (spec.get("fairSharing") or {}).get("weight") if isinstance(spec.get("fairSharing"), dict) else None
    amount = _quantity(weight) if weight is not None else None
    return None if amount is None else float(amount)


def _preemption(spec: dict[str, Any]) -> dict[str, Any]:
    """The ClusterQueue's preemption with Kueue's defaults filled in, in the policy's form."""
    written = spec.get("preemption") if isinstance(spec.get("preemption"), dict) else {}
    borrow = written.get("borrowWithinCohort") if isinstance(written.get("borrowWithinCohort"), dict) else {}
    result: dict[str, Any] = {"withinClusterQueue": written.get("withinClusterQueue") or "Never",
                              "reclaimWithinCohort": written.get("reclaimWithinCohort") or "Never",
                              "borrowWithinCohort": {"policy": borrow.get("policy") or "Never"}}
    if borrow.get("maxPriorityThreshold") is not None:
        result["borrowWithinCohort"]["maxPriorityThreshold"] = borrow["maxPriorityThreshold"]
    return result


def _selected_namespaces(selector: object) -> list[str] | None:
    """The namespaces of a selector the compiler writes itself (`metadata.name In [...]`), else None."""
    if not isinstance(selector, dict) or set(selector) != {"matchExpressions"}:
        return None
    expressions = selector["matchExpressions"]
    if not isinstance(expressions, list) or len(expressions) != 1 or not isinstance(expressions[0], dict):
        return None
    only = expressions[0]
    values = only.get("values")
    if only.get("key") != NAME_LABEL or only.get("operator") != "In" or not isinstance(values, list) or not values:
        return None
    if not all(isinstance(v, str) and DNS_LABEL.match(v) for v in values):
        return None
    return sorted(set(values))


class Translator:
    """Builds the policy documents from one export; collects notes and errors on the way."""

    def __init__(self, export: ClusterExport, cluster_name: str | None, kueue_version: str | None):
        self.export = export
        self.notes: list[Diagnostic] = []
        # (kind, name) of objects already reported as not emitted: the round trip need not say it again.
        self.reported: set[tuple[str, str]] = set()
        self.errors: list[Diagnostic] = []
        self.flavors = {obj.name: obj for obj in export.of("ResourceFlavor")}
        self.queues = sorted(export.of("ClusterQueue"), key=lambda o: o.name)
        self.cluster_name = cluster_name or self._cluster_name()
        self.kueue_version = kueue_version or self._kueue_version()

    def note(self, code: str, message: str, obj: ExportedObject | None, severity: Severity = Severity.NOTE) -> None:
        self.notes.append(Diagnostic(code, message, obj.where if obj else None, severity))
        if code == codes.IMPORT_NOT_CARRIED and obj is not None:
            self.reported.add(object_key(obj.doc))

    def error(self, message: str, obj: ExportedObject) -> None:
        self.errors.append(Diagnostic(codes.IMPORT_BAD_INPUT, message, obj.where))

    # --- the cluster --------------------------------------------------------------------------
    def _cluster_name(self) -> str:
        named = Counter(obj.doc["metadata"].get("labels", {}).get(CLUSTER_LABEL)
                        for objs in self.export.kueue.values() for obj in objs)
        named.pop(None, None)
        best = sorted(named.items(), key=lambda item: (-item[1], item[0]))
        return best[0][0] if best and DNS_LABEL.match(str(best[0][0])) else "imported"

    def _kueue_version(self) -> str:
        versions = {obj.api_version.rsplit("/", 1)[-1] for objs in self.export.kueue.values() for obj in objs}
        # Kueue serves v1beta2 from 0.15 and kubectl prints the preferred version: a v1beta1 export
        # comes from an older Kueue, whose objects must be written back as v1beta1.
        return "0.14" if versions == {"v1beta1"} else "0.19"

    def _fair_sharing(self) -> dict[str, Any]:
        config = self.export.configuration
        section = config.get("fairSharing") if isinstance(config, dict) else None
        if config is not None:
            enabled = isinstance(section, dict) and section.get("enable", True) is not False
        else:
            enabled = any(_weight(obj.spec) is not None for kind in ("Cohort", "ClusterQueue")
                          for obj in self.export.of(kind))
        result: dict[str, Any] = {"enabled": enabled}
        strategies = section.get("preemptionStrategies") if isinstance(section, dict) else None
        if enabled and isinstance(strategies, list) and strategies:
            result["preemptionStrategies"] = list(strategies)
        return result

    def _nominal_gpus(self, flavor: str) -> Fraction:
        total = Fraction(0)
        for kind in ("Cohort", "ClusterQueue"):
            for obj in self.export.of(kind):
                for group in obj.spec.get("resourceGroups") or []:
                    for entry in group.get("flavors") or []:
                        if entry.get("name") != flavor:
                            continue
                        for resource in entry.get("resources") or []:
                            if resource.get("name") == GPU_RESOURCE:
                                total += _quantity(resource.get("nominalQuota")) or 0
        return total

    def pools(self) -> list[dict[str, Any]]:
        pools = []
        for flavor in sorted(self.flavors.values(), key=lambda o: o.name):
            if not DNS_LABEL.match(flavor.name) or len(flavor.name) > 63:
                self.error(f"ResourceFlavor {flavor.name}: a pool name is a DNS label (lower-case letters, digits "
                           "and '-', at most 63)", flavor)
                continue
            guess = guess_pool(flavor, self.export.nodes, self._nominal_gpus(flavor.name))
            pool: dict[str, Any] = {"name": flavor.name, "gpu": guess.gpu, "nodes": guess.nodes,
                                    "gpusPerNode": guess.gpus_per_node}
            labels = flavor.spec.get("nodeLabels") if isinstance(flavor.spec.get("nodeLabels"), dict) else {}
            if capacity_of(labels) == "spot":
                pool["capacity"] = "spot"
            natural = natural_fields(flavor.spec)
            if natural is not None:
                pool.update(natural)
            else:
                pool["flavorSpec"] = flavor.spec
                self.note(codes.IMPORT_CARRIED, f"ResourceFlavor {flavor.name}: spec carried as written in pool "
                          f"'{flavor.name}' flavorSpec (fields: {', '.join(sorted(flavor.spec)) or 'none'})", flavor)
            if not guess.from_nodes:
                self.note(codes.IMPORT_GUESSED, f"ResourceFlavor {flavor.name}: no Nodes in the export match its "
                          f"nodeLabels; pool '{flavor.name}' guessed as {guess.nodes} node(s) x "
                          f"{guess.gpus_per_node} GPU(s) of model {guess.gpu}", flavor)
            pools.append(pool)
        return pools

    def cohorts(self) -> list[dict[str, Any]]:
        written = {obj.name: obj for obj in self.export.of("Cohort")}
        named = set(written)
        for queue in self.queues:
            cohort = queue.spec.get("cohortName") or queue.spec.get("cohort")
            if isinstance(cohort, str) and cohort:
                named.add(cohort)
        for obj in written.values():
            if isinstance(obj.spec.get("parentName"), str):
                named.add(obj.spec["parentName"])
        cohorts = []
        for name in sorted(named):
            obj = written.get(name)
            cohort: dict[str, Any] = {"name": name}
            if obj is not None:
                if obj.spec.get("parentName"):
                    cohort["parent"] = obj.spec["parentName"]
                weight = _weight(obj.spec)
                if weight is not None and weight != 1.0:
                    cohort["weight"] = weight
                if obj.spec.get("resourceGroups"):
                    cohort["resourceGroups"] = obj.spec["resourceGroups"]
                    self.note(codes.IMPORT_CARRIED, f"Cohort {name}: resourceGroups carried as written", obj)
                self._check_flavors(obj)
            cohorts.append(cohort)
        return cohorts

    def priorities(self) -> list[dict[str, Any]]:
        priorities = []
        for obj in sorted(self.export.of("WorkloadPriorityClass"), key=lambda o: o.name):
            value = obj.doc.get("value")
            if not isinstance(value, int) or isinstance(value, bool):
                self.error(f"WorkloadPriorityClass {obj.name}: value must be an integer", obj)
                continue
            priority: dict[str, Any] = {"name": obj.name, "value": value}
            if obj.doc.get("description"):
                priority["description"] = str(obj.doc["description"])
            priorities.append(priority)
        return priorities

    def topologies(self) -> list[dict[str, Any]]:
        """Topologies as Kueue states them: a pool's `topology` needs the shape of its levels, which
        only the nodes know; the names and levels are what Kueue's objects hold."""
        found = []
        for obj in sorted(self.export.of("Topology"), key=lambda o: o.name):
            levels = obj.spec.get("levels")
            labels = [level.get("nodeLabel") for level in levels or [] if isinstance(level, dict)]
            if not isinstance(levels, list) or not labels or len(labels) != len(levels) or \
                    not all(isinstance(label, str) and set(level) == {"nodeLabel"}
                            for label, level in zip(labels, levels)):
                self.error(f"Topology {obj.name}: spec.levels must be a list of {{nodeLabel: ...}}", obj)
                continue
            found.append({"name": obj.name, "levels": labels})
            self.note(codes.IMPORT_CARRIED, f"Topology {obj.name}: carried as written in kueueTopologies", obj)
        return found

    def _check_flavors(self, obj: ExportedObject) -> None:
        for group in obj.spec.get("resourceGroups") or []:
            for entry in (group.get("flavors") or []) if isinstance(group, dict) else []:
                name = entry.get("name") if isinstance(entry, dict) else None
                if name not in self.flavors:
                    self.error(f"{obj.kind} {obj.name} names ResourceFlavor {name}, which the export does not "
                               f"hold (ResourceFlavors: {', '.join(sorted(self.flavors)) or 'none'})", obj)

    def cluster(self, teams: dict[str, dict[str, Any]]) -> dict[str, Any]:
        pools, cohorts = self.pools(), self.cohorts()
        preemptions = Counter(repr(_preemption(q.spec)) for q in self.queues)
        strategies = Counter(q.spec.get("queueingStrategy") or "BestEffortFIFO" for q in self.queues)
        spec: dict[str, Any] = {"kueueVersion": self.kueue_version, "namespaces": "external",
                                "rootCohort": False}
        if strategies:
            spec["queueing"] = sorted(strategies.items(), key=lambda item: (-item[1], item[0]))[0][0]
        spec["pools"] = pools
        if cohorts:
            spec["cohorts"] = cohorts
        priorities = self.priorities()
        if priorities:
            spec["priorities"] = priorities
        if preemptions:
            common = sorted(preemptions.items(), key=lambda item: (-item[1], item[0]))[0][0]
            spec["preemption"] = next(_preemption(q.spec) for q in self.queues if repr(_preemption(q.spec)) == common)
        topologies = self.topologies()
        if topologies:
            spec["kueueTopologies"] = topologies
        spec["fairSharing"] = self._fair_sharing()
        if self.export.configuration is not None:
            spec["kueueConfig"] = {"base": CONFIG_FILE}
        for team in teams.values():
            if team["spec"].get("queueing") == spec.get("queueing"):
                del team["spec"]["queueing"]
            if team["spec"].get("preemption") == spec.get("preemption"):
                del team["spec"]["preemption"]
        return {"apiVersion": API_VERSION, "kind": "Cluster", "metadata": {"name": self.cluster_name}, "spec": spec}
