"""Flavor assignment: which ResourceFlavor each pod set's resources get in one ClusterQueue.

Follows Kueue's flavorassigner: resource groups, flavors in listed order, structural checks
(taints, node labels vs nodeSelector/affinity), quota checks against `available` and
`potential_available`, the preemption oracle, flavorFungibility and the preference order.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

from compiler.evaluator.models import ClusterQueue, FlavorResource, PodSet, ResourceFlavor, flavor_resource
from compiler.core.quantity import format_units
from compiler.evaluator.selectors import requirement_matches
from compiler.evaluator.statuses import ReadingKind
from compiler.evaluator.tree import QuotaNode, height_of_lowest_subtree_that_fits
from compiler.evaluator.tas_step import place_pods

# Preemption modes, worst to best (Kueue's preemptionMode order).
NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)
MODE_NAMES = {NO_FIT: "NoFit", NO_CANDIDATES: "Preempt", PREEMPT: "Preempt", RECLAIM: "Preempt", FIT: "Fit"}
# Assignment modes (Kueue's FlavorAssignmentMode).
A_NO_FIT, A_PREEMPT, A_FIT = "NoFit", "Preempt", "Fit"
WORST_BORROW = 1 << 30

NO_MATCHING_FLAVOR = "NoMatchingFlavor"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
WAITING_FOR_QUOTA = "WaitingForQuota"
PENDING = "Pending"
TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"
_SEVERITY = {"": 0, TOPOLOGY_PLACEMENT_FAILED: 1, WAITING_FOR_QUOTA: 2, EXCEEDS_MAX_QUOTA: 3, NO_MATCHING_FLAVOR: 4}


# Quota messages repeat the same few amounts in every nomination; formatting one is a Fraction
# and a suffix search, so each (resource, amount) is formatted once.
_units = lru_cache(maxsize=65536)(format_units)


@lru_cache(maxsize=None)  # a pure function of a resource name, asked for every pod set tried
def _fnv64a(text: str) -> int:
    value = 0xcbf29ce484222325
    for byte in text.encode():
        value = ((value ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return value


def kueue_resource_order(names) -> list[str]:
    """A pod set's resources in the order Kueue v0.19 visits them: its requests are a slice
    sorted by the FNV-64a hash of the resource name, then the name (VectorizedResourceRequests,
    on by default). The first resource that fails decides the reason."""
    return sorted(names, key=lambda name: (_fnv64a(name), name))


def most_severe(a: str, b: str) -> str:
    return a if _SEVERITY.get(a, 0) >= _SEVERITY.get(b, 0) else b


def assignment_mode(mode: int) -> str:
    if mode == NO_FIT:
        return A_NO_FIT
    if mode == FIT:
        return A_FIT
    return A_PREEMPT


def is_preferred(a: tuple[int, int], b: tuple[int, int], preference: str | None) -> bool:
    """True if granular mode a=(preemption mode, borrowing level) is better than b."""
    if a[0] == NO_FIT:
        return False
    if b[0] == NO_FIT:
        return True
    a_none, b_none = a[0] == NO_CANDIDATES, b[0] == NO_CANDIDATES
    if a_none != b_none:
        return not a_none
    if preference == "PreemptionOverBorrowing":
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def unused_quota_message(fr: FlavorResource, value: int, available: int) -> str:
    """Why a request of `value` does not fit in the `available` unused quota of `fr`."""
    return (f"insufficient unused quota for {fr[1]} in flavor {fr[0]}, "
            f"{_units(fr[1], value - available)} more needed")


def restated(assignment: "Assignment", messages: dict[str, str]) -> "Assignment":
    """`assignment` with some quota messages replaced (old -> new): the same flavor
    assignment, reached by the same path, where unused amounts differ."""
    podsets = []
    for ps in assignment.podsets:
        copy = ps.copy()
        copy.reasons = [messages.get(reason, reason) for reason in ps.reasons]
        copy.attempts = [FlavorAttempt(a.flavor, a.mode, a.borrow, [messages.get(r, r) for r in a.reasons],
                                       a.no_fit_reason) for a in ps.attempts]
        podsets.append(copy)
    whole = assignment.copy()
    whole.podsets = podsets
    whole._message = None
    return whole


# The records below are plain classes with slots, not dataclasses: a simulation builds them by
# the hundred thousand and reads their fields millions of times, and the compiled engine makes
# them extension types (assigner.pxd) whose fields are C struct members.

class FlavorAttempt:
    """One flavor tried for one resource group of a pod set (for --explain)."""

    __slots__ = ("flavor", "mode", "borrow", "reasons", "no_fit_reason")

    def __init__(self, flavor: str, mode: str, borrow: int, reasons: list[str], no_fit_reason: str) -> None:
        self.flavor = flavor
        self.mode = mode
        self.borrow = borrow
        self.reasons = reasons
        self.no_fit_reason = no_fit_reason

    def __repr__(self) -> str:
        return (f"FlavorAttempt({self.flavor!r}, {self.mode!r}, borrow={self.borrow}, reasons={self.reasons!r}, "
                f"no_fit_reason={self.no_fit_reason!r})")


class PodSetAssignment:
    __slots__ = ("name", "count", "requests", "flavors", "reasons", "error", "attempts", "tried_index")

    def __init__(self, name: str, count: int, requests: dict[str, int]) -> None:
        self.name = name
        self.count = count
        self.requests = requests
        self.flavors: dict[str, tuple[str, str, int]] = {}  # res -> (flavor, mode, borrow)
        self.reasons: list[str] = []
        self.error: str | None = None
        self.attempts: list[FlavorAttempt] = []
        self.tried_index: dict[str, int] = {}

    def copy(self) -> "PodSetAssignment":
        """A copy sharing the field values (replace a field, never edit it in place)."""
        copy = PodSetAssignment(self.name, self.count, self.requests)
        copy.flavors, copy.reasons, copy.error = self.flavors, self.reasons, self.error
        copy.attempts, copy.tried_index = self.attempts, self.tried_index
        return copy

    def __repr__(self) -> str:
        return (f"PodSetAssignment({self.name!r}, count={self.count}, flavors={self.flavors!r}, "
                f"reasons={self.reasons!r}, error={self.error!r})")

    @property
    def mode(self) -> str:
        # Kueue's PodSetAssignment.RepresentativeMode
        if self.error is None and not self.reasons:
            return A_FIT
        if self.error is not None or not self.flavors:
            return A_NO_FIT
        worst = A_FIT
        for _, mode, _ in self.flavors.values():
            if mode == A_NO_FIT:
                return A_NO_FIT
            if mode == A_PREEMPT:
                worst = A_PREEMPT
        return worst

    def is_fit(self) -> bool:
        return self.error is None and not self.reasons

    def message(self) -> str:
        if self.error is not None:
            return self.error
        return ", ".join(sorted(self.reasons))


class Assignment:
    __slots__ = ("podsets", "usage", "borrowing", "no_fit_reason", "mode", "_message", "scan_position",
                 "placements")

    def __init__(self) -> None:
        self.podsets: list[PodSetAssignment] = []
        self.usage: dict[FlavorResource, int] = {}
        self.borrowing = 0
        self.no_fit_reason = ""
        self.mode = A_NO_FIT
        # A finished assignment is not changed again, and a reused nomination asks for its
        # message at every cycle: it is composed once.
        self._message: str | None = None
        # Where a failed flavor scan stopped, (pod set, resource) -> flavor index (the
        # scheduler's FlavorFungibilityPreserveScanProgress record), kept like the message.
        self.scan_position: dict | None = None
        # Topology Aware Scheduling: pod set -> tas.PodSetPlacement, when its pods were placed.
        self.placements: dict | None = None

    def copy(self) -> "Assignment":
        """A copy sharing the field values (replace a field, never edit it in place)."""
        copy = Assignment()
        copy.podsets, copy.usage, copy.borrowing = self.podsets, self.usage, self.borrowing
        copy.no_fit_reason, copy.mode = self.no_fit_reason, self.mode
        copy._message, copy.scan_position = self._message, self.scan_position
        copy.placements = self.placements
        return copy

    def __repr__(self) -> str:
        return f"Assignment({self.mode}, borrowing={self.borrowing}, usage={self.usage!r}, podsets={self.podsets!r})"

    def message(self) -> str:
        if self._message is None:
            self._message = self._compose_message()
        return self._message

    def _compose_message(self) -> str:
        parts = []
        for ps in self.podsets:
            if ps.is_fit():
                continue
            if ps.error is not None:
                return f"failed to assign flavors to pod set {ps.name}: {ps.error}"
            parts.append(f"couldn't assign flavors to pod set {ps.name}: {ps.message()}")
        return "; ".join(parts)

    def preemption_request(self, podsets: list) -> dict[FlavorResource, int]:
        """Assignment.TotalRequestsFor: the quota Kueue's preemption makes room for. Kueue reads
        the assignment's pod sets by the workload's pod-set index, while the assignment lists a
        pod-set group's members together: where a group's members are not adjacent in the
        workload, pod set i is counted with the count and flavors of the assignment's i-th entry
        (v0.19.2 does so). The `pods` a queue may cover are not part of it (only the assigner's
        copy of the requests has them)."""
        usage: dict[FlavorResource, int] = {}
        for index, podset in enumerate(podsets):
            if index >= len(self.podsets):
                break
            entry = self.podsets[index]
            for res, quantity in podset.total(entry.count).items():
                chosen = entry.flavors.get(res)
                if quantity == 0 or chosen is None:
                    continue
                fr = flavor_resource(chosen[0], res)
                usage[fr] = usage.get(fr, 0) + quantity
        return usage

    def frs_needing_preemption(self) -> set[FlavorResource]:
        out = set()
        for ps in self.podsets:
            for res, (flavor, mode, _) in ps.flavors.items():
                if mode == A_PREEMPT:
                    out.add(flavor_resource(flavor, res))
        return out


_UNSET = object()
# Kinds of reading an assignment records (FlavorAssigner.readings): the quota tree's answer
# for a request (borrowing height, may reclaim, available) and the preemption oracle's.
QUOTA_READING, ORACLE_READING = ReadingKind.QUOTA, ReadingKind.ORACLE

# oracle(fr, quantity) -> (mode in {NO_CANDIDATES, PREEMPT, RECLAIM}, borrowing level after)
Oracle = Callable[[FlavorResource, int], tuple[int, int]]


def _tolerates(toleration: dict, taint: dict) -> bool:
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    operator = toleration.get("operator", "Equal")
    key = toleration.get("key")
    if not key:
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return str(toleration.get("value", "")) == str(taint.get("value", ""))


def _taint_text(taint: dict) -> str:
    # corev1.Taint.ToString: key=value:Effect, or key:Effect when the value is empty.
    key, value, effect = taint.get("key", ""), taint.get("value", ""), taint.get("effect", "")
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def flavor_problem(flavor_name: str, flavor: ResourceFlavor | None, podset: PodSet) -> str | None:
    """Why the pod set cannot use this flavor at all (Kueue's checkFlavorForPodSets)."""
    if flavor is None:
        return f"flavor {flavor_name} not found"
    tolerations = podset.tolerations + flavor.tolerations
    for taint in flavor.node_taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return f"untolerated taint {_taint_text(taint)} in flavor {flavor_name}"
    keys = flavor.node_labels
    for key, value in podset.node_selector.items():
        if key in keys and keys[key] != value:
            return f"flavor {flavor_name} doesn't match node affinity"
    if podset.affinity_terms:
        terms = []
        for term in podset.affinity_terms:
            # (a key that is not a string is refused by the API server: it selects nothing here)
            kept = [e for e in term if isinstance(e, dict) and isinstance(e.get("key"), str) and e["key"] in keys]
            if not kept:
                terms = []  # a term with no relevant key matches every flavor
                break
            terms.append(kept)
        if terms and not any(all(requirement_matches(e, keys, numeric=True) for e in term) for term in terms):
            return f"flavor {flavor_name} doesn't match node affinity"
    return None


def _nominated(pinned: dict[str, dict[str, str]], members, flavor: str, res: str) -> bool:
    """shouldSkipBasedOnNominationMapping, negated: one of the pod sets was nominated with this
    flavor for this resource."""
    for member in members:
        if pinned.get(member.name, {}).get(res) == flavor:
            return True
    return False


def nomination_mapping(assignment: "Assignment") -> dict[str, dict[str, str]]:
    """readResourceToFlavorMapping: pod set -> resource -> the flavor of this assignment."""
    return {ps.name: {res: chosen[0] for res, chosen in ps.flavors.items()} for ps in assignment.podsets}


def _pod_set_units(podsets: list[PodSet]) -> list[list[int]]:
    """The pod sets' indices grouped as Kueue's assignFlavors groups them: the pod sets of one
    podset-group-name together, every other pod set alone, in the order each first appears."""
    units: dict[object, list[int]] = {}
    for index, podset in enumerate(podsets):
        group = podset.topology.group if podset.topology is not None else None
        units.setdefault(("group", group) if group is not None else index, []).append(index)
    return list(units.values())


class FlavorAssigner:
    """Chooses a flavor for every resource of every pod set of a workload in one ClusterQueue.

    Why it works this way: Kueue decides per resource group, not per resource, so all the
    resources a group covers get the same flavor, and the flavors are tried in the order the
    queue lists them. A flavor is judged first on the pods alone (taints, node labels; decided
    once per pod set and flavor since neither changes), then on quota: it fits, it would have to
    borrow (and at which level of the cohort tree), it could fit only by preempting (the
    `oracle` asks the preemption strategy whether candidates exist and how much borrowing is
    left afterwards), or it cannot fit at all. flavorFungibility says whether a flavor that
    needs borrowing or preemption is taken or the next one tried, and the best one seen wins
    by Kueue's preference order. Scan progress (`last_tried`) lets a workload that failed
    resume after the last flavor it tried, as Kueue's FlavorFungibilityPreserveScanProgress.
    `read_usage` records whether an answer looked at usage at all: one that did not depends on
    the workload and the static quotas only, and the scheduler reuses it. `readings`, when a
    list, receives every answer read off the quota tree and the oracle, in order: the answer
    is a function of the workload, its scan position, the static quotas and those readings, so
    while each reading gives the same value again, so does the assignment."""

    def __init__(self, cq: ClusterQueue, node: QuotaNode, flavors: dict[str, ResourceFlavor],
                 fair_sharing: bool, ignore_undeclared: bool, oracle: Oracle) -> None:
        self.cq = cq
        self.node = node
        self.flavors = flavors
        self.fair_sharing = fair_sharing
        self.ignore_undeclared = ignore_undeclared
        self.oracle = oracle
        # Set when an assignment read the quota tree's usage (or asked the oracle): a result
        # that never did depends on the workload and the static quotas only, and can be reused.
        self.read_usage = False
        self.readings: list[tuple] | None = None
        # Topology Aware Scheduling (tas.TasState), None when the input has no TAS flavor and no
        # pod set asks for a topology; `read_placement` is set when an answer read the nodes.
        self.tas = None
        self.read_placement = False
        self._problems: dict[tuple[int, str], str | None] = {}
        # Kueue's NominationMapping: while a nomination is assigned again within its cycle
        # (updateAssignmentIfNeeded), pod set -> resource -> the flavor it was nominated with;
        # other flavors are skipped, so the new assignment cannot switch flavors. None otherwise.
        self.pinned: dict[str, dict[str, str]] | None = None
        self.group_of: dict[str, int] = {}
        # flavor -> resource -> the shared pair tuple (models.flavor_resource), for the pairs
        # an assignment reads: found by two string lookups instead of a tuple built per reading.
        self.pairs: dict[str, dict[str, FlavorResource]] = {}
        for index, group in enumerate(cq.resource_groups):
            for res in group.covered_resources:
                self.group_of.setdefault(res, index)
            for flavor in group.flavors:
                for res in group.covered_resources:
                    self.pairs.setdefault(flavor, {})[res] = flavor_resource(flavor, res)

    def assign(self, podsets: list[PodSet], counts: list[int] | None = None,
               last_tried: dict[tuple[int, str], int] | None = None) -> Assignment:
        assignment = Assignment()
        covers_pods = "pods" in self.group_of
        for unit in _pod_set_units(podsets):
            # A pod-set group (podset-group-name) gets one flavor for the sum of its pod sets'
            # requests, and shares its status (Kueue's groupedRequests in assignFlavors).
            index = unit[0]
            members = [podsets[i] for i in unit]
            member_requests = []
            requests: dict[str, int] = {}
            for i in unit:
                count = podsets[i].count if counts is None else counts[i]
                own = podsets[i].total(count)
                if covers_pods:
                    own["pods"] = count
                member_requests.append((podsets[i].name, count, own))
                for res, quantity in own.items():
                    requests[res] = requests.get(res, 0) + quantity
            podset = members[0] if len(members) == 1 else tuple(members)
            psa = PodSetAssignment(members[0].name, member_requests[0][1], requests)
            group_flavors: dict[str, tuple[str, str, int]] | None = {}
            failed_status: tuple[list[str], str | None] | None = None
            reasons: list[str] = []
            order = kueue_resource_order(requests)
            for res in order:
                quantity = requests[res]
                if res not in self.group_of:
                    if quantity == 0 or self.ignore_undeclared:
                        continue
                if res in group_flavors:
                    continue
                flavors, status_reasons, fit, attempts, tried = self._find_flavor(
                    index, podset, requests, order, res, assignment.usage, last_tried)
                psa.attempts.extend(attempts)
                if not flavors:
                    failed_status = (status_reasons, None)
                    group_flavors = None
                    break
                group_flavors.update(flavors)
                for r in flavors:
                    psa.tried_index[r] = tried
                if not fit:
                    reasons.extend(status_reasons)
            failed = False
            for name, count, own in member_requests:
                member = psa if len(member_requests) == 1 else PodSetAssignment(name, count, own)
                member.requests = own
                member.attempts = psa.attempts
                member.tried_index = psa.tried_index
                if group_flavors is None:
                    member.reasons = failed_status[0]
                    member.flavors = {}
                else:
                    member.flavors = {r: f for r, f in group_flavors.items() if r in own}
                    member.reasons = reasons
                assignment.podsets.append(member)
                for res, (flavor, _, borrow) in member.flavors.items():
                    assignment.borrowing = max(assignment.borrowing, borrow)
                    fr = self.pairs[flavor][res]
                    assignment.usage[fr] = assignment.usage.get(fr, 0) + own.get(res, 0)
                failed = failed or member.mode == A_NO_FIT
            if failed:
                break
        modes = [ps.mode for ps in assignment.podsets]
        if not modes or A_NO_FIT in modes:
            assignment.mode = A_NO_FIT
        elif A_PREEMPT in modes:
            assignment.mode = A_PREEMPT
        else:
            assignment.mode = A_FIT
        if assignment.mode != A_NO_FIT and self.tas is not None:
            place_pods(self, assignment, podsets)
        if assignment.mode == A_NO_FIT:
            assignment.no_fit_reason = self._no_fit_reason(assignment)
        return assignment

    def _no_fit_reason(self, assignment: Assignment) -> str:
        overall = ""
        for ps in assignment.podsets:
            if ps.mode != A_NO_FIT:
                continue
            # A resource no group covers is not a flavor attempt in Kueue (it records none)
            attempts = [a for a in ps.attempts if a.flavor]
            no_fit = [a for a in attempts if a.mode == A_NO_FIT]
            if not attempts:
                overall = most_severe(overall, NO_MATCHING_FLAVOR)
                continue
            # within a resource group the least severe flavor wins; across groups the most severe
            per_group: dict[int, str] = {}
            for attempt in no_fit:
                group = next((i for i, g in enumerate(self.cq.resource_groups) if attempt.flavor in g.flavors), -1)
                current = per_group.get(group)
                reason = attempt.no_fit_reason
                if current is None or _SEVERITY.get(reason, 0) < _SEVERITY.get(current, 0):
                    per_group[group] = reason
            for reason in per_group.values():
                overall = most_severe(overall, reason)
        # Flavors that fit one resource and none that failed (a later resource no group covers):
        # Kueue has no reason and falls back to "Pending" (UnadmittedWorkloadReasonWithFallback).
        return overall or PENDING

    def _find_flavor(self, ps_index: int, podset: PodSet, requests: dict[str, int], order: list[str], res: str,
                     assumed: dict[FlavorResource, int], last_tried):
        group_index = self.group_of.get(res)
        if group_index is None:
            attempt = FlavorAttempt("", A_NO_FIT, 0, [f"resource {res} unavailable in ClusterQueue"],
                                    NO_MATCHING_FLAVOR)
            return None, [f"resource {res} unavailable in ClusterQueue"], False, [attempt], -1
        group = self.cq.resource_groups[group_index]
        covered = [r for r in order if r in group.covered_resources]  # `order`: kueue_resource_order(requests)
        reasons: list[str] = []
        attempts: list[FlavorAttempt] = []
        best: dict | None = None
        best_mode = (NO_FIT, WORST_BORROW)
        fung = self.cq.fungibility
        start = 0
        if last_tried is not None:
            start = last_tried.get((ps_index, res), -1) + 1
        attempted = -1
        for idx in range(start, len(group.flavors)):
            attempted = idx
            fname = group.flavors[idx]
            grouped = isinstance(podset, tuple)  # a pod-set group's members (checkFlavorForPodSets)
            if self.pinned is not None and not _nominated(self.pinned, podset if grouped else (podset,), fname, res):
                reasons.append(f"skipping flavor {fname} as it is not found in the nomination mapping for "
                               f"resource {res}")
                continue
            cache_key = (tuple(map(id, podset)) if grouped else id(podset), fname)
            problem = self._problems.get(cache_key, _UNSET)
            if problem is _UNSET:
                # pod placement and flavors are static, so this is decided once per pair
                flavor = self.flavors.get(fname)
                problem = None
                for member in podset if grouped else (podset,):
                    if self.tas is not None and flavor is not None:
                        problem = self.tas.flavor_problem(self.cq, member, flavor, group.covered_resources)
                    if problem is None:
                        problem = flavor_problem(fname, flavor, member)
                    if problem is not None:
                        break
                self._problems[cache_key] = problem
            if problem is not None:
                reasons.append(problem)
                attempts.append(FlavorAttempt(fname, A_NO_FIT, 0, [problem], NO_MATCHING_FLAVOR))
                continue
            chosen: dict[str, tuple[str, str, int]] = {}
            rep = (FIT, 0)
            max_borrow = 0
            flavor_reasons: list[str] = []
            flavor_no_fit = ""
            pairs = self.pairs[fname]
            for r in covered:
                fr = pairs[r]
                mode, borrow, status, no_fit = self._fits_quota(fr, assumed.get(fr, 0), requests[r])
                if status:
                    flavor_reasons.append(status)
                    reasons.append(status)
                    flavor_no_fit = most_severe(flavor_no_fit, no_fit)
                max_borrow = max(max_borrow, borrow)
                granular = (mode, borrow)
                if is_preferred(rep, granular, fung.preference):
                    rep = granular
                if rep[0] == NO_FIT:
                    continue
                chosen[r] = (fname, assignment_mode(mode), borrow)
            attempts.append(FlavorAttempt(fname, MODE_NAMES[rep[0]] if rep[0] != NO_CANDIDATES else "Preempt",
                                          max_borrow, flavor_reasons, flavor_no_fit if rep[0] == NO_FIT else ""))
            if not self._try_next(rep):
                best, best_mode = chosen, rep
                break
            if is_preferred(rep, best_mode, fung.preference):
                best, best_mode = chosen, rep
        tried = -1 if attempted == len(group.flavors) - 1 else attempted
        if best_mode[0] == FIT:
            return best, [], True, attempts, tried
        return best, reasons, False, attempts, tried

    def _try_next(self, mode: tuple[int, int]) -> bool:
        fung = self.cq.fungibility
        if mode[0] in (NO_FIT, NO_CANDIDATES):
            return True
        if mode[0] in (PREEMPT, RECLAIM) and fung.when_can_preempt == "TryNextFlavor":
            return True
        if mode[1] > 0 and fung.when_can_borrow == "TryNextFlavor":
            return True
        return False

    def _fits_quota(self, fr: FlavorResource, assumed: int, request: int):
        node = self.node
        capacity = node.max_capacity(fr)
        value = assumed + request
        res, flavor = fr[1], fr[0]
        if value > capacity:
            return NO_FIT, 0, (
                f"insufficient quota for {res} in flavor {flavor}, previously considered podsets requests "
                f"({_units(res, assumed)}) + current podset request ({_units(res, request)}) "
                f"> maximum capacity ({_units(res, capacity)})"), EXCEEDS_MAX_QUOTA
        self.read_usage = True
        borrow, may_reclaim = height_of_lowest_subtree_that_fits(node, fr, value)
        available = node.available(fr)
        readings = self.readings
        if readings is not None:
            readings.append((QUOTA_READING, fr, value, (borrow, may_reclaim, available)))
        if value <= available:
            return FIT, borrow, None, ""
        message = unused_quota_message(fr, value, available)
        pre = self.cq.preemption
        can_preempt_while_borrowing = pre.borrow_within_cohort != "Never" or (
            self.fair_sharing and pre.reclaim_within_cohort != "Never")
        if node.quota(fr).nominal >= value or may_reclaim or can_preempt_while_borrowing:
            mode, borrow_after = self.oracle(fr, value)
            if readings is not None:
                readings.append((ORACLE_READING, fr, value, (mode, borrow_after)))
            return mode, borrow_after, message, ""
        return NO_FIT, borrow, message, WAITING_FOR_QUOTA
