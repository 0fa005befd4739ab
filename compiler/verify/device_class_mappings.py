"""Kueue Configuration `resources.deviceClassMappings` rules (as Kueue v0.19 validates them in
pkg/config/validation.go, validateDeviceClassMappings).

Kueue reads its Configuration once at start-up with strict decoding, and refuses to start on
any of these errors, so a wrong mapping takes the whole admission controller down: the compiler
checks them before it emits the Configuration.
"""

from __future__ import annotations

from typing import Any

from ..core import codes
from . import k8s_names
from .cel_syntax import syntax_error
from .problem import ObjectProblem
from .versions import parse_version

PATH = "resources.deviceClassMappings"
MAX_MAPPINGS = 16
MAX_CLASSES = 8
MAX_NAME = 253
DRIVER_MAX = 63  # resource.k8s.io DriverNameMaxLength
C_IDENTIFIER_MAX = 32  # resource.k8s.io DeviceMaxIDLength

COUNTER_GATE = "KueueDRAIntegrationPartitionableDevices"
CAPACITY_GATE = "KueueDRAIntegrationConsumableCapacity"

_MAPPING_FIELDS = {"name", "deviceClassNames", "sources"}
_SOURCE_FIELDS = {"counter", "capacity"}
_SOURCE_BODY_FIELDS = {"name", "driver", "deviceSelector"}


def _default_gates(kueue: tuple[int, ...]) -> dict[str, bool]:
    # Counter sources: alpha (off) in 0.18, beta (on) from 0.19. Capacity sources: alpha (off).
    return {COUNTER_GATE: kueue[:2] >= (0, 19), CAPACITY_GATE: False}


def _locate(fragment: dict[str, Any]) -> tuple[Any, str]:
    """The mappings list and its path, from a Configuration, its `resources`, or the list holder."""
    if isinstance(fragment.get("resources"), dict):
        return fragment["resources"].get("deviceClassMappings"), PATH
    return fragment.get("deviceClassMappings"), "deviceClassMappings"


def verify_device_class_mappings(fragment: dict[str, Any], *, kueue_version: str = "0.19") -> list[ObjectProblem]:
    """Problems Kueue's configuration validation would report for the fragment's deviceClassMappings.

    `fragment` is a Kueue Configuration (`{"resources": {"deviceClassMappings": [...]},
    "featureGates": {...}}`) or just `{"deviceClassMappings": [...]}`. Feature gates not set
    in `featureGates` take their default at `kueue_version`. Problems carry index -1 and kind
    "Configuration"; field paths start at `resources.deviceClassMappings`.
    """
    gates = _gates(fragment, kueue_version)
    meta = fragment.get("metadata") if isinstance(fragment, dict) and isinstance(fragment.get("metadata"), dict) else {}
    name = str(meta.get("name", ""))
    namespace = str(meta.get("namespace", ""))
    found: list[ObjectProblem] = []

    def add(path: str, message: str, rule: str) -> None:
        found.append(ObjectProblem(-1, "Configuration", name, namespace, path, codes.DEVICE_CLASS_MAPPINGS,
                                   message, rule))

    mappings, base = _locate(fragment) if isinstance(fragment, dict) else (None, PATH)
    if mappings is None:
        return found
    if not isinstance(mappings, list):
        add(base, f"{base}: Invalid value: must be a list of mappings", "dcm.type")
        return found
    if len(mappings) > MAX_MAPPINGS:
        add(base, f"deviceClassMappings: Too many: {len(mappings)}: must have at most {MAX_MAPPINGS} items",
            "dcm.tooMany")
    seen_names: set[str] = set()
    owners = _ClassOwners()
    for idx, mapping in enumerate(mappings):
        mpath = f"{base}[{idx}]"
        if not isinstance(mapping, dict):
            add(mpath, f"deviceClassMappings[{idx}]: Invalid value: must be a mapping", "dcm.type")
            continue
        for key in sorted(set(mapping) - _MAPPING_FIELDS):
            add(f"{mpath}.{key}", f'strict decoding error: unknown field "{mpath}.{key}"', "dcm.unknownField")
        resource = _resource_name(add, mapping.get("name"), mpath, seen_names)
        _class_names(add, _class_list(add, mapping.get("deviceClassNames"), mpath), mpath, resource,
                     _first_counter(mapping.get("sources")), owners)
        _sources(add, mapping.get("sources"), f"{mpath}.sources", gates)
    return sorted(found, key=lambda p: (p.field_path, p.message))


def _gates(fragment: Any, kueue_version: str) -> dict[str, bool]:
    """The feature gates in effect: the fragment's `featureGates` over the version's defaults."""
    gates = _default_gates(parse_version(kueue_version, "Kueue version"))
    declared = fragment.get("featureGates") if isinstance(fragment, dict) else None
    if isinstance(declared, dict):
        gates.update({k: bool(v) for k, v in declared.items()})
    return gates


