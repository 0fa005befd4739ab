"""The engine's state, built from a ClusterState: the quota tree of cohorts and ClusterQueues, the
workloads with their queues, and what holds quota (Kueue's cache and queue manager as they are
filled from the objects: pkg/cache/scheduler, pkg/cache/queue; the queue blockers of
pkg/cache/queue/manager.go)."""

from __future__ import annotations


from compiler.evaluator.assigner import FlavorAssigner
from compiler.evaluator.bounds_watch import BoundsWatch
from compiler.evaluator.circles import CircleFinder
from compiler.evaluator.tas import PodSetPlacement, TasState
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.layers import EngineLayers
from compiler.evaluator.models import ClusterState, Workload, flavor_resource
from compiler.evaluator.preemption import Preemptor
from compiler.evaluator.queue_manager import PendingQueue
from compiler.evaluator.selectors import label_selector_matches
from compiler.evaluator.statuses import WorkloadStatus
from compiler.evaluator.tree import QuotaNode
from compiler.core.parent_cycles import cycles

MISCONFIGURED = "Misconfigured"
SUSPENDED = "Suspended"
WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
QUOTA_RESERVED = "QuotaReserved"
INADMISSIBLE_REASONS = {MISCONFIGURED, SUSPENDED, "NoMatchingFlavor", "ExceedsMaxQuota", "Invalid",
                        "Inactive", "Finished"}


