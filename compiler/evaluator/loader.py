"""Manifests (plain dicts, as `kubectl get -o yaml` prints them) -> a typed ClusterState.

Objects the engine cannot use are skipped with a warning that names the file and the object;
only input that cannot be read at all is an error (see `reader.py`), and so is a Kueue
Configuration that cannot be read, in whichever form it comes (`configuration_forms.py`).
One reader per kind: the quota tree's and the queues' in `loader_queues.py`, the workloads' and
jobs' in `loader_workloads.py`; this module routes each document to its reader.
"""

from __future__ import annotations

from compiler.core import codes
from compiler.core.errors import Diagnostic, Severity, SourcePosition
from compiler.core.parent_cycles import cycles
from compiler.evaluator import configuration_forms
from compiler.evaluator.priority_defaults import PriorityDefaults
from compiler.evaluator.jobs import JobContext, Rejected, Unusable, adapter_for
from compiler.evaluator.jobs.base import GeneratedNames
from compiler.evaluator.loader_fields import (
    IGNORED_KINDS, KUEUE_GROUP, KUEUE_INTEGRATIONS_NOT_MODELLED, QUEUE_LABEL, _Skip, _describe, _group, _kinds_text,
)
from compiler.evaluator.loader_queues import QueueObjectReaders
from compiler.evaluator.loader_topology import TopologyReaders
from compiler.evaluator.loader_workloads import WorkloadReaders
from compiler.evaluator.models import ClusterState, Workload
from compiler.evaluator.podspec import DraContext

class _Loader(QueueObjectReaders, WorkloadReaders, TopologyReaders):
    """Routes each document to the reader of its kind, and keeps what they read."""

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
        self._group_cache: dict[int, object] = {}  # id(resourceGroups) -> loader_queues.ParsedGroups

    def warn(self, code: str, message: str, where: SourcePosition | None) -> None:
        self.warnings.append(Diagnostic(code, message, where, Severity.WARNING))

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
                "Topology": self.topology,
            }.get(kind)
        if adapter_for(group, kind) is not None:
            # Pods are grouped before they become Workloads; every other job kind waits for
            # priority classes, runtimes, DRA templates and the Configuration.
            return self.pod if (group, kind) == ("", "Pod") else self.defer
        return {
            ("config.kueue.x-k8s.io", "Configuration"): self.configuration,
            ("", "Namespace"): self.namespace,
            ("", "Node"): self.node,
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
