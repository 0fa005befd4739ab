"""The quota tree: ClusterQueues (leaves) and Cohorts (inner nodes), per (flavor, resource).

Mirrors Kueue's resource nodes: SubtreeQuota, localQuota (the part hidden from the parent by a
lendingLimit), usage that bubbles up only past a child's local part, and the derived
`available` / `potential_available`. Usage changes are incremental: adding or removing a
workload walks its ancestors once; cohort totals are never recomputed from scratch.
"""

from __future__ import annotations

from contextlib import contextmanager
from itertools import count
from typing import Iterable, Iterator

from compiler.evaluator.models import FlavorResource, ResourceQuota

_ZERO_QUOTA = ResourceQuota(0)
_NOTHING_TAKEN = (0,) * 64  # (QuotaNode.available: no cohort tree is that deep)
# Every usage change gives its node a version never handed out before, so one version of a
# node always means one usage of it: a cache keyed by it may be kept across edits that are
# undone (see `versions_kept`).
_VERSIONS = count(1)


class QuotaNode:
    __slots__ = ("name", "is_cq", "parent", "quotas", "subtree", "usage", "local",
                 "child_cqs", "child_cohorts", "weight", "_height", "_capacity", "version", "lendable",
                 "share", "stamp", "_by_name", "_plans", "_path")

    def __init__(self, name: str, is_cq: bool, quotas: dict[FlavorResource, ResourceQuota], weight) -> None:
        self.name = name
        self.is_cq = is_cq
        self.parent: QuotaNode | None = None
        self.quotas = quotas
        self.subtree: dict[FlavorResource, int] = {fr: q.nominal for fr, q in quotas.items()}
        self.usage: dict[FlavorResource, int] = {}
        self.local: dict[FlavorResource, int] = {}
        self.child_cqs: list[QuotaNode] = []
        self.child_cohorts: list[QuotaNode] = []
        self.weight = float(weight)  # fair sharing divides by it for every share it computes
        self._height: int | None = None
        self._capacity: dict[FlavorResource, int] = {}
        self.version = 0  # renewed (from _VERSIONS) whenever this node's usage changes
        # Bumped whenever the usage of this node or of any node below it changes: with a
        # lendingLimit a child's change may stop short of its parent, yet it changes what the
        # parent's fair-sharing tournament decides.
        self.stamp = 0
        self._by_name: tuple[list[QuotaNode], list[QuotaNode]] | None = None
        self.lendable: dict[str, int] | None = None  # fair sharing's per-resource total, cached
        self.share: dict = {}  # fair sharing's share of this node per version, a few kept
        # per pair, the fixed numbers `available` and `height_of_lowest_subtree_that_fits` read
        # along the path to the root (see `_plan`)
        self._plans: dict[FlavorResource, tuple] = {}
        self._path: list[QuotaNode] | None = None

    # -- structure ---------------------------------------------------------------------------
    def ancestors(self) -> Iterator["QuotaNode"]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def path_nodes(self) -> list["QuotaNode"]:
        """This node and its ancestors, the nodes a change of its usage can edit (the tree is
        fixed once built, so the list is made once)."""
        if self._path is None:
            self._path = [self, *self.ancestors()]
        return self._path

    def root(self) -> "QuotaNode":
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def path(self) -> str:
        names = [self.name] + [a.name for a in self.ancestors()]
        return "/" + "/".join(reversed(names))

    def height(self) -> int:
        if self._height is None:
            height = min(len(self.child_cqs) + len(self.child_cohorts), 1)
            for child in self.child_cohorts:
                height = max(height, child.height() + 1)
            self._height = height
        return self._height

    def children_by_name(self) -> tuple[list["QuotaNode"], list["QuotaNode"]]:
        """Child cohorts and child ClusterQueues, each in name order (the tree is fixed once
        built, so this is sorted once)."""
        if self._by_name is None:
            self._by_name = (sorted(self.child_cohorts, key=lambda n: n.name),
                             sorted(self.child_cqs, key=lambda n: n.name))
        return self._by_name

    def subtree_nodes(self) -> Iterator["QuotaNode"]:
        yield self
        yield from self.child_cqs
        for child in self.child_cohorts:
            yield from child.subtree_nodes()

    def subtree_cqs(self) -> Iterator["QuotaNode"]:
        yield from self.child_cqs
        for child in self.child_cohorts:
            yield from child.subtree_cqs()

    def finalize(self) -> None:
        """Compute SubtreeQuota and localQuota bottom-up (once, when the tree is built)."""
        for child in self.child_cohorts:
            child.finalize()
        for child in self.child_cohorts + self.child_cqs:
            child._compute_local()
            for fr, quota in child.subtree.items():
                self.subtree[fr] = self.subtree.get(fr, 0) + quota - child.local.get(fr, 0)

    def _compute_local(self) -> None:
        for fr, quota in self.quotas.items():
            if quota.lending_limit is not None:
                self.local[fr] = max(0, self.subtree.get(fr, 0) - quota.lending_limit)

    def quota(self, fr: FlavorResource) -> ResourceQuota:
        return self.quotas.get(fr, _ZERO_QUOTA)

    # -- derived quantities ------------------------------------------------------------------
    def local_available(self, fr: FlavorResource) -> int:
        return max(0, self.local.get(fr, 0) - self.usage.get(fr, 0))

    def available(self, fr: FlavorResource, taken: tuple[int, ...] = _NOTHING_TAKEN) -> int:
        """What this node could still use of fr: its own unlent part plus what its parent
        can give, capped by its borrowingLimit (computed root first, without recursion).
        `taken`: the amounts of fr to count as taken off the usage of the nodes from the root
        down to this one (`available_without`); none by default."""
        root_usage, root_total, steps, _ = self._plan(fr)
        available = root_total - root_usage.get(fr, 0) + taken[0]
        for depth, (usage, local, cap, _, _, _) in enumerate(steps, 1):
            used = usage.get(fr, 0) - taken[depth]
            if cap is not None:
                # subtree - local - max(0, used - local) + borrowingLimit
                capped = cap - (used - local if used > local else 0)
                if capped < available:
                    available = capped
            if local > used:
                available += local - used
        return available if available > 0 else 0

    def available_without(self, fr: FlavorResource, value: int) -> int:
        """`available(fr)` once `value` of fr, which this node holds, is taken off (what
        remove_all then available would answer), without editing the tree: each node up from
        this one loses what it would pass up, as `_remove_usage` walks."""
        taken: list[int] = []  # this node first
        node: QuotaNode | None = self
        while node is not None and value > 0:
            taken.append(value)
            used = node.usage.get(fr, 0)
            stored_in_parent = used - node.local.get(fr, 0) if node.local else used
            if stored_in_parent <= 0:
                break
            if value > stored_in_parent:
                value = stored_in_parent
            node = node.parent
        depth = len(self.path_nodes())
        taken += [0] * (depth - len(taken))
        taken.reverse()
        return self.available(fr, tuple(taken))

    def _plan(self, fr: FlavorResource) -> tuple:
        """The quota walks of one pair read, at every node from the root down to this one,
        numbers fixed once the tree is built (SubtreeQuota, localQuota, borrowingLimit, height)
        and one that changes (usage): the fixed ones are gathered once per pair, beside the
        usage dicts themselves, which the walks then read in place. Returns (root usage, root
        SubtreeQuota, steps root-side first below the root, the same steps leaf first), a step
        being (usage, local, SubtreeQuota - local + borrowingLimit or None, SubtreeQuota,
        height, has a parent)."""
        plan = self._plans.get(fr)
        if plan is None:
            chain = []
            node = self
            while node.parent is not None:
                chain.append(node)
                node = node.parent
            steps = []
            for step in reversed(chain):
                subtree = step.subtree.get(fr, 0)
                local = step.local.get(fr, 0)
                quota = step.quotas.get(fr)
                cap = None
                if quota is not None and quota.borrowing_limit is not None:
                    cap = subtree - local + quota.borrowing_limit
                steps.append((step.usage, local, cap, subtree, step.height(), True))
            root_total = node.subtree.get(fr, 0)
            leaf_first = steps[::-1] + [(node.usage, 0, None, root_total, node.height(), False)]
            plan = self._plans[fr] = (node.usage, root_total, tuple(steps), tuple(leaf_first))
        return plan

    def potential_available(self, fr: FlavorResource) -> int:
        if self.parent is None:
            return self.subtree.get(fr, 0)
        value = self.local.get(fr, 0) + self.parent.potential_available(fr)
        quota = self.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            value = min(self.subtree.get(fr, 0) + quota.borrowing_limit, value)
        return value

    def max_capacity(self, fr: FlavorResource) -> int:
        """potential_available, cached: it depends on quotas only, never on usage."""
        value = self._capacity.get(fr)
        if value is None:
            value = self._capacity[fr] = self.potential_available(fr)
        return value

    def borrowing_with(self, fr: FlavorResource, value: int) -> bool:
        return self.subtree.get(fr, 0) < self.usage.get(fr, 0) + value

    def borrowing(self, fr: FlavorResource) -> bool:
        return self.borrowing_with(fr, 0)

    def within_nominal(self, frs) -> bool:
        usage = self.usage
        subtree = self.subtree
        for fr in frs:
            if subtree.get(fr, 0) < usage.get(fr, 0):
                return False
        return True

    # -- usage -------------------------------------------------------------------------------
    def _add_usage(self, fr: FlavorResource, value: int) -> None:
        # Each node keeps the part its lendingLimit hides from the parent (local) and passes
        # the rest up; without a local part (the common case) everything bubbles to the root.
        node: QuotaNode | None = self
        while node is not None and value > 0:
            usage = node.usage
            used = usage.get(fr, 0)
            usage[fr] = used + value
            node.version = next(_VERSIONS)
            if node.parent is None:
                return
            if node.local:
                local_available = node.local.get(fr, 0) - used
                if local_available > 0:
                    if value <= local_available:
                        return
                    value -= local_available
            node = node.parent

    def _remove_usage(self, fr: FlavorResource, value: int) -> None:
        node: QuotaNode | None = self
        while node is not None and value > 0:
            usage = node.usage
            used = usage.get(fr, 0)
            stored_in_parent = used - node.local.get(fr, 0) if node.local else used
            usage[fr] = used - value
            node.version = next(_VERSIONS)
            if stored_in_parent <= 0 or node.parent is None:
                return
            if value > stored_in_parent:
                value = stored_in_parent
            node = node.parent

    def add_all(self, usage: dict[FlavorResource, int]) -> None:
        for fr, value in usage.items():
            self._add_usage(fr, value)
        self._touch()

    def remove_all(self, usage: dict[FlavorResource, int]) -> None:
        for fr, value in usage.items():
            self._remove_usage(fr, value)
        self._touch()

    def _touch(self) -> None:
        node: QuotaNode | None = self
        while node is not None:
            node.stamp += 1
            node = node.parent


