"""Runtime state of one workload during an evaluation (the engine's workload.Info)."""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.evaluator.models import FlavorResource, Workload

# Each scheduling-equivalence class seen in this process, as a number: queues look classes up at
# every push and pop, and a number hashes at once where the class's nested tuple of pod-set
# shapes is hashed anew at every lookup. (One entry per distinct shape and priority.)
_CLASS_IDS: dict[tuple, int] = {}


@dataclass(eq=False)
class WorkloadInfo:
    workload: Workload
    cluster_queue: str | None = None
    # Holding quota: total usage per (flavor, resource), flavors and counts per pod set.
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    flavors: dict[str, dict[str, str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    holds_quota: bool = False
    held_before: bool = False          # held quota in the input
    reserved_rank: tuple = (0.0, 0)    # quota reservation time; later = more recent
    status: str = "pending"
    reason: str = ""
    reason_code: str = ""
    preempted_by: str | None = None
    borrowing: bool = False
    last_tried: dict[tuple[int, str], int] | None = None
    sticky: bool = False               # waiting for its preemptions (BestEffortFIFO head)
    explain: list[str] = field(default_factory=list)
    last_assignment: object = None
    pending_victims: list[str] = field(default_factory=list)  # preemptions it issued, not yet admitted
    _hash: int | None = field(default=None, repr=False)
    _order: tuple | None = field(default=None, repr=False)
    # The last nomination (queue, scan position, state reader, state, assignment, targets,
    # readings of a failure, the pairs the state is read from) and the (flavor, resource) pairs a nomination in its ClusterQueue
    # can read: see Engine._nominate_cached.
    nomination: tuple | None = None
    reads: tuple | None = None
    # "namespace/name", asked millions of times in a simulation: formatted once.
    key: str = field(init=False, repr=False, default="")

    def __post_init__(self) -> None:
        self.key = self.workload.key

    @property
    def priority(self) -> int:
        return self.workload.priority

    @property
    def uid(self) -> str:
        return self.workload.uid or self.workload.key

    @property
    def scheduling_hash(self) -> int:
        """Kueue's scheduling equivalence class (SchedulingEquivalenceHashing, on by default
        since v0.18): priority and the shape of every pod set, numbered. Two workloads of one
        class get the same answer from the flavor assigner in the same cluster state."""
        cached = self._hash
        if cached is None:
            shape = (self.workload.priority, tuple(
                (ps.name, ps.count, ps.min_count, tuple(sorted(ps.per_pod.items())),
                 tuple(sorted(ps.node_selector.items())), repr(ps.affinity_terms), repr(ps.tolerations))
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