def _resource_name(add, resource: Any, mpath: str, seen_names: set[str]) -> str:
    """The mapping's logical resource name ("" when missing), checked and recorded as seen."""
    if not isinstance(resource, str) or not resource:
        add(f"{mpath}.name", "name: Required value: the logical resource name quota is written in",
            "dcm.name.required")
        return ""
    errs = k8s_names.qualified_name(resource)
    if errs:
        add(f"{mpath}.name", f'name: Invalid value: "{resource}": {"; ".join(errs)}', "dcm.name.invalid")
    if len(resource) > MAX_NAME:
        add(f"{mpath}.name", f'name: Invalid value: "{resource}": must not exceed {MAX_NAME} characters',
            "dcm.name.tooLong")
    if resource in seen_names:
        add(f"{mpath}.name", f'name: Duplicate value: "{resource}": another mapping already defines '
            "this resource name", "dcm.name.duplicate")
    seen_names.add(resource)
    return resource


def _class_list(add, classes: Any, mpath: str) -> list:
    if classes is None or classes == []:
        add(f"{mpath}.deviceClassNames", "deviceClassNames: Required value: at least one device class name "
            "is required", "dcm.classes.required")
        return []
    if not isinstance(classes, list):
        add(f"{mpath}.deviceClassNames", "deviceClassNames: Invalid value: must be a list of DeviceClass names",
            "dcm.type")
        return []
    if len(classes) > MAX_CLASSES:
        add(f"{mpath}.deviceClassNames", f"deviceClassNames: Too many: {len(classes)}: must have at most "
            f"{MAX_CLASSES} items", "dcm.classes.tooMany")
    return classes


def _first_counter(sources: Any) -> str:
    """The counter name of the mapping's first source, when that source is a counter."""
    if isinstance(sources, list) and sources and isinstance(sources[0], dict) and \
            isinstance(sources[0].get("counter"), dict):
        return str(sources[0]["counter"].get("name", ""))
    return ""


class _ClassOwners:
    """Across all mappings: the resource each DeviceClass maps to, and the counters it is a
    source for (one class may serve several resources only through different counters)."""

    def __init__(self) -> None:
        self.resource: dict[str, str] = {}
        self.counters: dict[str, set[str]] = {}


def _class_names(add, classes: list, mpath: str, resource: str, counter_name: str, owners: _ClassOwners) -> None:
    seen_classes: set[str] = set()
    for dc_idx, device_class in enumerate(classes):
        dpath = f"{mpath}.deviceClassNames[{dc_idx}]"
        if not isinstance(device_class, str):
            add(dpath, f"deviceClassNames[{dc_idx}]: Invalid value: must be a string", "dcm.type")
            continue
        errs = k8s_names.qualified_name(device_class)
        if errs:
            add(dpath, f'deviceClassNames[{dc_idx}]: Invalid value: "{device_class}": {"; ".join(errs)}',
                "dcm.class.invalid")
        if len(device_class) > MAX_NAME:
            add(dpath, f'deviceClassNames[{dc_idx}]: Invalid value: "{device_class}": must not exceed '
                f"{MAX_NAME} characters", "dcm.class.tooLong")
        if device_class in seen_classes:
            add(dpath, f'deviceClassNames[{dc_idx}]: Duplicate value: "{device_class}"', "dcm.class.duplicate")
        seen_classes.add(device_class)
        existing = owners.resource.get(device_class)
        if existing is None:
            owners.resource[device_class] = resource
            owners.counters[device_class] = {counter_name} if counter_name else set()
        elif existing != resource:
            counters = owners.counters[device_class]
            if not counter_name or not counters:
                add(dpath, f'deviceClassNames[{dc_idx}]: Invalid value: "{device_class}": device class already '
                    f"mapped to resource {existing}", "dcm.class.mappedTwice")
            elif counter_name in counters:
                add(dpath, f'deviceClassNames[{dc_idx}]: Invalid value: "{device_class}": device class already '
                    f'has a counter source for counter "{counter_name}"', "dcm.class.counterTwice")
            else:
                counters.add(counter_name)


