"""The Kubernetes API server's own validation of the DRA objects the compiler emits (DeviceClass,
ResourceClaimTemplate; resource.k8s.io), beyond what the OpenAPI schema says: list limits, request
names, one of exactly/firstAvailable, allocation mode and count, CEL selectors that parse,
references from constraints and config to requests. From k8s pkg/apis/resource/validation.

Runs after the strict schema passed (types are right). v1beta1 requests are flat (no `exactly`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import k8s_names
from .cel_syntax import MAX_EXPRESSION_LENGTH, syntax_error

SELECTORS_MAX = 32
CONFIG_MAX = 32
REQUESTS_MAX = 32
CONSTRAINTS_MAX = 32
FIRST_AVAILABLE_MAX = 8
OPAQUE_PARAMETERS_MAX = 10 * 1024
DRIVER_NAME_MAX = 63
_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity")


@dataclass(frozen=True)
class DraViolation:
    field_path: str
    message: str
    rule: str


Add = Callable[[str, str, str], None]


def _leaf(path: str) -> str:
    return path.rsplit(".", 1)[-1]


def _too_many(add: Add, items: list, limit: int, path: str) -> None:
    if len(items) > limit:
        add(path, f"{_leaf(path)}: Too many: {len(items)}: must have at most {limit} items", "dra.tooMany")


def _selectors(add: Add, selectors: list, path: str) -> None:
    _too_many(add, selectors, SELECTORS_MAX, path)
    for i, selector in enumerate(selectors):
        spath = f"{path}[{i}]"
        expression = (selector.get("cel") or {}).get("expression") if isinstance(selector, dict) else None
        if not isinstance(selector, dict) or "cel" not in selector:
            add(f"{spath}.cel", "cel: Required value", "dra.selector.required")
            continue
        epath = f"{spath}.cel.expression"
        if not expression:
            add(epath, "expression: Required value: a CEL expression over `device`", "dra.selector.required")
        elif len(expression) > MAX_EXPRESSION_LENGTH:
            add(epath, f"expression: Too long: may not be more than {MAX_EXPRESSION_LENGTH} bytes", "dra.selector.tooLong")
        else:
            error = syntax_error(expression)
            if error is not None:
                add(epath, f"expression: Invalid value: {json.dumps(expression)}: compilation failed: {error}",
                    "dra.selector.cel")


def _driver(add: Add, driver: Any, path: str) -> None:
    if not driver:
        add(path, "driver: Required value", "dra.driver.required")
        return
    if len(driver) > DRIVER_NAME_MAX:
        add(path, f"driver: Too long: may not be more than {DRIVER_NAME_MAX} bytes", "dra.driver.tooLong")
    for msg in k8s_names.dns1123_subdomain(driver.lower()):
        add(path, f'driver: Invalid value: "{driver}": {msg}', "dra.driver.invalid")


def _configs(add: Add, configs: list, path: str, limit: int, request_names: set[str] | None) -> None:
    _too_many(add, configs, limit, path)
    for i, config in enumerate(configs):
        cpath = f"{path}[{i}]"
        if request_names is not None:
            _request_refs(add, config.get("requests") or [], f"{cpath}.requests", request_names)
        opaque = config.get("opaque")
        if opaque is None:
            add(f"{cpath}.opaque", "opaque: Required value", "dra.config.opaqueRequired")
            continue
        _driver(add, opaque.get("driver"), f"{cpath}.opaque.driver")
        parameters = opaque.get("parameters")
        if parameters is not None and len(json.dumps(parameters, separators=(",", ":"))) > OPAQUE_PARAMETERS_MAX:
            add(f"{cpath}.opaque.parameters", f"parameters: Too long: may not be more than {OPAQUE_PARAMETERS_MAX} "
                "bytes", "dra.config.parametersTooLong")


def _request_refs(add: Add, refs: list, path: str, names: set[str]) -> None:
    seen: set[str] = set()
    for j, ref in enumerate(refs):
        rpath = f"{path}[{j}]"
        if ref in seen:
            add(rpath, f'{_leaf(rpath)}: Duplicate value: "{ref}"', "dra.requestRef.duplicate")
        seen.add(ref)
        if ref not in names:
            add(rpath, f'{_leaf(rpath)}: Invalid value: "{ref}": must be the name of a request in the claim or the '
                "name of a request and a subrequest separated by '/'", "dra.requestRef.unknown")


def _request_name(add: Add, name: Any, path: str) -> None:
    if not name:
        add(path, "name: Required value", "dra.request.nameRequired")
        return
    for msg in k8s_names.dns1123_label(name):
        add(path, f'name: Invalid value: "{name}": {msg}', "dra.request.name")


def _exact(add: Add, request: dict, path: str) -> None:
    """deviceClassName, selectors, allocationMode and count of an exact request or a subrequest."""
    device_class = request.get("deviceClassName")
    if not device_class:
        add(f"{path}.deviceClassName", "deviceClassName: Required value", "dra.request.classRequired")
    else:
        for msg in k8s_names.dns1123_subdomain(device_class):
            add(f"{path}.deviceClassName", f'deviceClassName: Invalid value: "{device_class}": {msg}',
                "dra.request.className")
    _selectors(add, request.get("selectors") or [], f"{path}.selectors")
    mode = request.get("allocationMode") or "ExactCount"  # the API server's default
    count = request.get("count")
    if mode == "All":
        if count not in (None, 0):
            add(f"{path}.count", f"count: Invalid value: {count}: must not be specified when allocationMode is 'All'",
                "dra.request.countWithAll")
    elif mode == "ExactCount":
        # The API server's defaulting makes a count of 0 (the same as none once decoded) 1.
        if count is not None and count < 0:
            add(f"{path}.count", f"count: Invalid value: {count}: must be greater than zero", "dra.request.count")
    else:
        add(f"{path}.allocationMode", f'allocationMode: Unsupported value: "{mode}": supported values: "All", '
            '"ExactCount"', "dra.request.allocationMode")


def _claim_spec(add: Add, spec: dict, path: str, api_version: str) -> None:
    devices = spec.get("devices") or {}
    dpath = f"{path}.devices"
    requests = devices.get("requests") or []
    _too_many(add, requests, REQUESTS_MAX, f"{dpath}.requests")
    names: set[str] = set()
    seen: set[str] = set()
    flat = api_version.endswith("/v1beta1")
    for i, request in enumerate(requests):
        rpath = f"{dpath}.requests[{i}]"
        name = request.get("name")
        _request_name(add, name, f"{rpath}.name")
        if name in seen:
            add(f"{rpath}.name", f'name: Duplicate value: "{name}"', "dra.request.duplicate")
        seen.add(name)
        first = request.get("firstAvailable") or []
        exact = {k: request[k] for k in _EXACT_FIELDS if k in request} if flat else request.get("exactly")
        has_exact = bool(exact) if flat else exact is not None
        if first and has_exact:
            add(rpath, f"{_leaf(rpath)}: Invalid value: exactly one of `exactly` or `firstAvailable` is required, but "
                "multiple fields are set", "dra.request.both")
        elif not first and not has_exact:
            add(rpath, f"{_leaf(rpath)}: Required value: exactly one of `exactly` or `firstAvailable` is required",
                "dra.request.none")
        elif first:
            _too_many(add, first, FIRST_AVAILABLE_MAX, f"{rpath}.firstAvailable")
            sub_seen: set[str] = set()
            for j, sub in enumerate(first):
                spath = f"{rpath}.firstAvailable[{j}]"
                _request_name(add, sub.get("name"), f"{spath}.name")
                if sub.get("name") in sub_seen:
                    add(f"{spath}.name", f'name: Duplicate value: "{sub.get("name")}"', "dra.request.duplicate")
                sub_seen.add(sub.get("name"))
                names.add(f"{name}/{sub.get('name')}")
                _exact(add, sub, spath)
        else:
            _exact(add, exact, rpath if flat else f"{rpath}.exactly")
        names.add(name)
    constraints = devices.get("constraints") or []
    _too_many(add, constraints, CONSTRAINTS_MAX, f"{dpath}.constraints")
    for i, constraint in enumerate(constraints):
        cpath = f"{dpath}.constraints[{i}]"
        _request_refs(add, constraint.get("requests") or [], f"{cpath}.requests", names)
        attribute = constraint.get("matchAttribute") or constraint.get("distinctAttribute")
        if not attribute:
            add(f"{cpath}.matchAttribute", "matchAttribute: Required value", "dra.constraint.attributeRequired")
        elif "/" not in attribute:
            add(f"{cpath}.matchAttribute", f'matchAttribute: Invalid value: "{attribute}": must include a domain',
                "dra.constraint.attributeDomain")
    _configs(add, devices.get("config") or [], f"{dpath}.config", CONFIG_MAX, names)


def _extended_resource_name(add: Add, name: str, path: str) -> None:
    # IsExtendedResourceName: has a domain prefix, not in the kubernetes.io namespace, and
    # `requests.<name>` is a qualified name (resource quota keys are written that way).
    prefix = name.split("/", 1)[0] if "/" in name else ""
    native = not prefix or prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io")
    errors = list(k8s_names.qualified_name("requests." + name))
    if native:
        errors.insert(0, "must be a fully qualified extended resource name outside the kubernetes.io namespace")
    for msg in errors:
        add(path, f'extendedResourceName: Invalid value: "{name}": {msg}', "dra.deviceClass.extendedResourceName")


def check(obj: dict[str, Any]) -> list[DraViolation]:
    kind, api_version = obj.get("kind"), str(obj.get("apiVersion", ""))
    found: list[DraViolation] = []

    def add(path: str, message: str, rule: str) -> None:
        found.append(DraViolation(path, message, rule))

    spec = obj.get("spec") or {}
    if kind == "DeviceClass":
        _selectors(add, spec.get("selectors") or [], "spec.selectors")
        _configs(add, spec.get("config") or [], "spec.config", CONFIG_MAX, None)
        if spec.get("extendedResourceName"):
            _extended_resource_name(add, spec["extendedResourceName"], "spec.extendedResourceName")
    elif kind in ("ResourceClaimTemplate", "ResourceClaim"):
        claim_spec = spec.get("spec") if kind == "ResourceClaimTemplate" else spec
        base = "spec.spec" if kind == "ResourceClaimTemplate" else "spec"
        _claim_spec(add, claim_spec or {}, base, api_version)
    return found


def applies_to(api_version: str, kind: str) -> bool:
    return api_version.startswith("resource.k8s.io/") and kind in ("DeviceClass", "ResourceClaimTemplate",
                                                                   "ResourceClaim")
