"""Per-pod resource requests the way Kubernetes and Kueue count them.

requests default to limits; init containers count as max(each init container + the sidecars
started before it) against the sum of the app containers plus all sidecars (init containers with
`restartPolicy: Always`); pod overhead is added on top. DRA claims are charged through the
Configuration's deviceClassMappings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.core.quantity import QuantityError, to_units
from compiler.core.shapes import checked


class PodSpecProblem(ValueError):
    """The pod template cannot be charged (bad quantity, negative request, unsupported DRA use)."""

    def __init__(self, message: str, reason: str = "Invalid"):
        super().__init__(message)
        self.reason = reason


@dataclass
class DraContext:
    """What is needed to charge DRA requests: templates of the namespace, class mappings."""

    claim_templates: dict[tuple[str, str], dict] = field(default_factory=dict)  # (ns, name) -> spec
    class_to_resource: dict[str, str] = field(default_factory=dict)
    extended_resource_classes: dict[str, str] = field(default_factory=dict)  # ext name -> class


def _container_requests(container: dict, where: str) -> dict[str, int]:
    resources = checked(container.get("resources") or {}, dict, f"{where}: resources", PodSpecProblem)
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    if not isinstance(requests, dict) or not isinstance(limits, dict):
        raise PodSpecProblem(f"{where}: resources.requests and resources.limits must be mappings")
    merged: dict[str, object] = dict(limits)
    merged.update(requests)  # an explicit request wins; a missing one defaults to the limit
    out: dict[str, int] = {}
    for resource, text in merged.items():
        resource = str(resource)
        try:
            value = to_units(resource, text)
        except QuantityError as error:
            raise PodSpecProblem(f"{where}: resource {resource}: {error}") from None
        if value < 0:
            raise PodSpecProblem(f"{where}: resource {resource}: must be greater than or equal to 0 "
                                 f"(got {text})")
        out[resource] = value
    return out


def larger_quantity(resource: str, first: object, second: object) -> object:
    """The larger of two quantities of one resource, as written; an unreadable one is kept so
    that charging the pod reports it."""
    try:
        return first if to_units(resource, first) >= to_units(resource, second) else second
    except QuantityError:
        return first


def _add(into: dict[str, int], other: dict[str, int]) -> None:
    for key, value in other.items():
        into[key] = into.get(key, 0) + value


def _max(into: dict[str, int], other: dict[str, int]) -> None:
    for key, value in other.items():
        if value > into.get(key, 0):
            into[key] = value


def _aggregate_containers(spec: dict, where: str) -> dict[str, int]:
    """AggregateContainerRequests: the app containers and sidecars summed, against the peak of
    each init container with the sidecars started before it."""
    total: dict[str, int] = {}
    containers = checked(spec.get("containers") or [], list, f"{where}: containers", PodSpecProblem)
    for index, container in enumerate(containers):
        checked(container, dict, f"{where}: containers[{index}]", PodSpecProblem)
        _add(total, _container_requests(container, f"{where} container {container.get('name', index)}"))
    init_peak: dict[str, int] = {}
    sidecars: dict[str, int] = {}
    inits = checked(spec.get("initContainers") or [], list, f"{where}: initContainers", PodSpecProblem)
    for index, container in enumerate(inits):
        checked(container, dict, f"{where}: initContainers[{index}]", PodSpecProblem)
        requests = _container_requests(container, f"{where} init container {container.get('name', index)}")
        if container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            _max(init_peak, sidecars)
        else:
            with_sidecars = dict(requests)
            _add(with_sidecars, sidecars)
            _max(init_peak, with_sidecars)
    _max(total, init_peak)
    return total


def _add_overhead(total: dict[str, int], spec: dict, where: str) -> None:
    overhead = spec.get("overhead") or {}
    if isinstance(overhead, dict) and overhead:
        _add(total, _container_requests({"resources": {"requests": overhead}}, f"{where} overhead"))


def running_pod_requests(spec: dict, where: str) -> dict[str, int]:
    """What a scheduled pod takes from its node, as Kueue's TAS cache counts a pod it does not
    place (resources.NewRequestsFromPodSpec, Kubernetes' PodRequests with default options): the
    containers' requests (a missing one is its limit, as the API server defaults it), the
    pod-level requests of cpu, memory and hugepages in their place when set, and the overhead."""
    checked(spec, dict, f"{where}: spec", PodSpecProblem)
    total = _aggregate_containers(spec, where)
    pod_level = spec.get("resources") or {}
    requests = pod_level.get("requests") if isinstance(pod_level, dict) else None
    if isinstance(requests, dict):
        supported = {str(r): q for r, q in requests.items()
                     if str(r) in ("cpu", "memory") or str(r).startswith("hugepages-")}
        total.update(_container_requests({"resources": {"requests": supported}}, f"{where} pod-level resources"))
    _add_overhead(total, spec, where)
    return total


def pod_requests(spec: dict, podset: str, namespace: str, dra: DraContext) -> dict[str, int]:
    """Per-pod requests of a pod template spec, as Kueue charges them."""
    checked(spec, dict, f"pod set {podset}: template.spec", PodSpecProblem)
    total = _aggregate_containers(spec, f"pod set {podset}")
    _add_overhead(total, spec, f"pod set {podset}")
    _rename_extended_resources(total, dra)
    _add(total, _claim_requests(spec, podset, namespace, dra))
    return {res: value for res, value in total.items()}


def _rename_extended_resources(total: dict[str, int], dra: DraContext) -> None:
    """A container request for a DeviceClass's extendedResourceName is charged under the
    class's mapped logical resource (once; no double count with the implicit claim)."""
    for resource in list(total):
        device_class = dra.extended_resource_classes.get(resource)
        if device_class is None:
            continue
        target = dra.class_to_resource.get(device_class, resource)
        if target != resource:
            total[target] = total.get(target, 0) + total.pop(resource)


def _claim_requests(spec: dict, podset: str, namespace: str, dra: DraContext) -> dict[str, int]:
    out: dict[str, int] = {}
    for claim in spec.get("resourceClaims") or []:
        if not isinstance(claim, dict):
            continue
        if claim.get("resourceClaimName"):
            raise PodSpecProblem("KueueDRAIntegration feature does not support use of resource claims")
        template_name = claim.get("resourceClaimTemplateName")
        if not template_name:
            continue
        template = dra.claim_templates.get((namespace, template_name))
        if template is None:
            raise PodSpecProblem(f"ResourceClaimTemplate {namespace}/{template_name} not found "
                                 f"for podset {podset}")
        devices = ((template.get("spec") or {}).get("devices") or {})
        for request in devices.get("requests") or []:
            if not isinstance(request, dict):
                continue
            if request.get("firstAvailable"):
                raise PodSpecProblem("FirstAvailable device selection is not supported")
            exactly = request.get("exactly") or request  # v1 nests under `exactly`; v1beta1 does not
            if exactly.get("adminAccess"):
                continue
            mode = exactly.get("allocationMode", "ExactCount")
            if mode == "All":
                raise PodSpecProblem("AllocationMode 'All' is not supported")
            device_class = exactly.get("deviceClassName", "")
            resource = dra.class_to_resource.get(device_class)
            if resource is None:
                raise PodSpecProblem(f"DeviceClass {device_class} is not mapped in DRA configuration "
                                     f"for podset {podset}")
            count = exactly.get("count", 1)
            if not isinstance(count, int) or count < 0:
                raise PodSpecProblem(f"pod set {podset}: device request count must be a non-negative integer")
            out[resource] = out.get(resource, 0) + count
    return out


@dataclass
class Placement:
    node_selector: dict[str, str]
    affinity_terms: list[list[dict]] | None
    tolerations: list[dict]


def placement(spec: dict) -> Placement:
    node_selector = spec.get("nodeSelector") or {}
    terms = None
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required, dict):
        terms = [list(t.get("matchExpressions") or []) for t in required.get("nodeSelectorTerms") or []
                 if isinstance(t, dict)]
    tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
    return Placement({str(k): str(v) for k, v in node_selector.items()}, terms, tolerations)
