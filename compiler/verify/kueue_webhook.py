"""The rules Kueue's validating webhooks add on top of the CRD schema (Kueue v0.19,
pkg/webhooks/{clusterqueue,cohort,resourceflavor}_webhook.go and common.go).

The webhooks validate the v1beta2 hub type; a v1beta1 object is converted first, so the same
rules apply to both versions (`spec.cohort` is the v1beta1 name of `spec.cohortName`).
Functions receive the object after defaulting and after it passed the structural schema, so
types are right. LocalQueue and WorkloadPriorityClass have no validating webhook.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from compiler.core.quantity import QUANTITY_PATTERN, QuantityError, Wording
from compiler.core.quantity import parse_quantity as parse_any_quantity

from . import k8s_names
from .kueue_spec import V1BETA1


@dataclass(frozen=True)
class WebhookViolation:
    field_path: str
    message: str
    rule: str


NEGATIVE = "must be greater than or equal to 0"
ONE_NANO = Fraction(1, 10**9)
_GRAMMAR = f"quantities must match the regular expression '{QUANTITY_PATTERN}'"
# The apiserver's wording; a YAML float never reaches it (the schema types quantities int|string).
_WORDING = Wording(bad_type="a quantity must be an integer or a string", bad_text=_GRAMMAR, bad_exponent=_GRAMMAR)


def parse_quantity(value: object) -> Fraction:
    """A quantity from a manifest value, exactly as written (no blanks trimmed)."""
    return parse_any_quantity(value, accept=(str, int), strip=False, wording=_WORDING)


class _Collector:
    def __init__(self) -> None:
        self.found: list[WebhookViolation] = []

    def add(self, path: str, message: str, rule: str) -> None:
        self.found.append(WebhookViolation(path, message, rule))


def _leaf(path: str) -> str:
    return path.rsplit(".", 1)[-1]


def _invalid(c: _Collector, path: str, value: Any, detail: str, rule: str) -> None:
    c.add(path, f"{_leaf(path)}: Invalid value: {json.dumps(str(value))}: {detail}", rule)


# --- resource groups (ClusterQueue and Cohort) -------------------------------------------------

def _resource_groups(c: _Collector, groups: list[dict], *, has_parent: bool, is_cohort: bool) -> None:
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    parent_word = "parent" if is_cohort else "cohort"
    for i, group in enumerate(groups):
        gpath = f"spec.resourceGroups[{i}]"
        covered = group["coveredResources"]
        for j, name in enumerate(covered):
            rpath = f"{gpath}.coveredResources[{j}]"
            for msg in k8s_names.qualified_name(name):
                _invalid(c, rpath, name, msg, "webhook.resourceName.invalid")
            if name in seen_resources:
                c.add(rpath, f'coveredResources[{j}]: Duplicate value: "{name}": resource "{name}" is already '
                      "covered by an earlier resourceGroup; a resource may appear in only one group",
                      "webhook.resourceGroups.duplicateResource")
            seen_resources.add(name)
        for j, flavor in enumerate(group["flavors"]):
            fpath = f"{gpath}.flavors[{j}]"
            _flavor_quotas(c, flavor, covered, fpath, has_parent=has_parent, is_cohort=is_cohort,
                           parent_word=parent_word)
            if flavor["name"] in seen_flavors:
                c.add(f"{fpath}.name", f'name: Duplicate value: "{flavor["name"]}": flavor "{flavor["name"]}" '
                      "is already used by an earlier resourceGroup; a flavor may appear in only one group",
                      "webhook.resourceGroups.duplicateFlavor")
            seen_flavors.add(flavor["name"])


def _flavor_quotas(c: _Collector, flavor: dict, covered: list[str], fpath: str, *, has_parent: bool,
                   is_cohort: bool, parent_word: str) -> None:
    for i, quota in enumerate(flavor["resources"]):
        if i >= len(covered):
            break  # the CEL rule on the group reports the length mismatch
        qpath = f"{fpath}.resources[{i}]"
        if quota["name"] != covered[i]:
            c.add(f"{qpath}.name", f'name: Invalid value: "{quota["name"]}": must match the name in '
                  f'coveredResources (flavor "{flavor["name"]}" lists "{quota["name"]}" where coveredResources[{i}] '
                  f'is "{covered[i]}")', "webhook.resources.nameOrder")
        nominal = parse_quantity(quota["nominalQuota"])
        if nominal < 0:
            _invalid(c, f"{qpath}.nominalQuota", quota["nominalQuota"], NEGATIVE, "webhook.quantity.negative")
        for limit_name in ("borrowingLimit", "lendingLimit"):
            if limit_name not in quota:
                continue
            raw = quota[limit_name]
            lpath = f"{qpath}.{limit_name}"
            if parse_quantity(raw) < 0:
                _invalid(c, lpath, raw, NEGATIVE, "webhook.quantity.negative")
            if not has_parent:
                _invalid(c, lpath, raw, f"must be nil when {parent_word} is empty",
                         f"webhook.limit.without{parent_word.capitalize()}")
        if "lendingLimit" in quota and not is_cohort:
            lend = quota["lendingLimit"]
            if parse_quantity(lend) > nominal:
                c.add(f"{qpath}.lendingLimit",
                      f"lendingLimit {lend} must be less than or equal to the nominalQuota "
                      f"{quota['nominalQuota']}", "webhook.lendingLimit.aboveNominal")


def _totals(c: _Collector, groups: list[dict]) -> None:
    flavors = sum(len(g["flavors"]) for g in groups)
    if flavors > 256:
        c.add("spec.resourceGroups", "resourceGroups: Invalid value: "
              f"{flavors}: total number of flavors across all resourceGroups must be ≤ 256, got {flavors}",
              "webhook.totals.flavors")
    resources = sum(len(g["coveredResources"]) for g in groups)
    if resources > 256:
        c.add("spec.resourceGroups", "resourceGroups: Invalid value: "
              f"{resources}: total number of covered resources across all resourceGroups must be ≤ 256, "
              f"got {resources}", "webhook.totals.coveredResources")
    for i, group in enumerate(groups):
        combos = sum(len(f["resources"]) for f in group["flavors"])
        if combos > 512:
            c.add(f"spec.resourceGroups[{i}]", f"resourceGroups[{i}]: Invalid value: {combos}: number of "
                  f"flavor-resource combinations in a resourceGroup must be ≤ 512, got {combos}",
                  "webhook.totals.combinations")


def _fair_sharing(c: _Collector, spec: dict) -> None:
    weight_raw = spec.get("fairSharing", {}).get("weight")
    if weight_raw is None:
        return
    weight = parse_quantity(weight_raw)
    path = "spec.fairSharing"
    if weight < 0:
        _invalid(c, path, weight_raw, f"weight {NEGATIVE}", "webhook.fairSharing.negativeWeight")
    if 0 < weight <= ONE_NANO:
        _invalid(c, path, weight_raw, "When not 0, weight must be > 10e-9", "webhook.fairSharing.tinyWeight")


# --- label selector (apimachinery ValidateLabelSelector) ---------------------------------------

def _label_map(c: _Collector, labels: dict[str, str], path: str, rule: str) -> None:
    for key in sorted(labels):
        for msg in k8s_names.label_key(key):
            _invalid(c, path, key, msg, f"{rule}.key")
        for msg in k8s_names.label_value(labels[key]):
            _invalid(c, path, labels[key], msg, f"{rule}.value")


def _label_selector(c: _Collector, selector: dict | None, path: str) -> None:
    if not selector:
        return
    _label_map(c, selector.get("matchLabels", {}), f"{path}.matchLabels", "webhook.namespaceSelector.matchLabels")
    for i, req in enumerate(selector.get("matchExpressions", [])):
        rpath = f"{path}.matchExpressions[{i}]"
        op, values = req["operator"], req.get("values", [])
        if op in ("In", "NotIn"):
            if not values:
                c.add(f"{rpath}.values", "values: Required value: must be specified when `operator` is 'In' or "
                      "'NotIn'", "webhook.namespaceSelector.valuesRequired")
        elif op in ("Exists", "DoesNotExist"):
            if values:
                c.add(f"{rpath}.values", "values: Forbidden: may not be specified when `operator` is 'Exists' or "
                      "'DoesNotExist'", "webhook.namespaceSelector.valuesForbidden")
        else:
            c.add(f"{rpath}.operator", f'operator: Unsupported value: "{op}": supported values: "In", "NotIn", '
                  '"Exists", "DoesNotExist"', "webhook.namespaceSelector.operator")
        for msg in k8s_names.label_key(req["key"]):
            _invalid(c, f"{rpath}.key", req["key"], msg, "webhook.namespaceSelector.key")
        for j, value in enumerate(values):
            for msg in k8s_names.label_value(value):
                _invalid(c, f"{rpath}.values[{j}]", value, msg, "webhook.namespaceSelector.value")


# --- kinds -------------------------------------------------------------------------------------

def _cluster_queue(c: _Collector, obj: dict, api_version: str) -> None:
    spec = obj.get("spec") or {}
    cohort = spec.get("cohort" if api_version == V1BETA1 else "cohortName", "")
    groups = spec.get("resourceGroups", [])
    _resource_groups(c, groups, has_parent=bool(cohort), is_cohort=False)
    _label_selector(c, spec.get("namespaceSelector"), "spec.namespaceSelector")
    preemption = spec.get("preemption")
    if preemption is not None and preemption.get("reclaimWithinCohort") == "Never" and \
            preemption.get("borrowWithinCohort", {}).get("policy", "Never") != "Never":
        c.add("spec.preemption", 'preemption: Invalid value: "object": reclaimWithinCohort=Never and '
              "borrowWithinCohort.Policy!=Never", "webhook.preemption.reclaimNeverBorrow")
    fungibility = spec.get("flavorFungibility")
    if fungibility is not None and "preference" in fungibility:
        # v1beta1's Borrow / Preempt convert to MayStopSearch: not TryNextFlavor either.
        if fungibility.get("whenCanBorrow") != "TryNextFlavor" or fungibility.get("whenCanPreempt") != "TryNextFlavor":
            pref = fungibility["preference"]
            c.add("spec.flavorFungibility.preference", f'preference: Invalid value: "{pref}": preference "{pref}" '
                  "requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor",
                  "webhook.flavorFungibility.preference")
    _fair_sharing(c, spec)
    _totals(c, groups)
    strategy = spec.get("admissionChecksStrategy")
    if strategy:
        flavors = [f["name"] for g in groups for f in g["flavors"]]
        allowed = ", ".join(json.dumps(f) for f in sorted(set(flavors)))
        for i, check in enumerate(strategy.get("admissionChecks", [])):
            for j, flavor in enumerate(check.get("onFlavors", [])):
                if flavor not in flavors:
                    c.add(f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]",
                          f'onFlavors[{j}]: Unsupported value: "{flavor}": supported values: {allowed or "none"} '
                          "(the flavors of this ClusterQueue)", "webhook.admissionChecks.onFlavors")


def _cohort(c: _Collector, obj: dict, api_version: str) -> None:
    spec = obj.get("spec") or {}
    _fair_sharing(c, spec)
    _resource_groups(c, spec.get("resourceGroups", []), has_parent=bool(spec.get("parentName")), is_cohort=True)


def _resource_flavor(c: _Collector, obj: dict, api_version: str) -> None:
    spec = obj.get("spec") or {}
    _label_map(c, spec.get("nodeLabels", {}), "spec.nodeLabels", "webhook.nodeLabels")
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(spec.get("nodeTaints", [])):
        tpath = f"spec.nodeTaints[{i}]"
        for msg in k8s_names.label_key(taint["key"]):
            _invalid(c, f"{tpath}.key", taint["key"], msg, "webhook.taint.key")
        for msg in k8s_names.label_value(taint.get("value", "")):
            _invalid(c, f"{tpath}.value", taint.get("value", ""), msg, "webhook.taint.value")
        ident = (taint["key"], taint["effect"])
        if ident in seen:
            c.add(tpath, f'nodeTaints[{i}]: Duplicate value: key "{taint["key"]}", effect "{taint["effect"]}": '
                  "taints must be unique by key and effect pair", "webhook.taint.duplicate")
            continue
        seen.add(ident)
    for i, toleration in enumerate(spec.get("tolerations", [])):
        key = toleration.get("key", "")
        if key:
            for msg in k8s_names.label_key(key):
                _invalid(c, f"spec.tolerations[{i}].key", key, msg, "webhook.toleration.key")


_BY_KIND = {"ClusterQueue": _cluster_queue, "Cohort": _cohort, "ResourceFlavor": _resource_flavor}


def check(kind: str, api_version: str, defaulted: dict[str, Any]) -> list[WebhookViolation]:
    validate = _BY_KIND.get(kind)
    if validate is None:
        return []
    c = _Collector()
    try:
        validate(c, defaulted, api_version)
    except QuantityError as error:
        # The schema's pattern admits any exponent; the parser's bounds do not (see quantity.py).
        c.add("spec", f"spec: Invalid value: {error}", "webhook.quantity.range")
    return c.found
