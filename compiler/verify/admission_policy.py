"""MutatingAdmissionPolicy and its binding, checked as kube-apiserver validates them.

The OpenAPI schema (builtin.py) checks types and field names only; the API server's own
validation (k8s.io/kubernetes pkg/apis/admissionregistration/validation, v1.36:
validateMutatingAdmissionPolicySpec, validateMatchResources, validateMutation,
validateMatchConditions, validateMutatingAdmissionPolicyBindingSpec) refuses more. Defaulting
runs first there (failurePolicy Fail, matchPolicy Equivalent, empty selectors), so a field the
defaults fill is not required here; everything else these functions require is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .cel_syntax import syntax_error

KINDS = frozenset({"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"})
API_VERSIONS = frozenset({"admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1beta1",
                          "admissionregistration.k8s.io/v1alpha1"})
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
MUTATING_OPERATIONS = ("*", "CONNECT", "CREATE", "UPDATE")
REINVOCATION_POLICIES = ("IfNeeded", "Never")
PATCH_TYPES = {"ApplyConfiguration": "applyConfiguration", "JSONPatch": "jsonPatch"}
SELECTOR_OPERATORS = ("DoesNotExist", "Exists", "In", "NotIn")
MAX_MATCH_CONDITIONS = 64
_QUALIFIED_NAME = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                             r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class Refusal:
    field_path: str
    message: str
    rule: str


def applies_to(api_version: str, kind: str) -> bool:
    return kind in KINDS and api_version in API_VERSIONS


def check(obj: dict) -> list[Refusal]:
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    found = _policy(spec) if obj.get("kind") == "MutatingAdmissionPolicy" else _binding(spec)
    return list(found)


def _not_supported(path: str, value: object, allowed: tuple[str, ...], rule: str) -> Refusal:
    shown = ", ".join(f'"{a}"' for a in allowed)
    return Refusal(path, f'Unsupported value: "{value}": supported values: {shown}', rule)


def _policy(spec: dict) -> Iterator[Refusal]:
    failure = spec.get("failurePolicy", "Fail")
    if failure not in FAILURE_POLICIES:
        yield _not_supported("spec.failurePolicy", failure, FAILURE_POLICIES, "map.failurePolicy")
    constraints = spec.get("matchConstraints")
    if not isinstance(constraints, dict):
        yield Refusal("spec.matchConstraints", "Required value", "map.matchConstraints.required")
    else:
        yield from _match_resources(constraints, "spec.matchConstraints")
        if not constraints.get("resourceRules"):
            # at least one resourceRule gives the expressions their type information
            yield Refusal("spec.matchConstraints.resourceRules", "Required value", "map.resourceRules.required")
    yield from _match_conditions(spec.get("matchConditions") or [])
    mutations = spec.get("mutations") or []
    if not mutations:
        yield Refusal("spec.mutations", "Required value: mutations must contain at least one item",
                      "map.mutations.required")
    for index, mutation in enumerate(mutations):
        yield from _mutation(mutation if isinstance(mutation, dict) else {}, f"spec.mutations[{index}]")
    reinvocation = spec.get("reinvocationPolicy")
    if not reinvocation:
        yield Refusal("spec.reinvocationPolicy", "Required value", "map.reinvocationPolicy.required")
    elif reinvocation not in REINVOCATION_POLICIES:
        yield _not_supported("spec.reinvocationPolicy", reinvocation, REINVOCATION_POLICIES, "map.reinvocationPolicy")


def _match_resources(match: dict, path: str) -> Iterator[Refusal]:
    policy = match.get("matchPolicy", "Equivalent")
    if policy not in MATCH_POLICIES:
        yield _not_supported(f"{path}.matchPolicy", policy, MATCH_POLICIES, "map.matchPolicy")
    for selector_field in ("namespaceSelector", "objectSelector"):
        selector = match.get(selector_field)
        if isinstance(selector, dict):
            yield from _label_selector(selector, f"{path}.{selector_field}")
    for rules_field in ("resourceRules", "excludeResourceRules"):
        for index, rule in enumerate(match.get(rules_field) or []):
            rule_path = f"{path}.{rules_field}[{index}]"
            rule = rule if isinstance(rule, dict) else {}
            for required in ("apiGroups", "apiVersions", "operations", "resources"):
                if not rule.get(required):
                    yield Refusal(f"{rule_path}.{required}", "Required value", f"map.rule.{required}")
            # A wildcard stands alone (validateRule, validateRuleWithOperations).
            for listed, words in (("apiGroups", "API groups"), ("apiVersions", "API versions"),
                                  ("operations", "operations")):
                values = rule.get(listed) or []
                if isinstance(values, list) and len(values) > 1 and "*" in values:
                    yield Refusal(f"{rule_path}.{listed}",
                                  f"Invalid value: if '*' is present, must not specify other {words}",
                                  f"map.rule.{listed}.wildcard")
            for operation in rule.get("operations") or []:
                if operation not in MUTATING_OPERATIONS:
                    # it is only possible to mutate create, update and connect requests
                    yield _not_supported(f"{path}.resourceRules.operations", operation, MUTATING_OPERATIONS,
                                         "map.rule.operations")
            scope = rule.get("scope", "*")
            if scope not in ("*", "Cluster", "Namespaced"):
                yield _not_supported(f"{rule_path}.scope", scope, ("*", "Cluster", "Namespaced"), "map.rule.scope")


def _label_selector(selector: dict, path: str) -> Iterator[Refusal]:
    for key, value in (selector.get("matchLabels") or {}).items():
        if not _QUALIFIED_NAME.match(str(key)):
            yield Refusal(f"{path}.matchLabels", f'Invalid value: "{key}": not a qualified name', "map.selector.key")
        if not _LABEL_VALUE.match(str(value)):
            yield Refusal(f"{path}.matchLabels", f'Invalid value: "{value}": not a label value', "map.selector.value")
    for index, expression in enumerate(selector.get("matchExpressions") or []):
        here = f"{path}.matchExpressions[{index}]"
        operator, values = expression.get("operator"), expression.get("values") or []
        if not _QUALIFIED_NAME.match(str(expression.get("key", ""))):
            yield Refusal(f"{here}.key", f'Invalid value: "{expression.get("key")}": not a qualified name',
                          "map.selector.key")
        if operator not in SELECTOR_OPERATORS:
            yield _not_supported(f"{here}.operator", operator, SELECTOR_OPERATORS, "map.selector.operator")
        elif operator in ("In", "NotIn") and not values:
            yield Refusal(f"{here}.values", "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                          "map.selector.values")
        elif operator in ("Exists", "DoesNotExist") and values:
            yield Refusal(f"{here}.values", "Forbidden: may not be specified when `operator` is 'Exists' or "
                                            "'DoesNotExist'", "map.selector.values")
        for value in values:
            if not _LABEL_VALUE.match(str(value)):
                yield Refusal(f"{here}.values", f'Invalid value: "{value}": not a label value', "map.selector.value")


def _match_conditions(conditions: list) -> Iterator[Refusal]:
    if len(conditions) > MAX_MATCH_CONDITIONS:
        yield Refusal("spec.matchConditions", f"Too many: {len(conditions)}: must have at most "
                                              f"{MAX_MATCH_CONDITIONS} items", "map.matchConditions.max")
    seen: set[str] = set()
    for index, condition in enumerate(conditions):
        here = f"spec.matchConditions[{index}]"
        condition = condition if isinstance(condition, dict) else {}
        name = str(condition.get("name") or "")
        if not name:
            yield Refusal(f"{here}.name", "Required value", "map.matchCondition.name")
        elif not _QUALIFIED_NAME.match(name):
            yield Refusal(f"{here}.name", f'Invalid value: "{name}": not a qualified name', "map.matchCondition.name")
        elif name in seen:
            yield Refusal(f"{here}.name", f'Duplicate value: "{name}"', "map.matchCondition.duplicate")
        seen.add(name)
        yield from _expression(condition.get("expression"), f"{here}.expression", "map.matchCondition.expression")


def _mutation(mutation: dict, path: str) -> Iterator[Refusal]:
    patch_type = mutation.get("patchType")
    if not patch_type:
        yield Refusal(f"{path}.patchType", "Required value", "map.mutation.patchType")
        return
    if patch_type not in PATCH_TYPES:
        yield _not_supported(f"{path}.patchType", patch_type, tuple(PATCH_TYPES), "map.mutation.patchType")
        return
    wanted = PATCH_TYPES[patch_type]
    for other in PATCH_TYPES.values():
        if other != wanted and mutation.get(other) is not None:
            yield Refusal(f"{path}.{other}", f"Forbidden: must not be specified when patchType is {patch_type}",
                          "map.mutation.other")
    body = mutation.get(wanted)
    if not isinstance(body, dict):
        yield Refusal(f"{path}.{wanted}", f"Required value: must be specified when patchType is {patch_type}",
                      "map.mutation.body")
        return
    yield from _expression(body.get("expression"), f"{path}.{wanted}.expression", "map.mutation.expression")


def _expression(expression: object, path: str, rule: str) -> Iterator[Refusal]:
    if not isinstance(expression, str) or not expression.strip():
        yield Refusal(path, "Required value", rule)
        return
    problem = syntax_error(expression)
    if problem is not None:
        yield Refusal(path, f"Invalid value: compilation failed: {problem}", rule + ".compile")


def _binding(spec: dict) -> Iterator[Refusal]:
    name = spec.get("policyName")
    if not name:
        yield Refusal("spec.policyName", "Required value", "mapb.policyName")
    elif not _DNS_SUBDOMAIN.match(str(name)) or len(str(name)) > 253:
        yield Refusal("spec.policyName", f'Invalid value: "{name}": a lowercase RFC 1123 subdomain', "mapb.policyName")
    match = spec.get("matchResources")
    if isinstance(match, dict):
        yield from _match_resources(match, "spec.matchResources")


def unbound(objects: list[dict]) -> Iterator[tuple[int, str]]:
    """(index, policy name) of each binding whose policy is not among the objects: the API server
    accepts it, but it binds nothing, so a team's priority default would silently not apply."""
    policies = {(o.get("apiVersion"), (o.get("metadata") or {}).get("name")) for o in objects
                if isinstance(o, dict) and o.get("kind") == "MutatingAdmissionPolicy"}
    for index, obj in enumerate(objects):
        if isinstance(obj, dict) and obj.get("kind") == "MutatingAdmissionPolicyBinding":
            name = (obj.get("spec") or {}).get("policyName")
            if name and (obj.get("apiVersion"), name) not in policies:
                yield index, str(name)
