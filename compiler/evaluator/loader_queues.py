"""The loader's readers of the objects that make the quota tree and its queues: ResourceFlavors,
Cohorts, ClusterQueues, LocalQueues, priority classes, Namespaces, Kueue's Configuration, and
the objects jobs refer to (DRA templates and classes, training runtimes, admission policies)."""

from __future__ import annotations

from fractions import Fraction

from compiler.core import codes
from compiler.core.errors import SourcePosition
from compiler.evaluator import configuration_forms
from compiler.evaluator.loader_fields import _Skip, _choice, _describe, _mapping, _text
from compiler.evaluator.models import (
    ClusterQueue, Cohort, Configuration, FlavorFungibility, LocalQueue, PreemptionPolicy, ResourceFlavor, ResourceGroup,
    ResourceQuota, flavor_resource,
)
from compiler.core.quantity import QuantityError, parse_quantity, to_units

class QueueObjectReaders:
    """Readers of the kinds that make the quota tree and its queues (a part of `_Loader`)."""

    @staticmethod
    def _units(resource: str, value: object, what: str) -> int:
        try:
            amount = to_units(resource, value)
        except QuantityError as error:
            raise _Skip(f"{what}: {error}") from None
        if amount < 0:
            raise _Skip(f"{what}: must be greater than or equal to 0 (got {value})")
        return amount

    def resource_groups(self, spec: dict) -> list[ResourceGroup]:
        groups_value = spec.get("resourceGroups") or []
        # Callers that build many queues from one template (the compiler's admissibility check)
        # share one resourceGroups list between them: parse it once. The parsed groups are never
        # mutated after loading; the cache keeps the list alive so its id cannot be reused.
        cached = self._group_cache.get(id(groups_value))
        if cached is not None and cached[0] is groups_value:
            return cached[1]
        groups = self._parse_resource_groups(groups_value)
        if isinstance(groups_value, list) and groups_value:
            self._group_cache[id(groups_value)] = (groups_value, groups)
        return groups

    def _parse_resource_groups(self, groups_value: object) -> list[ResourceGroup]:
        groups = []
        if not isinstance(groups_value, list):
            raise _Skip("resourceGroups must be a list")
        for gi, group in enumerate(groups_value):
            if not isinstance(group, dict):
                raise _Skip(f"resourceGroups[{gi}] is not a mapping")
            covered_value = group.get("coveredResources") or []
            if not isinstance(covered_value, list):
                raise _Skip(f"resourceGroups[{gi}].coveredResources must be a list")
            covered = [_text(r, f"resourceGroups[{gi}].coveredResources[]") for r in covered_value]
            rg = ResourceGroup(covered_resources=covered, flavors=[])
            flavors_value = group.get("flavors") or []
            if not isinstance(flavors_value, list):
                raise _Skip(f"resourceGroups[{gi}].flavors must be a list")
            for fi, flavor in enumerate(flavors_value):
                if not isinstance(flavor, dict):
                    raise _Skip(f"resourceGroups[{gi}].flavors[{fi}] is not a mapping")
                fname = _text(flavor.get("name"), f"resourceGroups[{gi}].flavors[{fi}].name")
                rg.flavors.append(fname)
                resources_value = flavor.get("resources") or []
                if not isinstance(resources_value, list):
                    raise _Skip(f"flavor {fname}: resources must be a list")
                for ri, res in enumerate(resources_value):
                    if not isinstance(res, dict):
                        raise _Skip(f"resourceGroups[{gi}].flavors[{fi}].resources[{ri}] is not a mapping")
                    rname = _text(res.get("name"), f"resourceGroups[{gi}].flavors[{fi}].resources[{ri}].name")
                    path = f"flavor {fname} resource {rname}"
                    nominal = self._units(rname, res.get("nominalQuota", 0), f"{path} nominalQuota")
                    borrow = res.get("borrowingLimit")
                    lend = res.get("lendingLimit")
                    rg.quotas[flavor_resource(fname, rname)] = ResourceQuota(
                        nominal,
                        None if borrow is None else self._units(rname, borrow, f"{path} borrowingLimit"),
                        None if lend is None else self._units(rname, lend, f"{path} lendingLimit"),
                    )
                for rname in covered:
                    rg.quotas.setdefault(flavor_resource(fname, rname), ResourceQuota(0))
            groups.append(rg)
        return groups

    @staticmethod
    def _weight(spec: dict) -> Fraction:
        weight = _mapping(spec.get("fairSharing"), "fairSharing").get("weight")
        if weight is None:
            return Fraction(1)
        try:
            return parse_quantity(weight)
        except QuantityError as error:
            raise _Skip(f"fairSharing.weight: {error}") from None

    def resource_flavor(self, doc: dict, where: SourcePosition | None) -> None:
        spec = _mapping(doc.get("spec"), "spec")
        for field in ("nodeLabels",):
            _mapping(spec.get(field), f"spec.{field}")
        for field in ("nodeTaints", "tolerations"):
            if spec.get(field) is not None and not isinstance(spec.get(field), list):
                raise _Skip(f"spec.{field} must be a list")
        name = doc["metadata"]["name"]
        self.state.flavors[name] = ResourceFlavor(
            name=name,
            node_labels={str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()},
            node_taints=[t for t in spec.get("nodeTaints") or [] if isinstance(t, dict)],
            tolerations=[t for t in spec.get("tolerations") or [] if isinstance(t, dict)],
            topology_name=_text(spec.get("topologyName"), "spec.topologyName", optional=True) or None,
            source=where)

    def cohort(self, doc: dict, where: SourcePosition | None) -> None:
        spec = _mapping(doc.get("spec"), "spec")
        name = doc["metadata"]["name"]
        parent = _text(spec.get("parentName") or spec.get("parent"), "spec.parentName", optional=True)
        self.state.cohorts[name] = Cohort(name=name, parent=parent or None,
                                          resource_groups=self.resource_groups(spec),
                                          fair_weight=self._weight(spec), source=where)

    def cluster_queue(self, doc: dict, where: SourcePosition | None) -> None:
        spec = _mapping(doc.get("spec"), "spec")
        name = doc["metadata"]["name"]
        fung = _mapping(spec.get("flavorFungibility"), "spec.flavorFungibility")
        # v1beta1 spelled MayStopSearch as Borrow / Preempt
        when_borrow = _choice(fung.get("whenCanBorrow"), ("MayStopSearch", "TryNextFlavor", "Borrow"),
                              "MayStopSearch", "whenCanBorrow").replace("Borrow", "MayStopSearch")
        when_preempt = _choice(fung.get("whenCanPreempt"), ("MayStopSearch", "TryNextFlavor", "Preempt"),
                               "TryNextFlavor", "whenCanPreempt").replace("Preempt", "MayStopSearch")
        preference = fung.get("preference")
        if preference is not None:
            preference = _choice(preference, ("BorrowingOverPreemption", "PreemptionOverBorrowing"),
                                 "BorrowingOverPreemption", "flavorFungibility.preference")
        pre = _mapping(spec.get("preemption"), "spec.preemption")
        bwc = _mapping(pre.get("borrowWithinCohort"), "spec.preemption.borrowWithinCohort")
        threshold = bwc.get("maxPriorityThreshold")
        if threshold is not None and (not isinstance(threshold, int) or isinstance(threshold, bool)):
            raise _Skip("borrowWithinCohort.maxPriorityThreshold must be an integer")
        selector = spec.get("namespaceSelector")
        if selector is not None and not isinstance(selector, dict):
            raise _Skip("spec.namespaceSelector must be a mapping")
        if selector is not None:
            # (the API server refuses these shapes: such a ClusterQueue never exists)
            if not isinstance(selector.get("matchLabels") or {}, dict):
                raise _Skip("spec.namespaceSelector.matchLabels must be a mapping")
            expressions = selector.get("matchExpressions") or []
            if not isinstance(expressions, list) or not all(isinstance(e, dict) for e in expressions):
                raise _Skip("spec.namespaceSelector.matchExpressions must be a list of mappings")
        checks = [str(c) for c in spec.get("admissionChecks") or [] if isinstance(c, str)]
        for check in _mapping(spec.get("admissionChecksStrategy"), "admissionChecksStrategy").get("admissionChecks") or []:
            if isinstance(check, dict) and isinstance(check.get("name"), str):
                checks.append(check["name"])
        self.state.cluster_queues[name] = ClusterQueue(
            name=name,
            cohort=_text(spec.get("cohortName") or spec.get("cohort"), "spec.cohortName", optional=True),
            resource_groups=self.resource_groups(spec),
            namespace_selector=selector,
            queueing_strategy=_choice(spec.get("queueingStrategy"), ("StrictFIFO", "BestEffortFIFO"),
                                      "BestEffortFIFO", "queueingStrategy"),
            fungibility=FlavorFungibility(when_borrow, when_preempt, preference),
            preemption=PreemptionPolicy(
                _choice(pre.get("withinClusterQueue"), ("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
                        "Never", "withinClusterQueue"),
                _choice(pre.get("reclaimWithinCohort"), ("Never", "LowerPriority", "Any"), "Never",
                        "reclaimWithinCohort"),
                _choice(bwc.get("policy"), ("Never", "LowerPriority"), "Never", "borrowWithinCohort.policy"),
                threshold),
            stop_policy=_choice(spec.get("stopPolicy"), ("None", "Hold", "HoldAndDrain"), "None", "stopPolicy"),
            fair_weight=self._weight(spec), admission_checks=checks, source=where)

    def local_queue(self, doc: dict, where: SourcePosition | None) -> None:
        spec = _mapping(doc.get("spec"), "spec")
        meta = doc["metadata"]
        ns = meta.get("namespace") or "default"
        cq = _text(spec.get("clusterQueue"), "spec.clusterQueue")
        self.state.local_queues[(ns, meta["name"])] = LocalQueue(
            ns, meta["name"], cq, _choice(spec.get("stopPolicy"), ("None", "Hold", "HoldAndDrain"), "None",
                                          "stopPolicy"), where)

    def priority_class(self, doc: dict, where: SourcePosition | None) -> None:
        value = doc.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            raise _Skip("value must be an integer")
        self.state.priority_classes[doc["metadata"]["name"]] = value

    def pod_priority_class(self, doc: dict, where: SourcePosition | None) -> None:
        value = doc.get("value")
        if isinstance(value, int) and not isinstance(value, bool):
            self.pod_priority_classes[doc["metadata"]["name"]] = value
            if doc.get("globalDefault") is True:
                self.default_pod_priority = value

    def training_runtime(self, doc: dict, where: SourcePosition | None) -> None:
        """Kubeflow Trainer runtimes: TrainJobs are built from them."""
        meta = doc["metadata"]
        if doc["kind"] == "ClusterTrainingRuntime":
            self.job_context.cluster_training_runtimes[meta["name"]] = doc
        else:
            self.job_context.training_runtimes[(meta.get("namespace") or "default", meta["name"])] = doc

    def namespace(self, doc: dict, where: SourcePosition | None) -> None:
        labels = doc["metadata"].get("labels") or {}
        self.state.namespaces[doc["metadata"]["name"]] = {str(k): str(v) for k, v in labels.items()}

    def claim_template(self, doc: dict, where: SourcePosition | None) -> None:
        meta = doc["metadata"]
        self.claim_templates[(meta.get("namespace") or "default", meta["name"])] = doc.get("spec") or {}

    def device_class(self, doc: dict, where: SourcePosition | None) -> None:
        self.device_classes[doc["metadata"]["name"]] = doc.get("spec") or {}

    def admission_policy(self, doc: dict, where: SourcePosition | None) -> None:
        reason = self.priority_defaults.add_policy(doc)
        if reason is not None:
            self.warn(codes.EVAL_UNKNOWN_KIND, f"{_describe(doc)}: {reason}; skipped", where)

    def admission_binding(self, doc: dict, where: SourcePosition | None) -> None:
        self.priority_defaults.add_binding(doc)

    def configuration(self, doc: dict, where: SourcePosition | None) -> None:
        configuration_forms.check_shape(doc, where, "Configuration")
        config = Configuration()
        fair = doc.get("fairSharing")
        if isinstance(fair, dict):
            # v1beta1 needs `enable: true`; in v1beta2 the presence of the block enables it.
            config.fair_sharing = bool(fair.get("enable", True)) if "enable" in fair or \
                doc.get("apiVersion", "").endswith("v1beta2") else bool(fair.get("enable", False))
            strategies = fair.get("preemptionStrategies")
            if isinstance(strategies, list) and strategies:
                config.preemption_strategies = [str(s) for s in strategies]
        res = doc.get("resources") or {}
        config.quota_check_strategy = res.get("quotaCheckStrategy", "BlockUndeclared") or "BlockUndeclared"
        config.exclude_resource_prefixes = [str(p) for p in res.get("excludeResourcePrefixes") or []]
        for mapping in res.get("deviceClassMappings") or []:
            if isinstance(mapping, dict) and mapping.get("name"):
                for device_class in mapping.get("deviceClassNames") or []:
                    config.device_class_mappings[str(device_class)] = str(mapping["name"])
        integrations = doc.get("integrations")
        frameworks = integrations.get("frameworks") if isinstance(integrations, dict) else None
        self.frameworks = {str(f) for f in frameworks} if isinstance(frameworks, list) else None
        self.state.configuration = config
