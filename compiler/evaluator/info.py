"""Runtime state of one workload during an evaluation (the engine's workload.Info)."""

from __future__ import annotations

from compiler.evaluator.models import FlavorResource, Workload
from compiler.evaluator.statuses import WorkloadStatus

# Each scheduling-equivalence class seen in this process, as a number: queues look classes up at
# every push and pop, and a number hashes at once where the class's nested tuple of pod-set
# shapes is hashed anew at every lookup. (One entry per distinct shape and priority.)
_CLASS_IDS: dict[tuple, int] = {}


# What of a workload is the engine's state (every field a later cycle reads or the result
# reports, changed by the run), declared here once: circles.fingerprint reads each of them (a run
# whose state repeats is in a circle; tests/evaluator/test_circles.py keeps the two in step). The
# other fields are the input, or answers worked out from the state (caches, the last assignment
# an explanation shows). A new field goes into one of the two.
STATE_FIELDS = ("cluster_queue", "usage", "flavors", "counts", "holds_quota", "reserved_rank", "status", "reason",
                "reason_code", "preempted_by", "borrowing", "last_tried", "tried_at", "sticky", "pending_victims",
                "placements")
DERIVED_FIELDS = ("workload", "held_before", "key", "uid", "_hash", "_order", "nomination", "reads", "explain",
                  "last_assignment")


class WorkloadInfo:
    """One workload as the engine tracks it (a plain class with slots, not a dataclass: a
    simulation makes one per job and reads its fields millions of times; the compiled engine
    makes it an extension type, see info.pxd). Identity is the workload: equality and hashing
    are the object's own."""

    __slots__ = ("workload", "cluster_queue", "usage", "flavors", "counts", "holds_quota", "held_before",
                 "reserved_rank", "status", "reason", "reason_code", "preempted_by", "borrowing",
                 "last_tried", "sticky", "explain", "last_assignment", "pending_victims", "_hash",
                 "_order", "nomination", "reads", "key", "uid", "tried_at", "placements")

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.cluster_queue: str | None = None
        # Holding quota: total usage per (flavor, resource), flavors and counts per pod set.
        self.usage: dict[FlavorResource, int] = {}
        self.flavors: dict[str, dict[str, str]] = {}
        self.counts: dict[str, int] = {}
        self.holds_quota = False
        self.held_before = False          # held quota in the input
        self.reserved_rank: tuple = (0.0, 0)  # quota reservation time; later = more recent
        self.status = WorkloadStatus.PENDING
        self.reason = ""
        self.reason_code = ""
        self.preempted_by: str | None = None
        self.borrowing = False
        self.last_tried: dict[tuple[int, str], int] | None = None
        # (scheduling cycle, ClusterQueue generation) when `last_tried` was recorded
        self.tried_at: tuple[int, int] = (0, 0)
        self.sticky = False               # waiting for its preemptions (BestEffortFIFO head)
        self.explain: list[str] = []
        self.last_assignment: object = None
        self.pending_victims: list[str] = []  # preemptions it issued, not yet admitted
        self._hash: int | None = None
        self._order: tuple | None = None
        # The last nomination (nomination_cache.Nomination) and the (flavor, resource) pairs a
        # nomination in its ClusterQueue can read: see CachedNominator._nominate_cached.
        self.nomination: object = None
        self.reads: tuple | None = None
        # "namespace/name", asked millions of times in a simulation: formatted once. The UID
        # orders candidates and heads (the key stands in for a workload without one).
        self.key: str = workload.key
        self.uid: str = workload.uid or self.key
        # Topology Aware Scheduling: pod set -> tas.PodSetPlacement of the pods it holds on nodes.
        self.placements: dict | None = None

    def __repr__(self) -> str:
        return f"WorkloadInfo({self.key}, {self.status}, cluster_queue={self.cluster_queue})"

    @property
    def priority(self) -> int:
        return self.workload.priority

    @property
    def scheduling_hash(self) -> int:
        """Kueue's scheduling equivalence class (SchedulingEquivalenceHashing, on by default
        since v0.18, computeSchedulingHash): priority and the shape of every pod set (its
        count, requests, SpecShape and topology request), numbered. Two workloads of one class
        get the same answer from the flavor assigner in the same cluster state."""
        cached = self._hash
        if cached is None:
            shape = (self.workload.priority, tuple(
                (ps.name, ps.count, ps.min_count, tuple(sorted(ps.per_pod.items())), ps.spec_shape, ps.topology)
                for ps in self.workload.podsets))
            cached = self._hash = _CLASS_IDS.setdefault(shape, len(_CLASS_IDS))
        return cached

    def queue_order(self) -> tuple:
        """Kueue's heap order: higher priority, then older creation, then UID (the workload
        does not change, so the key is built once)."""
        order = self._order
        if order is None:
            order = self._order = (-self.workload.priority, self.workload.created, self.uid, self.key)
        return order
