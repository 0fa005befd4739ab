"""The engine as its callers use it: the run modes (run, run_moment, rescan) and the live API
simulate drives (submit, finish), over the scheduling cycle."""

from __future__ import annotations

from typing import Callable

from compiler.evaluator.circles import CircleFinder
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.models import Workload
from compiler.evaluator.scheduler import Scheduler
from compiler.evaluator.statuses import WorkloadStatus

class Engine(Scheduler):
    """Kueue's admission engine over a ClusterState (see docs/engine.md for its layers)."""

    def run(self, cycles: int | None = None, limit: int | None = None,
            after_cycle: Callable[["Engine"], None] | None = None, repeats: int | None = None,
            circles: bool | None = None) -> None:
        """N cycles, or until a cycle changes nothing. `after_cycle` sees the engine after each
        cycle (a command's progress line), and changes nothing.

        `repeats` (simulate): stop, not converged, once a cycle that changed who holds quota
        leaves the same set of workloads holding it for the `repeats`-th time. Kueue's own preemption can go round in a
        circle (a fair-sharing preemptor is preempted back by its victim's cohort): a live
        cluster churns on in real time, a simulation has to move on to its next event. Evaluate
        leaves it unset and runs to its cycle cap, as the oracle does; with `circles` a run that
        comes back to a state it was in gets the cap's state from the circle's period instead
        (circles.py; False runs every cycle, the reference for tests; None: as
        `layers.circles` says)."""
        if cycles is not None:
            for _ in range(cycles):
                self.run_cycle()
                if after_cycle is not None:
                    after_cycle(self)
            return
        # Every workload can be admitted, preempted and readmitted a few times; a cluster that is
        # still changing after that is cycling (preemption ping-pong) and we stop there.
        limit = limit if limit is not None else 8 * len(self.infos) + 100
        seen: dict[int, int] = {}
        holders = self.holders_print
        if circles is None:
            circles = self.layers.circles
        finder = CircleFinder(self) if circles and repeats is None else None
        self.circle_finder = finder
        start = self.cycle
        for done in range(1, limit + 1):
            changed = self.run_cycle()
            if after_cycle is not None:
                after_cycle(self)
            if not changed:
                return
            # Only a cycle that changed who holds quota counts: cycles that move a flavor scan
            # on, or set heads aside, lead somewhere new with the same holders.
            if repeats is not None and self.holders_print != holders:
                holders = self.holders_print
                seen[holders] = times = seen.get(holders, 0) + 1
                if times >= repeats:
                    break
            if finder is not None:
                period = finder.period()
                if period:
                    # The state repeats with this period up to the cap: the cap's state is the
                    # one (cycles left) mod period cycles on.
                    self.circle = (self.cycle - period, period)
                    for _ in range((limit - done) % period):
                        self.run_cycle()
                        if after_cycle is not None:
                            after_cycle(self)
                    self.cycle = start + limit
                    break
        self.converged = False

    def waiting_queues(self) -> set[str]:
        """The queues the next cycle visits (a queue found with an empty heap loses its
        sticky head there)."""
        return self._waiting

    def submit(self, workload: Workload) -> WorkloadInfo:
        """A new pending workload, as when a job is created: it enters its queue for the next run.
        (The requeues of jobs finished before it wait for that run too: whether it enters its
        queue's heap now, or the inadmissible set its class is in and then the heap with the
        rest of the set, the run finds the same heap. Done now, they would requeue every queue
        of the tree, and a moment's rescan could no longer leave the quiet ones as they are.)"""
        info = WorkloadInfo(workload)
        self.infos[workload.key] = info
        self._enqueue(info)
        return info

    def finish(self, key: str) -> None:
        """An admitted workload's job finished: its quota is released and, as on Kueue's
        workload-deletion event, the inadmissible workloads of its cohort tree are requeued.
        The workload leaves the engine (a finished job is not evaluated again)."""
        info = self.infos.pop(key)
        if not info.holds_quota:
            return
        node = self.nodes[info.cluster_queue]
        node.remove_all(info.usage)
        if info.placements is not None:
            # its pods leave their nodes too (Topology Aware Scheduling's cache forgets them)
            self.tas.add(info.placements, -1)
            info.placements = None
        self.generations[info.cluster_queue] = self.generations.get(info.cluster_queue, 0) + 1
        self.admitted[info.cluster_queue].pop(key, None)
        self.preemptor.untrack(info)
        info.holds_quota = False
        info.status = WorkloadStatus.FINISHED
        root = self._requeue_root(info)
        if root is not None:
            # Done when something next looks at the queues (a submission, a cycle), unless a
            # rescan, which requeues every queue, comes first: then it is work done twice.
            self._finished_roots.add(id(root))

    def run_moment(self, repeats: int | None = None) -> None:
        """A moment of a live cluster (simulate): `rescan`, then `run` to quiescence. A queue
        whose moment is provably the one it had last time is not walked again (see
        `_quiet_queues`); the engine ends in the state the walk would have left."""
        self.rescan(quiet=self.layers.quiet_queues)
        try:
            # (A moment has state of its own, the quiet queues' walk, that a circle's
            # fingerprint does not hold: simulate stops circles by `repeats` instead.)
            self.run(repeats=repeats, circles=False)
        finally:
            self._end_quiet()

    def _settle_admission_order(self) -> None:
        """The workloads admitted at the last moment, ordered among themselves by admission
        while it lasted (as `evaluate` orders what it admits), now have the moment's time only,
        as an export of the cluster shows them: ties broken by UID. Only when that changes
        their order are they tracked again (moving the commit versions a cached answer reads)."""
        admitted = [info for info in self._admitted_now if info.holds_quota and self.infos.get(info.key) is info]
        self._admitted_now.clear()
        by_admission = sorted(admitted, key=_latest_first)
        if [info.uid for info in by_admission] == sorted([info.uid for info in admitted]):
            return  # the same order either way (and one alone has no tie)
        for info in admitted:
            self.preemptor.untrack(info)
            info.reserved_rank = (info.reserved_rank[0], 0)
            self.preemptor.track(info)

    def rescan(self, quiet: bool = False) -> None:
        """Every pending workload gets a fresh look, as when Kueue starts on an export of this
        moment: the inadmissible ones are requeued and forget their flavor-scan position.
        `quiet` (run_moment): the quiet queues are left as they are until something wakes them."""
        self._finished_roots.clear()  # every queue is requeued here
        self._settle_admission_order()
        if quiet:
            self._quiet_queues()
        else:  # (none stays quiet, none is watched, and the snapshot stops logging commits)
            self._unquiet_all()
        self._moment_cycle = 0
        quiet_now = self._quiet
        for name in self._aside:
            if name in quiet_now:
                continue
            queue = self.queues[name]
            if queue.inadmissible or queue.bulk_moved:
                queue.requeue_inadmissible()
            queue.sticky = None
            queue.trail = []
        for name in self._waiting:
            if name not in quiet_now:
                self.queues[name].trail = []
        self._aside.clear()
        # (the quiet queues' heads keep theirs, in `_asleep`, until they wake)
        for info in self._scanned:
            if not info.holds_quota and self.infos.get(info.key) is info:
                info.last_tried = None
                info.sticky = False
        self._scanned.clear()


def _latest_first(info: WorkloadInfo) -> int:
    """Sort key: the later of two admissions in one moment first."""
    return -info.reserved_rank[1]