def _sources(add, sources: Any, spath: str, gates: dict[str, bool]) -> None:
    if not sources:
        return
    if not isinstance(sources, list):
        add(spath, "sources: Invalid value: must be a list", "dcm.type")
        return
    counters = 0
    has_capacity = False
    for s_idx, source in enumerate(sources):
        path = f"{spath}[{s_idx}]"
        if not isinstance(source, dict):
            add(path, f"sources[{s_idx}]: Invalid value: must be a mapping", "dcm.type")
            continue
        for key in sorted(set(source) - _SOURCE_FIELDS):
            add(f"{path}.{key}", f'strict decoding error: unknown field "{path}.{key}"', "dcm.unknownField")
        counter, capacity = source.get("counter"), source.get("capacity")
        if counter is None and capacity is None:
            add(path, f"sources[{s_idx}]: Required value: exactly one source type must be set per entry",
                "dcm.source.none")
            continue
        if counter is not None and capacity is not None:
            add(path, f'sources[{s_idx}]: Invalid value: "counter+capacity": exactly one source type must be set '
                "per entry", "dcm.source.both")
            continue
        if counter is not None:
            counters += 1
            if not gates.get(COUNTER_GATE):
                add(f"{path}.counter", f"counter: Invalid value: true: counter sources require {COUNTER_GATE} to be "
                    "enabled", "dcm.source.counterGate")
                continue
            cpath = f"{path}.counter"
            if not isinstance(counter, dict):
                add(cpath, "counter: Invalid value: must be a mapping", "dcm.type")
                continue
            _unknown(add, counter, cpath)
            cname = counter.get("name", "")
            if not cname:
                add(f"{cpath}.name", "name: Required value: the counter name in ResourceSlice consumesCounters",
                    "dcm.counter.name.required")
            else:
                errs = k8s_names.dns1123_label(str(cname))
                if errs:
                    add(f"{cpath}.name", f'name: Invalid value: "{cname}": {",".join(errs)}', "dcm.counter.name")
            _driver_and_selector(add, counter, cpath)
        if capacity is not None:
            has_capacity = True
            if not gates.get(CAPACITY_GATE):
                add(f"{path}.capacity", f"capacity: Invalid value: true: capacity sources require {CAPACITY_GATE} "
                    "to be enabled", "dcm.source.capacityGate")
                continue
            kpath = f"{path}.capacity"
            if not isinstance(capacity, dict):
                add(kpath, "capacity: Invalid value: must be a mapping", "dcm.type")
                continue
            _unknown(add, capacity, kpath)
            _capacity_name(add, str(capacity.get("name", "")), f"{kpath}.name")
            _driver_and_selector(add, capacity, kpath)
    if counters and has_capacity:
        add(spath, f"sources: Invalid value: {len(sources)}: cannot mix counter and capacity sources in the same "
            "mapping", "dcm.source.mixed")


def _unknown(add, body: dict, path: str) -> None:
    for key in sorted(set(body) - _SOURCE_BODY_FIELDS):
        add(f"{path}.{key}", f'strict decoding error: unknown field "{path}.{key}"', "dcm.unknownField")
    selector = body.get("deviceSelector")
    if isinstance(selector, dict):
        for key in sorted(set(selector) - {"cel"}):
            add(f"{path}.deviceSelector.{key}", f'strict decoding error: unknown field "{path}.deviceSelector.{key}"',
                "dcm.unknownField")


def _capacity_name(add, name: str, path: str) -> None:
    """resource.k8s.io QualifiedName: a C identifier, optionally prefixed by a driver-like domain."""
    parts = name.split("/")
    if len(parts) == 1:
        _c_identifier(add, parts[0], path)
    elif len(parts) == 2:
        domain, ident = parts
        if not domain:
            add(path, 'name: Invalid value: "": the domain must not be empty', "dcm.capacity.name")
        else:
            _driver_name(add, domain, path)
        if not ident:
            add(path, 'name: Invalid value: "": the name must not be empty', "dcm.capacity.name")
        else:
            _c_identifier(add, ident, path)


def _c_identifier(add, ident: str, path: str) -> None:
    if not ident:
        add(path, "name: Required value", "dcm.capacity.name")
        return
    if len(ident) > C_IDENTIFIER_MAX:
        add(path, f'name: Too long: may not be more than {C_IDENTIFIER_MAX} bytes', "dcm.capacity.name")
    for msg in k8s_names.c_identifier(ident):
        add(path, f'name: Invalid value: "{ident}": {msg}', "dcm.capacity.name")


def _driver_name(add, driver: str, path: str) -> None:
    if len(driver) > DRIVER_MAX:
        add(path, f'driver: Invalid value: "{driver}": must not exceed {DRIVER_MAX} characters', "dcm.driver")
        return
    errs = k8s_names.dns1123_subdomain(driver)
    if errs:
        add(path, f'driver: Invalid value: "{driver}": {",".join(errs)}', "dcm.driver")


def _driver_and_selector(add, body: dict, path: str) -> None:
    driver = body.get("driver", "")
    if not driver:
        add(f"{path}.driver", "driver: Required value: the DRA driver name, e.g. gpu.nvidia.com", "dcm.driver.required")
    else:
        _driver_name(add, str(driver), f"{path}.driver")
    selector = body.get("deviceSelector") if isinstance(body.get("deviceSelector"), dict) else {}
    cel_block = selector.get("cel") if isinstance(selector.get("cel"), dict) else {}
    expression = cel_block.get("expression", "")
    epath = f"{path}.deviceSelector.cel.expression"
    if not expression:
        add(epath, "expression: Required value: a CEL expression selecting the devices", "dcm.selector.required")
        return
    error = syntax_error(str(expression))
    if error is not None:
        add(epath, f'expression: Invalid value: "{expression}": CEL compilation failed: {error}', "dcm.selector.cel")