@contextmanager
def versions_kept(nodes: Iterable[QuotaNode]):
    """For edits that leave each of `nodes` with the usage it had (simulated evictions that
    are undone): on leaving, the nodes get their versions back, so what was computed from
    their usage before stays valid. Only nodes in `nodes` may be edited, and on an exception
    the versions stay new."""
    saved = [(node, node.version) for node in nodes]
    yield
    for node, version in saved:
        node.version = version


def quantities_fit_in_quota(node: QuotaNode, requests: dict[FlavorResource, int]):
    fits = True
    remaining = {}
    for fr, value in requests.items():
        if node.subtree.get(fr, 0) < node.usage.get(fr, 0) + value:
            fits = False
        remaining[fr] = max(0, value - node.local_available(fr))
    return fits, remaining


def height_of_lowest_subtree_that_fits(cq: QuotaNode, fr: FlavorResource, value: int) -> tuple[int, bool]:
    """Borrowing level of a request (0 = within the CQ's nominal), and whether it fits in a
    non-root subtree (so reclaiming inside the hierarchy could help)."""
    # The scheduler asks this for every flavor it tries and every failed nomination it
    # re-checks: the walk reads the pair's fixed numbers from the queue's plan.
    if cq.parent is None:
        return 0, False
    steps = cq._plan(fr)[3]
    usage, local, _, subtree, _, _ = steps[0]
    used = usage.get(fr, 0)
    if subtree >= used + value:
        return 0, True
    remaining = value - (local - used if local > used else 0)
    for index in range(1, len(steps)):
        usage, local, _, subtree, height, has_parent = steps[index]
        used = usage.get(fr, 0)
        if subtree >= used + remaining:
            return height, has_parent
        if local > used:
            remaining -= local - used
    return steps[-1][4], False  # the root
