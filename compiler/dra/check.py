"""`devices check`: how many inventory devices each DeviceClass and each claim request matches.

Every selector is compiled first (a selector that does not compile is reported with its file
position and nothing is evaluated). Then every selector is evaluated against every device, as the
scheduler would: a device matches a class when all the class's selectors are true, and a claim
request when it matches its class and the request's own selectors. An evaluation error on a
device (a missing attribute, a wrong type) is reported, as it would abort allocation on the
cluster. Zero matches, or fewer than a request's count, are errors: "no device matches selector"
is caught at review time instead of as a pod pending forever.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compiler.core import codes
from compiler.cel.device import device_variable_for
from compiler.cel.engine import (CelError, CelEvaluationError, Program, compile_expression, execute,
                                 make_context)
from compiler.dra.inventory import (DeviceClassSpec, InventoryDevice, Manifests, Selector)
from compiler.core.errors import Diagnostic, PolicyError, Severity
from compiler.dra.pool_sizes import PoolShortfall, pool_shortfalls


@dataclass
class MatchReport:
    kind: str                 # DeviceClass | ResourceClaimTemplate
    name: str                 # class name, or namespace/template
    request: str | None       # claim request name
    device_class: str
    requested: int | None
    matching: int
    nodes: int
    evaluation_errors: int
    sample_devices: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = {"kind": self.kind, "name": self.name, "deviceClass": self.device_class,
               "matching": self.matching, "nodes": self.nodes,
               "evaluationErrors": self.evaluation_errors, "sampleDevices": self.sample_devices}
        if self.request is not None:
            out["request"] = self.request
            out["requested"] = self.requested
        return out


@dataclass
class CheckReport:
    devices: int
    classes: list[MatchReport]
    claims: list[MatchReport]
    diagnostics: list[Diagnostic]
    # Pools of the compiled report whose devices or nodes the inventory does not hold.
    shortfalls: list[PoolShortfall] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(d.severity is Severity.ERROR for d in self.diagnostics)

    def to_dict(self) -> dict:
        return {"devices": self.devices,
                "deviceClasses": [c.to_dict() for c in self.classes],
                "claims": [c.to_dict() for c in self.claims],
                "poolShortfalls": [s.to_dict() for s in self.shortfalls],
                "diagnostics": [d.to_dict() for d in self.diagnostics],
                "ok": self.ok}


def _compile(selectors: tuple[Selector, ...], subject: str,
             errors: list[Diagnostic]) -> list[tuple[Program, Selector]]:
    programs = []
    for selector in selectors:
        try:
            programs.append((compile_expression(selector.expression), selector))
        except CelError as error:
            errors.append(error.diagnostic(selector.position, subject, selector.block))
    return programs


def _device_contexts(devices: list[InventoryDevice], programs: list[Program]) -> dict[int, Any]:
    """One evaluation context per device, shared by every selector (building a context costs
    more than evaluating in it). The device gets an empty map for every string literal of every
    selector that is not one of its domains (Kubernetes: unknown domain -> empty map)."""
    literals = Program("", None, frozenset(), frozenset(),
                       tuple(sorted({lit for p in programs for lit in p.string_literals})))
    return {id(device): make_context({"device": device_variable_for(device.variable, literals)}, programs)
            for device in devices}


def _matches(programs: list[tuple[Program, Selector]], device: InventoryDevice, contexts: dict[int, Any],
             failures: list[tuple[Selector, str]]) -> bool:
    for program, selector in programs:
        try:
            result = execute(program, contexts[id(device)])
        except CelEvaluationError as error:
            failures.append((selector, f"device {device.key}: {error.reason}"))
            return False
        if result is not True:
            if not isinstance(result, bool):
                failures.append((selector, f"device {device.key}: selector returned "
                                           f"{type(result).__name__}, not bool"))
            return False
    return True


def _report(kind: str, name: str, request: str | None, device_class: str, requested: int | None,
            programs: list[tuple[Program, Selector]], devices: list[InventoryDevice],
            contexts: dict[int, Any], diagnostics: list[Diagnostic],
            subject: str) -> tuple[MatchReport, list[InventoryDevice]]:
    failures: list[tuple[Selector, str]] = []
    matched = [d for d in devices if _matches(programs, d, contexts, failures)]
    if failures:
        selector, reason = failures[0]
        more = f" (and {len(failures) - 1} more device(s))" if len(failures) > 1 else ""
        diagnostics.append(Diagnostic(codes.CEL_EVALUATION,
                                      f"{subject}: selector fails to evaluate on {reason}{more}; on the "
                                      "cluster this aborts allocation. Guard optional attributes with has()",
                                      selector.position))
    report = MatchReport(kind, name, request, device_class, requested, len(matched),
                         len({d.node for d in matched}), len(failures),
                         [d.key for d in matched[:3]])
    return report, matched


def check_devices(manifests: Manifests, devices: list[InventoryDevice], compiled: dict | None = None) -> CheckReport:
    """Compile every selector, then count matches; raises PolicyError on compile errors. With the
    compiled report.json, the pools' declared devices and nodes are checked too."""
    compile_errors: list[Diagnostic] = []
    class_programs = {c.name: _compile(c.selectors, f"DeviceClass {c.name}", compile_errors)
                      for c in manifests.device_classes}
    request_programs = {}
    for template in manifests.claim_templates:
        for request in template.requests:
            request_programs[(template.qualified_name, request.name)] = _compile(
                request.selectors, f"ResourceClaimTemplate {template.qualified_name} request {request.name}",
                compile_errors)
    if compile_errors:
        raise PolicyError(compile_errors)
    every_program = [p for programs in (*class_programs.values(), *request_programs.values())
                     for p, _ in programs]
    contexts = _device_contexts(devices, every_program)

    diagnostics: list[Diagnostic] = list(manifests.warnings)
    classes: dict[str, DeviceClassSpec] = {c.name: c for c in manifests.device_classes}
    class_reports: list[MatchReport] = []
    class_matches: dict[str, list[InventoryDevice]] = {}
    for name in sorted(classes):
        spec = classes[name]
        report, matched = _report("DeviceClass", name, None, name, None, class_programs[name], devices,
                                  contexts, diagnostics, f"DeviceClass {name}")
        class_reports.append(report)
        class_matches[name] = matched
        if not matched:
            diagnostics.append(Diagnostic(codes.NO_MATCHING_DEVICE,
                                          f"DeviceClass {name}: no device matches selector "
                                          f"(inventory: {len(devices)} device(s))", spec.position))

    claim_reports: list[MatchReport] = []
    for template in sorted(manifests.claim_templates, key=lambda t: t.qualified_name):
        for request in template.requests:
            subject = f"ResourceClaimTemplate {template.qualified_name} request {request.name}"
            if request.device_class not in classes:
                diagnostics.append(Diagnostic(codes.NO_MATCHING_DEVICE,
                                              f"{subject}: DeviceClass {request.device_class} is not among "
                                              "the checked manifests, so its devices cannot be counted",
                                              request.position, Severity.WARNING))
                continue
            report, matched = _report("ResourceClaimTemplate", template.qualified_name, request.name,
                                      request.device_class, request.count,
                                      request_programs[(template.qualified_name, request.name)],
                                      class_matches[request.device_class], contexts, diagnostics,
                                      subject)
            claim_reports.append(report)
            if request.allocation_mode == "All":
                continue
            if not matched:
                diagnostics.append(Diagnostic(codes.NO_MATCHING_DEVICE,
                                              f"{subject}: no device matches selector (class "
                                              f"{request.device_class} plus the request's selectors)",
                                              request.position))
            elif len(matched) < request.count:
                diagnostics.append(Diagnostic(codes.FEWER_DEVICES_THAN_REQUESTED,
                                              f"{subject}: asks for {request.count} device(s), only "
                                              f"{len(matched)} match in the whole inventory",
                                              request.position))
    shortfalls: list[PoolShortfall] = []
    if compiled is not None:
        shortfalls, short = pool_shortfalls(compiled, manifests.device_classes, class_matches)
        diagnostics.extend(short)
    diagnostics.sort(key=Diagnostic.sort_key)
    return CheckReport(len(devices), class_reports, claim_reports, diagnostics, shortfalls)