class ClusterCache:
    """Every field of the engine (the compiled build lays them out once, here), and the state
    they start from: the layers above (nomination, processing, quiet queues, the cycle, the run
    modes) add behaviour only."""

    def __init__(self, state: ClusterState, reuse: bool = True, layers: EngineLayers | None = None) -> None:
        """`layers`: the optional layers to run with (see `EngineLayers.chosen` for `reuse`)."""
        self.state = state
        self.reuse = reuse
        self.layers = EngineLayers.chosen(layers, reuse)
        self.config = state.configuration
        self.fair_sharing = self.config.fair_sharing
        self.infos: dict[str, WorkloadInfo] = {}
        self.nodes: dict[str, QuotaNode] = {}
        self.cohort_nodes: dict[str, QuotaNode] = {}
        self.inactive: dict[str, str] = {}  # CQ -> why
        self.admitted: dict[str, dict[str, WorkloadInfo]] = {}
        self.queues: dict[str, PendingQueue] = {}
        # Names of the queues whose heap may be non-empty (pushed to since a cycle last found
        # the heap empty): a cycle visits these, not all queues.
        self._waiting: set[str] = set()
        # Names of the queues that may hold workloads set aside or a sticky head, and the
        # pending workloads that may carry a flavor-scan position or stickiness: what a rescan
        # resets, so it does not walk every queue and workload.
        self._aside: set[str] = set()
        self._scanned: set[WorkloadInfo] = set()
        # Roots (ids) of the trees whose inadmissible workloads a finished job requeues, not
        # yet requeued (see `finish`).
        self._finished_roots: set[int] = set()
        self._tree_queues: dict[int, list[PendingQueue]] | None = None
        self._init_quiet_queues()
        self.cycle = self.scheduling_cycle = 0  # the latter Kueue's (see `_scan_outdated`)
        self.decisions = 0
        self._reserve_seq = 0
        # Admitted at the clock's current moment: ordered among themselves by admission until
        # the next moment (see `rescan`).
        self._admitted_now: list[WorkloadInfo] = []
        self.converged = True
        # Evaluate: a run that comes back to a state it was in is in a circle of preemptions
        # (first cycle of the circle, period), found by circles.CircleFinder (see `run`).
        self.circle: tuple[int, int] | None = None
        self.circle_finder: CircleFinder | None = None  # the last run's (what it kept: tests)
        # XOR of hash((workload, ClusterQueue)) over the workloads admitted or evicted in this
        # process: equal values mean the same holders (within one run; see `run(repeats=)`).
        self.holders_print = 0
        # Admissions and evictions in order, when a caller (simulate) asks for them.
        self.journal: list[tuple[str, WorkloadInfo, str | None]] | None = None
        # Seconds since the epoch of "now" when a caller (simulate) runs the engine in time.
        self.clock: float | None = None
        # A nomination is a pure function of the workload, its flavor-scan position and the
        # committed state of the pairs it can read (the preemptor's snapshot versions them), so
        # a head whose pairs saw no admission or eviction since its last nomination reuses it.
        self.reused = 0
        # Of those, failed nominations reused as every reading they took reads the same again,
        # and nominations reused within their usage bounds (answer_bounds).
        self.reused_failures = self.bounded = 0
        self._selected: dict[tuple[str, str], bool] = {}
        # (queue, equivalence class, scan position) -> the class's last failed or fitting
        # nomination there, and how many nominations were another workload's reused (or own
        # from another scan), of them how many fits.
        self._class_nominations: dict[tuple, tuple] = {}
        self.reused_from_class = self.reused_fits = 0
        # Fair sharing: each queue's head keys in the tournaments of its cohorts, kept from one
        # cycle to the next (fair_tournament._head_keys's memo).
        self._tournament_keys: dict[str, tuple] = {}
        self._build_tree()
        self.preemptor = Preemptor(self.nodes, state.cluster_queues, self.admitted, self.fair_sharing,
                                   self.config.preemption_strategies, *self.layers.preemption_layers())
        self._assigners: dict[str, FlavorAssigner] = {}
        self.tas = TasState(state)  # Topology Aware Scheduling: the nodes, the pods placed on them
        self.preemptor.snapshot.tas = self.tas if self.tas.active else None  # (searches placing pods)
        self._load_workloads()

    def _init_quiet_queues(self) -> None:
        """The fields of the quiet queues' layer (quiet_queues.py)."""
        # The quiet queues (see `_quiet_queues`; kept from moment to moment): name -> (queue,
        # the heads it pops in cycles 1, 2, ...), the cycles of the moment so far.
        self._quiet: dict[str, tuple[PendingQueue, list[WorkloadInfo]]] = {}
        # The quiet queues as (the cycle of the moment they pop their last head in, name),
        # sorted: those with a head in cycle c are a tail of the list, found by bisection, not
        # a walk of all.
        self._quiet_order: list[tuple[int, str]] = []
        self._moment_cycle = 0
        # name -> the cycles of this moment after which a quota release requeued the quiet
        # queue: it pops its heads again from the first (quiet_queues._requeue_quiet)
        self._quiet_requeues: dict[str, list[int]] = {}
        # name -> its trail when found quiet, and what its heads read (quiet_set.CheckedTrail)
        self._quiet_checked: dict[str, object] = {}
        # The quiet queues whose trails are watched by their answer bounds (bounds_watch), and
        # those asked again instead whenever their tree commits (no bounds, or crossed this
        # moment), with the commit versions of those trees when last asked.
        self._watch = BoundsWatch(self.nodes)
        self._polled: set[str] = set()
        self._quiet_versions: dict[int, int] = {}
        # The quiet queues' heads with a flavor-scan position the rescans they slept through
        # did not reset (reset when they wake).
        self._asleep: set[WorkloadInfo] = set()
        # Heads of quiet queues not walked (counted in `decisions` and `reused` as the walk
        # would have), and quiet queues woken and walked after all.
        self.quiet_heads = self.woken = 0

    def _build_tree(self) -> None:
        state = self.state
        parents: dict[str, str | None] = {name: c.parent for name, c in state.cohorts.items()}
        for cq in state.cluster_queues.values():
            if cq.cohort and cq.cohort not in parents:
                parents[cq.cohort] = None
        for name in list(parents):
            parent = parents[name]
            while parent is not None and parent not in parents:
                parents[parent] = None
                parent = None
        in_cycle = {name for cycle in cycles(parents) for name in cycle}
        # a cohort whose ancestor chain reaches a cycle is also unusable
        def reaches_cycle(name: str) -> bool:
            seen = set()
            while name is not None and name not in seen:
                if name in in_cycle:
                    return True
                seen.add(name)
                name = parents.get(name)
            return False
        broken = {name for name in parents if reaches_cycle(name)}
        for name in sorted(parents):
            if name in broken:
                continue
            spec = state.cohorts.get(name)
            quotas = {}
            weight = 1
            if spec is not None:
                for group in spec.resource_groups:
                    quotas.update(group.quotas)
                weight = spec.fair_weight
            self.cohort_nodes[name] = QuotaNode(name, False, quotas, weight)
        for name, node in self.cohort_nodes.items():
            parent = parents.get(name)
            if parent is not None:
                node.parent = self.cohort_nodes[parent]
                node.parent.child_cohorts.append(node)
        self.generations: dict[str, int] = {}  # CQ -> Kueue's generation (see `_scan_outdated`)
        for name in sorted(state.cluster_queues):
            cq = state.cluster_queues[name]
            quotas = {}
            for group in cq.resource_groups:
                quotas.update(group.quotas)
            node = QuotaNode(name, True, quotas, cq.fair_weight)
            self.nodes[name] = node
            self.admitted[name] = {}
            self.queues[name] = PendingQueue(cq.queueing_strategy == "StrictFIFO", name, self._waiting, self._aside)
            if cq.cohort:
                if cq.cohort in broken:
                    self.inactive[name] = f"cohort {cq.cohort} is part of a cycle"
                else:
                    node.parent = self.cohort_nodes[cq.cohort]
                    node.parent.child_cqs.append(node)
            missing = sorted({f for g in cq.resource_groups for f in g.flavors} - set(state.flavors))
            if missing:
                self.inactive.setdefault(name, f"flavor {missing[0]} not found")
            if cq.stop_policy not in ("None", "", None):
                self.inactive.setdefault(name, f"stopPolicy is {cq.stop_policy}")
        for node in self.cohort_nodes.values():
            if node.parent is None:
                node.finalize()

    def _resolve_queue(self, workload: Workload) -> tuple[str | None, str, str]:
        """(ClusterQueue, reason code, message) for a pending workload, Kueue's queue blockers."""
        if workload.queue_name is None:
            return None, MISCONFIGURED, "Workload has no queue name"
        lq = self.state.local_queues.get((workload.namespace, workload.queue_name))
        if lq is None:
            return None, MISCONFIGURED, f"LocalQueue {workload.queue_name} doesn't exist"
        if lq.stop_policy not in ("None", "", None):
            return lq.cluster_queue, SUSPENDED, f"LocalQueue {workload.queue_name} is inactive"
        if lq.cluster_queue not in self.state.cluster_queues:
            return lq.cluster_queue, MISCONFIGURED, f"ClusterQueue {lq.cluster_queue} doesn't exist"
        if lq.cluster_queue in self.inactive:
            return lq.cluster_queue, SUSPENDED, f"ClusterQueue {lq.cluster_queue} is inactive"
        return lq.cluster_queue, "", ""

    def _load_workloads(self) -> None:
        ordered = sorted(self.state.workloads, key=lambda w: (w.created, w.uid, w.key))
        for workload in ordered:
            info = WorkloadInfo(workload)
            self.infos[workload.key] = info
            if workload.admission is not None:
                self._load_admitted(info)
                continue
            if workload.invalid is not None:
                info.status = WorkloadStatus.INADMISSIBLE
                info.reason_code, info.reason = workload.invalid
                continue
            if not workload.active:
                info.status = WorkloadStatus.INADMISSIBLE
                info.reason_code, info.reason = "Inactive", "The workload is deactivated"
                continue
            self._enqueue(info)

    def _enqueue(self, info: WorkloadInfo) -> None:
        """A pending workload enters its ClusterQueue's queue, or is inadmissible with why."""
        cq, code, message = self._resolve_queue(info.workload)
        info.cluster_queue = cq
        if code:
            info.status = WorkloadStatus.INADMISSIBLE
            info.reason_code, info.reason = code, message
            return
        info.status = WorkloadStatus.PENDING
        info.reason_code, info.reason = "Pending", "Waiting to be scheduled"
        self.queues[cq].add(info)

    def _load_admitted(self, info: WorkloadInfo) -> None:
        workload = info.workload
        admission = workload.admission
        info.cluster_queue = admission.cluster_queue
        info.holds_quota = info.held_before = True
        info.status = WorkloadStatus.RUNNING
        info.reason_code = QUOTA_RESERVED
        info.reason = f"Quota reserved in ClusterQueue {admission.cluster_queue}"
        for psa in admission.podsets:
            info.flavors[psa.name] = dict(psa.flavors)
            info.counts[psa.name] = psa.count
            for res, amount in psa.resource_usage.items():
                flavor = psa.flavors.get(res)
                if flavor is None or amount == 0:
                    continue
                fr = flavor_resource(flavor, res)
                info.usage[fr] = info.usage.get(fr, 0) + amount
        reserved = workload.quota_reserved_at or workload.created
        info.reserved_rank = (reserved.timestamp(), 0)
        node = self.nodes.get(admission.cluster_queue)
        if node is None:
            info.reason = (f"Quota reserved in ClusterQueue {admission.cluster_queue}, which does not "
                           "exist in the input; its usage is not counted")
            return
        node.add_all(info.usage)
        self._hold_placements(info)
        self.admitted[admission.cluster_queue][info.key] = info
        self.preemptor.track(info)
        info.borrowing = any(node.borrowing(fr) for fr in info.usage) if node.parent is not None else False

    def _hold_placements(self, info: WorkloadInfo) -> None:
        """A running Workload's pods sit where status.admission's topologyAssignment says (the
        TAS cache adds their usage to the leaves)."""
        placements = {}
        podsets = {ps.name: ps for ps in info.workload.podsets}
        for psa in info.workload.admission.podsets:
            flavor = next((f for f in psa.flavors.values() if self.tas.is_tas_flavor(f)), None)
            podset = podsets.get(psa.name)
            if psa.topology_assignment is None or flavor is None or podset is None:
                continue
            placements[psa.name] = PodSetPlacement(flavor, psa.topology_assignment, podset.per_pod)
        if placements:
            self.tas.add(placements)
            info.placements = placements

    def assigner(self, cq_name: str) -> FlavorAssigner:
        assigner = self._assigners.get(cq_name)
        if assigner is None:
            assigner = FlavorAssigner(self.state.cluster_queues[cq_name], self.nodes[cq_name],
                                      self.state.flavors, self.fair_sharing,
                                      self.config.quota_check_strategy == "IgnoreUndeclared", None)
            if self.tas.wanted:
                assigner.tas = self.tas
            self._assigners[cq_name] = assigner
        return assigner

    def _namespace_selected(self, cq_name: str, namespace: str) -> bool:
        selected = (cq_name, namespace)
        matches = self._selected.get(selected)
        if matches is None:  # namespaces and selectors do not change during a run
            matches = self._selected[selected] = label_selector_matches(
                self.state.cluster_queues[cq_name].namespace_selector, self.state.namespace_labels(namespace))
        return matches
