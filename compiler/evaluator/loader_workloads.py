"""The loader's readers of Workloads, jobs and Pods: each becomes the Workloads Kueue would
build for it (the adapters of `jobs/`), with its queue, priority and status."""

from __future__ import annotations

from datetime import datetime

from compiler.core import codes
from compiler.core.errors import SourcePosition
from compiler.evaluator.jobs import JobObject, JobWorkload, adapter_for
from compiler.evaluator.jobs.base import framework_name, template_priority_class
from compiler.evaluator.jobs.pod import POD_GROUP_LABEL, group_workload
from compiler.evaluator.loader_fields import (
    DEFAULT_QUEUE_KINDS, KUEUE_GROUP, PREBUILT_WORKLOAD, PRIORITY_LABEL, QUEUE_LABEL, UNMANAGED_NAMESPACES, _Skip,
    _describe, _group, _parse_time, _text,
)
from compiler.evaluator.loader_topology import (
    annotations_request,
    check_pod_set_groups,
    topology_assignment,
    topology_request,
)
from compiler.evaluator.models import EPOCH, Admission, PodSet, PodSetAdmission, Workload
from compiler.evaluator.podspec import DraContext, PodSpecProblem, placement, pod_requests
from compiler.evaluator.spec_shape import go_json, spec_shape

# The kinds whose Kueue webhook checks podset-group-name across pod sets
# (jobframework.ValidatePodSetGroupingTopology); a batch Job's one pod set is a group alone.
GROUP_CHECKING_KINDS = {("jobset.x-k8s.io", "JobSet"), ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
                        ("kubeflow.org", "MPIJob"), ("ray.io", "RayCluster"), ("ray.io", "RayJob")}


class WorkloadReaders:
    """Readers of Workloads, jobs and Pods (a part of `_Loader`)."""

    def pod(self, doc: dict, where: SourcePosition | None) -> None:
        self.pods.append((doc, where))

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
        template_meta = template.get("metadata") if isinstance(template, dict) else None
        annotations = (template_meta or {}).get("annotations") if isinstance(template_meta, dict) else None
        topology = annotations_request(annotations, f"pod set {name}") if isinstance(annotations, dict) else None
        return PodSet(name=name, count=count, per_pod=per_pod, min_count=min_count,
                      node_selector=place.node_selector, affinity_terms=place.affinity_terms,
                      tolerations=place.tolerations, topology=topology,
                      spec_shape=go_json(spec_shape(spec)))

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
            # A Workload's own topologyRequest is what Kueue reads (template annotations are
            # read from jobs only, when their Workload is built).
            podsets[-1].topology = topology_request(ps.get("topologyRequest"), f"spec.podSets[{index}].topologyRequest")
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
        if (job.group, job.kind) in GROUP_CHECKING_KINDS:
            check_pod_set_groups(podsets, _describe(doc))
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
            placed = topology_assignment(psa.get("topologyAssignment"), f"status.admission pod set {name}")
            podset_admissions.append(PodSetAdmission(name, flavors, usage, count, placed))
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
