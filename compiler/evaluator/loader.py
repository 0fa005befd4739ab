"""Manifests (plain dicts, as `kubectl get -o yaml` prints them) -> a typed ClusterState.

Objects the engine cannot use are skipped with a warning that names the file and the object;
only input that cannot be read at all is an error (see `reader.py`), and so is a Kueue
Configuration that cannot be read, in whichever form it comes (`configuration_forms.py`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from fractions import Fraction

from compiler.core import codes
from compiler.core.errors import Diagnostic, Severity, SourcePosition
from compiler.core.parent_cycles import cycles
from compiler.evaluator import configuration_forms
from compiler.evaluator.priority_defaults import PriorityDefaults
from compiler.evaluator.jobs import (
    JobContext, JobObject, JobWorkload, Rejected, Unusable, adapter_for, registered_kinds,
)
from compiler.evaluator.jobs.base import GeneratedNames, framework_name, template_priority_class
from compiler.evaluator.jobs.pod import POD_GROUP_LABEL, group_workload
from compiler.evaluator.models import (
    EPOCH, Admission, ClusterQueue, ClusterState, Cohort, Configuration, FlavorFungibility,
    LocalQueue, PodSet, PodSetAdmission, PreemptionPolicy, ResourceFlavor, ResourceGroup,
    ResourceQuota, Workload, flavor_resource,
)
from compiler.evaluator.podspec import DraContext, PodSpecProblem, placement, pod_requests
from compiler.core.quantity import QuantityError, parse_quantity, to_units

KUEUE_GROUP = "kueue.x-k8s.io"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
PREBUILT_WORKLOAD = "kueue.x-k8s.io/prebuilt-workload-name"  # annotation (or label) on a job
# Kueue's default managedJobsNamespaceSelector leaves these namespaces' jobs alone.
UNMANAGED_NAMESPACES = ("kube-system", "kueue-system")
# The kinds whose Kueue webhook gives a job without the queue-name label the namespace's
# `default` LocalQueue (v0.19: not the Kubeflow training-operator jobs, not Pods).
DEFAULT_QUEUE_KINDS = frozenset({("batch", "Job"), ("jobset.x-k8s.io", "JobSet"), ("kubeflow.org", "MPIJob"),
                                 ("ray.io", "RayJob"), ("ray.io", "RayCluster"),
                                 ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"), ("trainer.kubeflow.org", "TrainJob")})
# Kinds Kueue integrates (pkg/controller/jobs) that have no adapter in compiler/evaluator/jobs.
KUEUE_INTEGRATIONS_NOT_MODELLED = {
    ("apps", "Deployment"), ("apps", "StatefulSet"), ("ray.io", "RayService"),
    ("workload.codeflare.dev", "AppWrapper"), ("sparkoperator.k8s.io", "SparkApplication"),
}

IGNORED_KINDS = {
    # Kinds a cluster export commonly holds that do not change admission.
    "AdmissionCheck", "Topology", "MultiKueueCluster", "MultiKueueConfig",
    "ProvisioningRequestConfig", "ResourceSlice", "ResourceClaim", "Node", "ConfigMap",
}


class _Skip(Exception):
    """This object is unusable; the message says why."""


def _text(value: object, what: str, optional: bool = False) -> str | None:
    """A name or reference: a non-empty string (or absent when optional)."""
    if value is None or value == "":
        if optional:
            return None
        raise _Skip(f"{what} is missing")
    if not isinstance(value, str):
        raise _Skip(f"{what} must be a string (got {value!r})")
    return value


def _choice(value: object, allowed: tuple[str, ...], default: str, what: str) -> str:
    if value is None or value == "":
        return default
    if value not in allowed:
        raise _Skip(f"{what} must be one of {', '.join(allowed)} (got {value!r})")
    return str(value)


def _mapping(value: object, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Skip(f"{what} must be a mapping")
    return value


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _parse_time(text: object) -> datetime | None:
    if isinstance(text, datetime):
        return text if text.tzinfo else text.replace(tzinfo=timezone.utc)
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _kinds_text() -> str:
    return ", ".join(f"{kind}{'.' + group if group else ''}" for group, kind in registered_kinds())


def _describe(doc: dict) -> str:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    name = meta.get("name", "<unnamed>")
    ns = meta.get("namespace")
    return f"{doc.get('kind', '<no kind>')} {ns + '/' if ns else ''}{name}"


class _Loader:
    def __init__(self) -> None:
        self.state = ClusterState()
        self.warnings: list[Diagnostic] = []
        self.seen: dict[tuple, SourcePosition | None] = {}
        # Jobs and Workloads are built after everything else: they need priority classes,
        # DRA templates and the Configuration.
        self.deferred: list[tuple[dict, SourcePosition | None]] = []
        self.claim_templates: dict[tuple[str, str], dict] = {}
        self.device_classes: dict[str, dict] = {}
        self.pod_priority_classes: dict[str, int] = {}
        self.default_pod_priority = 0  # the globalDefault PriorityClass's value, if any
        self.names = GeneratedNames()
        self.job_context = JobContext()
        # integrations.frameworks of the input's Configuration; None (no Configuration, or none
        # listed) evaluates every kind an adapter knows.
        self.frameworks: set[str] | None = None
        self.pods: list[tuple[dict, SourcePosition | None]] = []
        # kueue-policy's team priority policies in the input, applied to jobs as the API server would.
        self.priority_defaults = PriorityDefaults()
        self._group_cache: dict[int, tuple[list, list[ResourceGroup]]] = {}

    def warn(self, code: str, message: str, where: SourcePosition | None) -> None:
        self.warnings.append(Diagnostic(code, message, where, Severity.WARNING))

    # ---- dispatch -------------------------------------------------------------------------
    def add(self, doc: object, where: SourcePosition | None) -> None:
        if doc is None:
            return
        if not isinstance(doc, dict):
            self.warn(codes.EVAL_MALFORMED, "document is not a mapping; skipped", where)
            return
        kind = doc.get("kind")
        if kind == "List" or (isinstance(kind, str) and kind.endswith("List") and "items" in doc):
            items = doc.get("items") or []
            if not isinstance(items, list):
                self.warn(codes.EVAL_MALFORMED, f"{kind}: items must be a list; skipped", where)
                return
            for item in items:
                self.add(item, where)
            return
        api_version = doc.get("apiVersion")
        if configuration_forms.embedded_text(doc) is not None:
            # Kueue's ConfigMap (or the kustomize patch of it) or the Helm values file.
            self.configuration(configuration_forms.unwrap(doc, where, _describe(doc) if kind else "Helm values"),
                               where)
            return
        if not isinstance(kind, str) or not isinstance(api_version, str):
            self.warn(codes.EVAL_MALFORMED, "object has no kind or apiVersion; skipped", where)
            return
        group = _group(api_version)
        if adapter_for(group, kind) is not None:
            doc = self.names.name_generated(doc)
        handler = self._handler(group, kind)
        if handler is None:
            if kind not in IGNORED_KINDS:
                self._unknown_kind(kind, api_version, doc.get("metadata"), where)
            return
        if not self._metadata_ok(doc, kind, group, where):
            return
        if kind not in ("Configuration",) and not self._first_time(doc, where):
            return
        self._guarded(handler, doc, where)

    def _metadata_ok(self, doc: dict, kind: str, group: str, where: SourcePosition | None) -> bool:
        meta = doc.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
            if not (kind == "Configuration" and group == "config.kueue.x-k8s.io"):
                self.warn(codes.EVAL_MALFORMED, f"{kind} has no metadata.name; skipped", where)
                return False
        for field in ("labels", "annotations"):
            value = meta.get(field) if isinstance(meta, dict) else None
            if value is not None and (not isinstance(value, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in value.items())):
                self.warn(codes.EVAL_MALFORMED, f"{kind} {meta.get('name')}: metadata.{field} must map strings "
                          "to strings; skipped", where)
                return False
        if isinstance(meta, dict) and meta.get("namespace") is not None and not isinstance(meta.get("namespace"), str):
            self.warn(codes.EVAL_MALFORMED, f"{kind} {meta.get('name')}: metadata.namespace is not a string; "
                      "skipped", where)
            return False
        return True

    def _handler(self, group: str, kind: str):
        if group == KUEUE_GROUP:
            return {
                "ResourceFlavor": self.resource_flavor, "Cohort": self.cohort,
                "ClusterQueue": self.cluster_queue, "LocalQueue": self.local_queue,
                "WorkloadPriorityClass": self.priority_class, "Workload": self.defer,
            }.get(kind)
        if adapter_for(group, kind) is not None:
            # Pods are grouped before they become Workloads; every other job kind waits for
            # priority classes, runtimes, DRA templates and the Configuration.
            return self.pod if (group, kind) == ("", "Pod") else self.defer
        return {
            ("config.kueue.x-k8s.io", "Configuration"): self.configuration,
            ("", "Namespace"): self.namespace,
            ("scheduling.k8s.io", "PriorityClass"): self.pod_priority_class,
            ("resource.k8s.io", "ResourceClaimTemplate"): self.claim_template,
            ("resource.k8s.io", "DeviceClass"): self.device_class,
            ("trainer.kubeflow.org", "TrainingRuntime"): self.training_runtime,
            ("trainer.kubeflow.org", "ClusterTrainingRuntime"): self.training_runtime,
            ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"): self.admission_policy,
            ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"): self.admission_binding,
        }.get((group, kind))

    def _unknown_kind(self, kind: str, api_version: str, meta: object, where: SourcePosition | None) -> None:
        name = meta.get("name") or meta.get("generateName") if isinstance(meta, dict) else None
        labels = meta.get("labels") if isinstance(meta, dict) else None
        queue = labels.get(QUEUE_LABEL) if isinstance(labels, dict) else None
        what = f"{kind} ({api_version}){' ' + str(name) if name else ''}"
        if queue:
            # A job the user meant for Kueue: say plainly that nothing of it is evaluated.
            also = " (Kueue v0.19 integrates it; this engine does not model it yet)" \
                if (_group(api_version), kind) in KUEUE_INTEGRATIONS_NOT_MODELLED else ""
            self.warn(codes.EVAL_UNKNOWN_KIND,
                      f"{what} carries the label {QUEUE_LABEL}={queue} but the admission engine has no "
                      f"adapter for kind {kind}{also}; it is not evaluated (kinds evaluated: {_kinds_text()})",
                      where)
            return
        self.warn(codes.EVAL_UNKNOWN_KIND, f"unknown kind {what}: not used by the admission engine; skipped",
                  where)

    def _guarded(self, handler, doc: dict, where: SourcePosition | None, *extra):
        try:
            return handler(doc, where, *extra)
        except (_Skip, Unusable) as error:
            self.warn(codes.EVAL_BAD_OBJECT, f"{_describe(doc)}: {error}; skipped", where)
        except Rejected as refusal:
            self.warn(codes.EVAL_BAD_OBJECT, f"{_describe(doc)}: Kueue's admission webhook rejects it ({refusal}); "
                      "skipped", where)
        except (AttributeError, TypeError, ValueError, KeyError, IndexError) as error:
            # A field of the wrong type somewhere (a string where a mapping belongs, ...): the
            # API server would have refused the object, so it cannot be in a real export.
            self.warn(codes.EVAL_BAD_OBJECT, f"{_describe(doc)}: malformed object ({type(error).__name__}: "
                                             f"{error}); skipped", where)
        return None

    def _first_time(self, doc: dict, where: SourcePosition | None) -> bool:
        meta = doc["metadata"]
        key = (_group(doc["apiVersion"]), doc["kind"], meta.get("namespace") or "", meta["name"])
        if key in self.seen:
            earlier = self.seen[key]
            self.warnings.append(Diagnostic(
                codes.EVAL_DUPLICATE, f"duplicate {_describe(doc)}: the first definition is kept",
                where, Severity.WARNING, earlier))
            return False
        self.seen[key] = where
        return True

    def defer(self, doc: dict, where: SourcePosition | None) -> None:
        self.deferred.append((doc, where))

    # ---- helpers ---------------------------------------------------------------------------
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

    # ---- kinds -----------------------------------------------------------------------------
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

    def pod(self, doc: dict, where: SourcePosition | None) -> None:
        self.pods.append((doc, where))

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

    # ---- workloads -------------------------------------------------------------------------
    def finish(self) -> ClusterState:
        dra = DraContext(
            claim_templates=self.claim_templates,
            class_to_resource=dict(self.state.configuration.device_class_mappings),
            extended_resource_classes={
                str(spec["extendedResourceName"]): name for name, spec in self.device_classes.items()
                if isinstance(spec, dict) and spec.get("extendedResourceName")})
        # The jobs as stored once the API server's mutating admission ran (team priority defaults).
        self.deferred = [(doc if doc["kind"] == "Workload" else self.priority_defaults.apply(doc), where)
                         for doc, where in self.deferred]
        self.pods = [(self.priority_defaults.apply(doc), where) for doc, where in self.pods]
        for doc, where in self.deferred:
            if doc["kind"] == "Workload":
                workload = self._guarded(self.build_workload, doc, where, dra)
                if workload is not None:
                    self.state.workloads.append(workload)
            else:
                self.state.workloads.extend(self._guarded(self.build_job, doc, where, dra) or [])
        self.build_pod_workloads(dra)
        self._warn_inactive_queues()
        self.state.warnings = self.warnings
        return self.state

    def _warn_inactive_queues(self) -> None:
        """Why Kueue will keep ClusterQueues inactive, said once at the object that causes it
        (the engine only answers "ClusterQueue ... is inactive" for their workloads)."""
        cohorts = self.state.cohorts
        for cycle in cycles({name: cohorts[name].parent for name in sorted(cohorts)}):
            self.warn(codes.EVAL_INACTIVE_QUEUE, f"Cohort {cycle[0]}: the parents of {' -> '.join(cycle + cycle[:1])} "
                      "go round in a cycle; Kueue keeps every ClusterQueue under them inactive", cohorts[cycle[0]].source)
        for name, queue in sorted(self.state.cluster_queues.items()):
            missing = sorted({flavor for group in queue.resource_groups for flavor in group.flavors}
                             - set(self.state.flavors))
            if missing:
                self.warn(codes.EVAL_INACTIVE_QUEUE, f"ClusterQueue {name}: ResourceFlavor "
                          f"{', '.join(missing)} does not exist; Kueue keeps the ClusterQueue inactive",
                          queue.source)

    def queue_of(self, meta: dict, group_kind: tuple[str, str] = ("", "Pod")) -> str | None:
        """The LocalQueue a job is submitted to: its queue-name label; without one, for the kinds
        whose webhook does it (DEFAULT_QUEUE_KINDS), the namespace's LocalQueue named `default`
        when there is one, outside the namespaces Kueue's default managedJobsNamespaceSelector
        excludes."""
        queue = (meta.get("labels") or {}).get(QUEUE_LABEL)
        if queue:
            return queue
        ns = meta.get("namespace") or "default"
        if group_kind in DEFAULT_QUEUE_KINDS and (ns, "default") in self.state.local_queues \
                and ns not in UNMANAGED_NAMESPACES:
            return "default"
        return None

    def owned_by_managed_job(self, meta: dict) -> bool:
        """A job whose controller (a JobSet's Job, a Job's Pod, ...) is itself a kind Kueue
        manages: Kueue admits the owner, never the child."""
        refs = meta.get("ownerReferences")
        for ref in refs if isinstance(refs, list) else []:
            if isinstance(ref, dict) and ref.get("controller") is True and isinstance(ref.get("apiVersion"), str) \
                    and adapter_for(_group(ref["apiVersion"]), str(ref.get("kind"))) is not None:
                return True
        return False

    def job_priority(self, labels: dict, job: JobWorkload) -> int:
        """Kueue's order: the WorkloadPriorityClass label; else the pod PriorityClass the
        integration names (or the first pod set's priorityClassName); else the cluster's
        globalDefault PriorityClass; else 0. A class that does not exist stops Kueue from
        creating the Workload at all, so the job is skipped with that reason."""
        wpc = labels.get(PRIORITY_LABEL)
        if wpc:
            if wpc not in self.state.priority_classes:
                raise _Skip(f"WorkloadPriorityClass {wpc} (label {PRIORITY_LABEL}) is not in the input; Kueue "
                            "creates no Workload until it exists")
            return self.state.priority_classes[wpc]
        pc = job.priority_class
        if pc is None:
            pc = next((name for name in (template_priority_class(ps.template) for ps in job.podsets) if name), "")
        if pc:
            if pc not in self.pod_priority_classes:
                raise _Skip(f"PriorityClass {pc} is not in the input; Kueue creates no Workload until it exists")
            return self.pod_priority_classes[pc]
        return self.default_pod_priority

    def make_podset(self, name: str, count: object, min_count: object, template: object,
                    namespace: str, dra: DraContext, problems: list[str]) -> PodSet:
        bad_count = not isinstance(count, int) or isinstance(count, bool) or count < 0
        if bad_count:
            problems.append(f"pod set {name}: count must be a non-negative integer (got {count!r})")
            count = 0
        # (minCount is compared with a count only when there is one: a bad count is one problem)
        if min_count is not None and not bad_count and (
                not isinstance(min_count, int) or isinstance(min_count, bool) or min_count < 1 or min_count > count):
            problems.append(f"pod set {name}: minCount should be positive and less or equal to count")
            min_count = None
        spec = (template or {}).get("spec") if isinstance(template, dict) else None
        per_pod: dict[str, int] = {}
        place = placement(spec or {})
        try:
            per_pod = pod_requests(spec or {}, name, namespace, dra)
        except PodSpecProblem as problem:
            problems.append(str(problem))
        prefixes = self.state.configuration.exclude_resource_prefixes
        if prefixes:
            per_pod = {r: v for r, v in per_pod.items() if not any(r.startswith(p) for p in prefixes)}
        if "pods" in per_pod:
            problems.append(f"pod set {name}: resource pods: the key is reserved for internal kueue use")
            per_pod.pop("pods")
        return PodSet(name=name, count=count, per_pod=per_pod, min_count=min_count,
                      node_selector=place.node_selector, affinity_terms=place.affinity_terms,
                      tolerations=place.tolerations)

    def build_workload(self, doc: dict, where: SourcePosition | None, dra: DraContext) -> Workload:
        """A Workload object of the input, with its status (admission) when it has one."""
        meta = doc["metadata"]
        ns = meta.get("namespace") or "default"
        problems: list[str] = []
        podsets: list[PodSet] = []
        spec = doc.get("spec") or {}
        if not isinstance(spec, dict):
            raise _Skip("spec is not a mapping")
        for index, ps in enumerate(spec.get("podSets") or []):
            if not isinstance(ps, dict):
                raise _Skip(f"spec.podSets[{index}] is not a mapping")
            podsets.append(self.make_podset(_text(ps.get("name", "main"), f"spec.podSets[{index}].name"),
                                            ps.get("count", 1),
                                            ps.get("minCount"), ps.get("template"), ns, dra, problems))
        if not podsets:
            raise _Skip("spec.podSets is empty")
        names = [ps.name for ps in podsets]
        twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
        if twice is not None:
            # (podSets is a list-map keyed by name: the API server refuses such a Workload)
            raise _Skip(f"spec.podSets names '{twice}' twice, which the API server refuses")
        priority = spec.get("priority")
        if not isinstance(priority, int) or isinstance(priority, bool):
            priority = self._workload_priority(spec)
        workload = Workload(namespace=ns, name=meta["name"],
                            queue_name=_text(spec.get("queueName"), "spec.queueName", optional=True),
                            podsets=podsets, priority=priority,
                            created=_parse_time(meta.get("creationTimestamp")) or EPOCH,
                            uid=str(meta.get("uid") or ""),
                            job_uid=str((meta.get("labels") or {}).get("kueue.x-k8s.io/job-uid", "")),
                            active=spec.get("active", True) is not False, kind="Workload", source=where)
        self.read_status(doc, workload)
        self._finish_workload(workload, doc, where, problems)
        return workload

    def _workload_priority(self, spec: dict) -> int:
        ref = spec.get("priorityClassRef") or {}
        pc_name = ref.get("name") if isinstance(ref, dict) else None
        pc_name = _text(pc_name or spec.get("priorityClassName"), "priority class name", optional=True)
        source = (ref.get("kind") if isinstance(ref, dict) else None) or spec.get("priorityClassSource")
        if pc_name and source in ("PriorityClass", "scheduling.k8s.io/priorityclass"):
            return self.pod_priority_classes.get(pc_name, 0)
        if pc_name:
            return self.state.priority_classes.get(pc_name, 0)
        return 0

    def _finish_workload(self, workload: Workload, doc: dict, where: SourcePosition | None,
                         problems: list[str]) -> None:
        """What every Workload gets, whatever it came from: invalid when a pod set is."""
        if problems:
            workload.invalid = ("Invalid", "; ".join(problems))
            if where is not None:
                for problem in problems:
                    self.warn(codes.EVAL_BAD_OBJECT, f"{_describe(doc)}: {problem}", where)
        if sum(1 for ps in workload.podsets if ps.min_count is not None) > 1:
            workload.invalid = ("Invalid", "at most one podSet can use minCount")
        for ps in workload.podsets:
            # (an invalid workload has its problems said; a count it has not is not one more)
            if ps.count == 0 and where is not None and not problems:
                self.warn(codes.EVAL_ZERO_COUNT, f"{_describe(doc)}: pod set {ps.name} has count 0 and "
                          "requests nothing", where)

    def build_job(self, doc: dict, where: SourcePosition | None, dra: DraContext) -> list[Workload]:
        """The Workloads Kueue would create for a job object (see `compiler.evaluator.jobs`): the
        kind's adapter says which Workloads and pod sets; queue, priority and pod templates are
        read here alike for every kind, as Kueue's jobframework does."""
        meta = doc["metadata"]
        queue = self.queue_of(meta, (_group(doc["apiVersion"]), doc["kind"]))
        if not queue or self.owned_by_managed_job(meta):
            return []  # not managed by Kueue
        if not self.integration_enabled(doc, where):
            return []
        job = JobObject.of(doc)
        prebuilt = job.annotations.get(PREBUILT_WORKLOAD) or job.labels.get(PREBUILT_WORKLOAD)
        if prebuilt:
            # The job runs under a Workload the user created; that object is what gets admitted.
            if not self._workload_in_input(job.namespace, prebuilt):
                self.warn(codes.EVAL_BAD_OBJECT, f"{_describe(doc)}: its prebuilt Workload {job.namespace}/{prebuilt} "
                          f"({PREBUILT_WORKLOAD}) is not in the input; nothing to evaluate", where)
            return []
        specs = adapter_for(job.group, job.kind).build(job, self.job_context)
        created = _parse_time(meta.get("creationTimestamp")) or EPOCH
        # In an export (`kubectl get jobs,workloads`) Kueue's own Workload of the job is there too,
        # with its admission: that object stands for the job.
        return [self.job_workload(job, spec, queue, created, doc, where, dra) for spec in specs
                if not self._workload_in_input(job.namespace, spec.name)]

    def _workload_in_input(self, namespace: str, name: str) -> bool:
        namespaces = {namespace, "" if namespace == "default" else namespace}
        return any((KUEUE_GROUP, "Workload", ns, name) in self.seen for ns in namespaces)

    def integration_enabled(self, doc: dict, where: SourcePosition | None) -> bool:
        framework = framework_name(_group(doc["apiVersion"]), doc["kind"])
        if self.frameworks is None or framework in self.frameworks:
            return True
        self.warn(codes.EVAL_UNKNOWN_KIND, f"{_describe(doc)}: the Configuration does not enable the integration "
                  f"{framework} (integrations.frameworks); Kueue leaves it alone", where)
        return False

    def job_workload(self, job: JobObject, spec: JobWorkload, queue: str, created: datetime, doc: dict,
                     where: SourcePosition | None, dra: DraContext) -> Workload:
        if not spec.podsets:
            raise _Skip("no pod sets could be derived from the job")
        problems: list[str] = []
        podsets = [self.make_podset(ps.name, ps.count, ps.min_count, ps.template, job.namespace, dra, problems)
                   for ps in spec.podsets]
        # Kueue generates the Workload (its UID is unknown here) and labels it with the job's UID.
        workload = Workload(namespace=job.namespace, name=spec.name, queue_name=queue, podsets=podsets,
                            priority=self.job_priority(job.labels, spec), created=created, uid="",
                            job_uid=job.uid, kind=job.kind, source=where)
        self._finish_workload(workload, doc, where, problems)
        return workload

    def read_status(self, doc: dict, workload: Workload) -> None:
        status = doc.get("status") or {}
        if not isinstance(status, dict):
            return
        conditions = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
        if (conditions.get("Finished") or {}).get("status") == "True":
            workload.active = False
            workload.invalid = ("Finished", "The workload has finished")
            return
        reserved = conditions.get("QuotaReserved") or {}
        admission = status.get("admission")
        if reserved.get("status") != "True" or not isinstance(admission, dict):
            return
        cq = admission.get("clusterQueue")
        if not cq:
            raise _Skip("status.admission.clusterQueue is missing")
        podset_admissions = []
        by_name = {ps.name: ps for ps in workload.podsets}
        for psa in admission.get("podSetAssignments") or []:
            if not isinstance(psa, dict):
                continue
            name = str(psa.get("name", "main"))
            podset = by_name.get(name)
            count = psa.get("count")
            if not isinstance(count, int):
                count = podset.count if podset else 1
            usage_text = psa.get("resourceUsage") or {}
            usage: dict[str, int] = {}
            if usage_text:
                for res, qty in usage_text.items():
                    usage[str(res)] = self._units(str(res), qty, f"status.admission pod set {name} {res}")
            elif podset is not None:
                usage = podset.total(count)
            flavors = {str(k): str(v) for k, v in (psa.get("flavors") or {}).items()}
            podset_admissions.append(PodSetAdmission(name, flavors, usage, count))
        workload.admission = Admission(str(cq), podset_admissions)
        workload.quota_reserved_at = _parse_time(reserved.get("lastTransitionTime")) or EPOCH

    def build_pod_workloads(self, dra: DraContext) -> None:
        """Pods become Workloads last: a pod group is known only once all its pods are read."""
        groups: dict[tuple[str, str], list[tuple[dict, SourcePosition | None]]] = {}
        for doc, where in self.pods:
            meta = doc["metadata"]
            if not self.queue_of(meta) or self.owned_by_managed_job(meta) or not self.integration_enabled(doc, where):
                continue
            group = (meta.get("labels") or {}).get(POD_GROUP_LABEL)
            if group:
                groups.setdefault((meta.get("namespace") or "default", group), []).append((doc, where))
                continue
            self.state.workloads.extend(self._guarded(self.build_job, doc, where, dra) or [])
        built = {workload.key for workload in self.state.workloads}
        for (ns, group), members in sorted(groups.items()):
            if f"{ns}/{group}" in built:
                # The group's Workload is already here: a LeaderWorkerSet's group (its pods carry
                # the Workload's name as group name) or the Workload object of an export.
                continue
            workload = self._guarded(self.pod_group, members[0][0], members[0][1], dra, members, group)
            if workload is not None:
                self.state.workloads.append(workload)

    def pod_group(self, doc: dict, where: SourcePosition | None, dra: DraContext,
                  members: list[tuple[dict, SourcePosition | None]], group: str) -> Workload:
        spec = group_workload(group, [JobObject.of(member) for member, _ in members])
        created = min((_parse_time(m["metadata"].get("creationTimestamp")) or EPOCH) for m, _ in members)
        workload = self.job_workload(JobObject.of(doc), spec, self.queue_of(doc["metadata"]) or "", created,
                                     doc, where, dra)
        workload.job_uid = ""
        return workload


def load_documents(documents: list[tuple[object, SourcePosition | None]]) -> ClusterState:
    loader = _Loader()
    for doc, where in documents:
        loader.add(doc, where)
    state = loader.finish()
    _check_duplicate_workloads(state)
    return state


def _check_duplicate_workloads(state: ClusterState) -> None:
    seen: dict[str, Workload] = {}
    kept = []
    for workload in state.workloads:
        if workload.key in seen:
            state.warnings.append(Diagnostic(codes.EVAL_DUPLICATE,
                f"duplicate workload {workload.key}: the first definition is kept", workload.source,
                Severity.WARNING, seen[workload.key].source))
            continue
        seen[workload.key] = workload
        kept.append(workload)
    state.workloads = kept
