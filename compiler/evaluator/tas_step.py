"""The placement step of a flavor assignment (Kueue v0.19.2 flavorassigner.go, the end of
assignFlavors; tas_flavorassigner.go): after the quota fit of every pod set, the pod sets that ask
for Topology Aware Scheduling are placed on their TAS flavor's nodes.

- A pod set with an error, or a NoFit assignment, is not placed.
- A pod set that asks for TAS needs exactly one TAS flavor among its resources' flavors
  ("no TAS flavor assigned", "more than one TAS flavor assigned: ..."): an error, so NoFit.
- A Fit assignment is placed on the nodes as they are; if a pod set cannot be placed its
  reason (Kueue's message) joins its reasons and the assignment becomes Preempt.
- A Preempt assignment (from quota, or from the step above) is placed on empty nodes (every TAS
  workload preempted): if even that fails the assignment is NoFit, else every TAS pod set's
  flavors become Preempt (the quota may be free but the nodes fragmented).
"""

from __future__ import annotations

from compiler.evaluator.tas import PlacementFailure

TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"

NO_TAS_FLAVOR = "no TAS flavor assigned"
NO_TAS_CACHE = "workload requires Topology, but there is no TAS cache information"
A_NO_FIT, A_PREEMPT, A_FIT = "NoFit", "Preempt", "Fit"  # (assigner's assignment modes)


def place_pods(assigner, assignment, podsets) -> None:
    requests, by_name, errors = _requests(assigner, assignment, podsets)
    if errors:
        assignment.mode = A_NO_FIT
        return
    if not requests:
        return
    tas = assigner.tas
    # The answer now depends on the nodes' usage: a cached one must know when that moves.
    assigner.read_usage = True
    assigner.read_placement = True
    if assignment.mode == A_FIT:
        result = tas.place(requests)
        if isinstance(result, PlacementFailure):
            psa = by_name[result.pod_set]
            psa.reasons = psa.reasons + [result.reason]
            _update_mode(psa, A_PREEMPT)
            assignment.mode = A_PREEMPT
        else:
            assignment.placements = result
            return
    result = tas.place(requests, simulate_empty=True)
    if isinstance(result, PlacementFailure):
        psa = by_name[result.pod_set]
        _update_mode(psa, A_NO_FIT)
        _mark_attempt(psa, result.flavor)
        assignment.mode = A_NO_FIT
        return
    for psa in by_name.values():
        _update_mode(psa, A_PREEMPT)


def _mark_attempt(psa, flavor: str) -> None:
    """markFlavorAttempt: the flavor's attempt becomes NoFit for TopologyPlacementFailed (the
    least severe no-fit reason: the workload is pending, not inadmissible)."""
    attempts = list(psa.attempts)
    for index, attempt in enumerate(attempts):
        if attempt.flavor == flavor:
            attempts[index] = type(attempt)(flavor, A_NO_FIT, attempt.borrow, attempt.reasons,
                                            TOPOLOGY_PLACEMENT_FAILED)
            break
    psa.attempts = attempts


def place_preempting(assigner, assignment, podsets, targets) -> None:
    """Kueue's updateAssignmentForTAS (scheduler.go): a Preempt assignment gets the placement
    its pods would have once the targets are gone, or, without targets, on empty nodes (so the
    reservation it holds for the rest of the cycle keeps the nodes it waits for)."""
    requests, _, errors = _requests(assigner, assignment, podsets)
    if errors or not requests:
        return
    tas = assigner.tas
    assigner.read_usage = True
    assigner.read_placement = True
    if targets:
        result = tas.place_without(requests, [t.info.placements for t in targets if t.info.placements])
    else:
        result = tas.place(requests, simulate_empty=True)
    if not isinstance(result, PlacementFailure):
        assignment.placements = result


def topology_requests(assigner, assignment, podsets) -> tuple:
    """The TAS requests a preemption search must place (Kueue's GetTargets calls
    WorkloadsTopologyRequests on the assignment): () without any."""
    requests, _, errors = _requests(assigner, assignment, podsets)
    return () if errors else tuple(requests)


def _requests(assigner, assignment, podsets):
    """WorkloadsTopologyRequests: (pod set, TAS flavor, request) of every pod set asking for
    TAS, the pod-set assignments by name, and whether one of them got an error."""
    tas, cq = assigner.tas, assigner.cq
    requests = []
    by_name = {}
    errors = False
    # (by name, in the Workload's pod-set order: a pod-set group's members sit together in the
    # assignment, as Kueue appends them)
    assigned = {psa.name: psa for psa in assignment.podsets}
    for podset in podsets:
        psa = assigned.get(podset.name)
        if psa is None or psa.error is not None or not tas.requested(podset, cq) or psa.count == 0:
            continue
        if not tas.active:
            psa.error, errors = NO_TAS_CACHE, True
            continue
        flavors = sorted({flavor for flavor, _, _ in psa.flavors.values() if tas.is_tas_flavor(flavor)})
        if not flavors:
            psa.error, errors = NO_TAS_FLAVOR, True
            continue
        if len(flavors) > 1:
            psa.error, errors = f"more than one TAS flavor assigned: {', '.join(flavors)}", True
            continue
        requests.append((psa.name, flavors[0], tas.request(podset, psa.count, cq)))
        by_name[psa.name] = psa
    return requests, by_name, errors


def _update_mode(psa, mode: str) -> None:
    """PodSetAssignment.updateMode: every flavor of the pod set in `mode` (a new dict: the
    assignment's records are shared by copies, never edited in place)."""
    psa.flavors = {res: (flavor, mode, borrow) for res, (flavor, _, borrow) in psa.flavors.items()}
