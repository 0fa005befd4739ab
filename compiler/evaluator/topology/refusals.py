"""Why a pod set cannot be placed, in a user's words: what it needs, what the roomiest domain
holds, and which nodes were left out and why (Kueue's notFitMessage says the same in counts)."""

from __future__ import annotations

from collections import Counter

from compiler.evaluator.topology.records import TopologyRequest
from compiler.evaluator.topology.tree import DomainTree
from compiler.core.quantity import format_units


def _level_name(level: str) -> str:
    """`example.com/rack` -> `rack`, `kubernetes.io/hostname` -> `host`."""
    short = level.rsplit("/", 1)[-1]
    return "host" if short == "hostname" else short


def _per_pod(request: TopologyRequest) -> str:
    parts = [f"{format_units(r, a)} {r}" for r, a in sorted(request.per_pod.items()) if a]
    return f" x {', '.join(parts)}" if parts else ""


def not_fit_message(tree: DomainTree, request: TopologyRequest, requested_level: int, slice_level: int,
                    excluded_for_pod_set: dict[str, str]) -> str:
    """After fillInCounts: the counts of the requested level's domains are what fits there."""
    if not tree.leaves:
        return f'topology "{tree.flavor.topology_name}" has no usable node{_exclusions(tree, excluded_for_pod_set)}'
    level = tree.levels[requested_level]
    domains = tree.domains_per_level[requested_level].values()
    if request.slices:
        size = request.slices[0].size
        unit = f"slices of {size} pods{_per_pod(request)} per {_level_name(tree.levels[slice_level])}"
        wanted, best = request.count // size, max(d.slice_count for d in domains)
    else:
        unit = f"pods{_per_pod(request)}"
        wanted, best = request.count, max(d.pod_count for d in domains)
    if request.required is not None:
        where = f"in one {_level_name(level)}; the roomiest {_level_name(level)} has room for {best}"
    else:
        total = sum(d.slice_count if request.slices else d.pod_count for d in domains)
        where = f"on topology \"{tree.flavor.topology_name}\"; it has room for {total}"
    return f"needs {wanted} {unit} {where}{_exclusions(tree, excluded_for_pod_set)}"


def _exclusions(tree: DomainTree, excluded_for_pod_set: dict[str, str]) -> str:
    reasons = Counter(tree.excluded.values()) + Counter(excluded_for_pod_set.values())
    if not reasons:
        return ""
    listed = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
    return f" (nodes left out: {listed})"


class ExclusionStats:
    """Kueue's tasExclusionStats: the leaves looked at, and those a pod set could not use by
    cause (FindFeasibleNodes' taint / nodeSelector / affinity, fillLeafCounts' resource)."""

    __slots__ = ("total_nodes", "node_selector", "affinity", "taints", "_short")

    def __init__(self) -> None:
        self.total_nodes = 0
        self.node_selector = 0
        self.affinity = 0
        self.taints: Counter = Counter()
        # The leaves where no pod fits, with the pod's requests: their limiting resources are
        # only counted when a message is written (most searches succeed and write none; the
        # leaves' free capacity does not change before the search that filled this answers).
        self._short: list[tuple[dict[str, int], dict[str, int]]] = []

    def record(self, why: str) -> None:
        """`why` as feasibility.node_infeasibility words it."""
        if why == "nodeSelector":
            self.node_selector += 1
        elif why == "node affinity":
            self.affinity += 1
        else:
            self.taints[why.removeprefix("taint ").strip('"')] += 1

    def record_resource(self, per_pod: dict[str, int], free: dict[str, int]) -> None:
        """A leaf where no pod fits (its limiting resource is counted by `resources`)."""
        self._short.append((per_pod, free))

    @property
    def resources(self) -> Counter:
        """The leaves where no pod fits, by limiting resource (CountInWithLimitingResource: the
        fewest pods, then the smallest name)."""
        limiting: Counter = Counter()
        for per_pod, free in self._short:
            counts = [(max(0, free.get(r, 0) // a) if a else 2**31 - 1, r) for r, a in per_pod.items()]
            if counts:
                limiting[min(counts)[1]] += 1
        return limiting

    def text(self) -> str:
        """formatReasons, after `. ` (empty without exclusions)."""
        reasons = []
        if self.node_selector:
            reasons.append(f"nodeSelector: {self.node_selector}")
        if self.affinity:
            reasons.append(f"affinity: {self.affinity}")
        reasons += [f"taint {_go_quote(taint)}: {n}" for taint, n in self.taints.items() if n]
        reasons += [f"resource {_go_quote(res)}: {n}" for res, n in self.resources.items() if n]
        if not reasons:
            return ""
        return f". Total nodes: {self.total_nodes}; excluded: {', '.join(sorted(reasons))}"


def _go_quote(text: str) -> str:
    """Go's %q for the label-like strings taints and resource names are made of."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def kueue_not_fit_message(tree: DomainTree, count: int, level: int, fit: int, wanted: int, slice_size: int,
                          slices: tuple, slice_size_at_level: dict[int, int], stats: ExclusionStats) -> str:
    """notFitMessage (or multiLayerNotFitMessage when inner slice layers constrain it)."""
    name = tree.flavor.topology_name
    if slice_size_at_level:
        text = f'topology "{name}" doesn\'t allow to fit'
        domains = tree.domains_per_level[level].values()
        if domains:
            best = min(domains, key=lambda d: (-d.slice_count, d.id))
            for layer in slices:
                if layer.level in tree.levels:
                    fits = _slices_in_subtree(best, level, tree.levels.index(layer.level), layer.size)
                    text += f"; {fits}/{count // layer.size} slice(s) fit on level {layer.level}"
        return text + stats.text()
    unit = "pod" if slice_size == 1 else "slice"
    if fit == 0:
        text = f'topology "{name}" doesn\'t allow to fit any of {wanted} {unit}(s)'
    else:
        text = f'topology "{name}" allows to fit only {fit} out of {wanted} {unit}(s)'
    return text + stats.text()


def names_placement_refusal(reason: str, topology_name: str) -> bool:
    """Whether a pending Workload's reason holds `kueue_not_fit_message`'s words for this
    topology (its pods fit the quota but not the nodes, or fit no way the nodes allow)."""
    subject = f'topology "{topology_name}" '
    return subject + "allows to fit only " in reason or subject + "doesn't allow to fit" in reason


def _slices_in_subtree(domain, level: int, target: int, size: int) -> int:
    """countSlicesInSubtree: whole slices of `size` pods in the domains of level `target` below."""
    if level == target:
        return domain.pod_count // size
    return sum(_slices_in_subtree(child, level + 1, target, size) for child in domain.children)
