"""The x-kubernetes-validations (CEL) rules of Kueue's CRDs for the emitted kinds, evaluated
with the `cel` library (PyPI common-expression-language).

Rules are compiled once, at import. Transition rules (those reading `oldSelf`) only run on
updates, never on the create a compiler's output amounts to, so they are listed for reference
but not evaluated. `self` is the object after the API server's defaulting
(kueue_spec.apply_defaults), as on a real server.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from compiler.cel.library import cel

from .kueue_spec import V1BETA1, V1BETA2
from .schema_check import format_path

BOTH = (V1BETA1, V1BETA2)
TAINT_EFFECTS = "['NoSchedule', 'PreferNoSchedule', 'NoExecute']"


@dataclass(frozen=True)
class CelRule:
    rule_id: str
    kind: str
    versions: tuple[str, ...]
    location: tuple[str, ...]  # path from the object root; "*" = every list item
    expression: str
    message: str
    program: Any = field(compare=False, repr=False, default=None)
    # See _reads: the fields of `self` the rule observes (None: all of it).
    reads: tuple[tuple[str, bool], ...] | None = field(compare=False, repr=False, default=None)


def _rule(rule_id: str, kind: str, versions: tuple[str, ...], location: tuple[str, ...],
          expression: str, message: str) -> CelRule:
    return CelRule(rule_id, kind, versions, location, expression, message, cel.compile(expression),
                   _reads(expression))


_SELF = re.compile(r"\bself\b")
_SELF_FIELD = re.compile(r"\bself\.([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*\()")  # not a method: self.all(...)


def _reads(expression: str) -> tuple[tuple[str, bool], ...] | None:
    """What of `self` a rule can observe: (field, whether its value matters), or None when the
    rule may observe all of it.

    When every `self` in the expression is `self.<field>`, nothing but those fields can be
    observed (no `size(self)`, `self.all(...)`, `self == ...` or `'k' in self`: they would see
    the other keys). A field written only as `has(self.<field>)` is observed only by whether it
    is there. A node reduced to what its rule observes evaluates exactly as the whole node does,
    so rules are evaluated, and memoized, on that reduction: queues that differ only in names
    share one evaluation."""
    fields = _SELF_FIELD.findall(expression)
    if len(fields) != len(_SELF.findall(expression)):
        return None
    def uses(pattern: str) -> int:
        return len(re.findall(pattern, expression))
    return tuple((name, uses(rf"\bself\.{name}\b") != uses(rf"\bhas\(self\.{name}\)"))
                 for name in dict.fromkeys(fields))


def _borrowing_limit_needs_cohort(field_name: str) -> str:
    return (f"!has(self.{field_name}) && has(self.resourceGroups) ? self.resourceGroups.all(rg, "
            "rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true")


_SAME_COUNT = "self.flavors.all(x, size(x.resources) == size(self.coveredResources))"
_SAME_COUNT_MSG = "flavors must have the same number of resources as the coveredResources"

RULES: tuple[CelRule, ...] = (
    # ResourceFlavor
    _rule("rf.topologyNeedsNodeLabel", "ResourceFlavor", BOTH, ("spec",),
          "!has(self.topologyName) || self.nodeLabels.size() >= 1",
          "at least one nodeLabel is required when topology is set"),
    _rule("rf.taintEffect", "ResourceFlavor", BOTH, ("spec", "nodeTaints"),
          f"self.all(x, x.effect in {TAINT_EFFECTS})",
          "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"),
    _rule("rf.tolerationEmptyKeyNeedsExists", "ResourceFlavor", BOTH, ("spec", "tolerations"),
          "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
          "operator must be Exists when 'key' is empty, which means 'match all values and all keys'"),
    _rule("rf.tolerationSecondsNeedsNoExecute", "ResourceFlavor", BOTH, ("spec", "tolerations"),
          "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
          "effect must be 'NoExecute' when 'tolerationSeconds' is set"),
    _rule("rf.tolerationOperator", "ResourceFlavor", BOTH, ("spec", "tolerations"),
          "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
          "supported toleration values: 'Equal'(default), 'Exists'"),
    _rule("rf.tolerationExistsHasNoValue", "ResourceFlavor", BOTH, ("spec", "tolerations"),
          "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
          "a value must be empty when 'operator' is 'Exists'"),
    _rule("rf.tolerationEffect", "ResourceFlavor", BOTH, ("spec", "tolerations"),
          f"self.all(x, !has(x.effect) || x.effect in {TAINT_EFFECTS})",
          "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"),
    # ClusterQueue
    _rule("cq.borrowingLimitNeedsCohort", "ClusterQueue", (V1BETA2,), ("spec",),
          _borrowing_limit_needs_cohort("cohortName"), "borrowingLimit must be nil when cohort is empty"),
    _rule("cq.borrowingLimitNeedsCohort", "ClusterQueue", (V1BETA1,), ("spec",),
          _borrowing_limit_needs_cohort("cohort"), "borrowingLimit must be nil when cohort is empty"),
    _rule("cq.preferenceNeedsTryNextFlavor", "ClusterQueue", BOTH, ("spec", "flavorFungibility"),
          "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')",
          "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor"),
    _rule("cq.reclaimNeverForbidsBorrowWithinCohort", "ClusterQueue", BOTH, ("spec", "preemption"),
          "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) && "
          "self.borrowWithinCohort.policy != 'Never')",
          "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"),
    _rule("cq.flavorResourceCount", "ClusterQueue", BOTH, ("spec", "resourceGroups", "*"),
          _SAME_COUNT, _SAME_COUNT_MSG),
    # Topology
    _rule("topology.levelsUnique", "Topology", BOTH, ("spec", "levels"),
          "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0", "must be unique"),
    _rule("topology.hostnameLast", "Topology", BOTH, ("spec", "levels"),
          "size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || "
          "self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'",
          "the kubernetes.io/hostname label can only be used at the lowest level of topology"),
    # Cohort
    _rule("cohort.flavorResourceCount", "Cohort", BOTH, ("spec", "resourceGroups", "*"),
          _SAME_COUNT, _SAME_COUNT_MSG),
)

# Transition rules of the same CRDs, not evaluated on create (see module docstring).
TRANSITION_RULES_NOT_EVALUATED = (
    "ResourceFlavor spec: topologyName / nodeLabels / tolerations are immutable when topologyName is set",
    "LocalQueue spec.clusterQueue: field is immutable",
    "Topology spec.levels: field is immutable",
)

_BY_KIND_VERSION: dict[tuple[str, str], tuple[CelRule, ...]] = {}
for _r in RULES:
    for _v in _r.versions:
        _BY_KIND_VERSION.setdefault((_r.kind, _v), ())
        _BY_KIND_VERSION[(_r.kind, _v)] += (_r,)


@dataclass(frozen=True)
class CelViolation:
    field_path: str
    message: str
    rule: str


def _nodes(value: Any, location: tuple[str, ...], path: list[Any]) -> Iterator[tuple[list[Any], Any]]:
    if not location:
        yield path, value
        return
    head, rest = location[0], location[1:]
    if head == "*":
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield from _nodes(item, rest, path + [i])
    elif isinstance(value, dict) and head in value:
        yield from _nodes(value[head], rest, path + [head])


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer"}.get(type(value), "value")


# Outcomes of (rule, self) already computed: a policy's many ClusterQueues repeat the same
# preemption / flavorFungibility blocks and resource groups, so most evaluations are lookups.
_MEMO: dict[tuple[str, str, str], str | None] = {}
_MEMO_LIMIT = 200_000


def _observed(rule: CelRule, node: Any) -> Any:
    """`node` reduced to what `rule` can observe of it (see _reads)."""
    if rule.reads is None or not isinstance(node, dict):
        return node
    # A field read only by has() keeps its presence; null stays null, in case a reader told a
    # null field from a missing one.
    return {name: node[name] if value_matters or node[name] is None else True
            for name, value_matters in rule.reads if name in node}


def _run(rule: CelRule, node: Any) -> str | None:
    try:
        result = rule.program.execute({"self": node})
    except KeyError as exc:
        return f"no such key: {exc.args[0]} evaluating rule: {rule.message}"
    except (ValueError, TypeError, RuntimeError) as exc:
        return f"{exc} evaluating rule: {rule.message}"
    return None if result is True else rule.message


def _evaluate(rule: CelRule, node: Any) -> str | None:
    """None if the rule holds, else the reason it does not (its message, or an evaluation error)."""
    node = _observed(rule, node)
    key = (rule.rule_id, rule.expression, json.dumps(node, sort_keys=True, separators=(",", ":")))
    if key in _MEMO:
        return _MEMO[key]
    outcome = _run(rule, node)
    if len(_MEMO) < _MEMO_LIMIT:
        _MEMO[key] = outcome
    return outcome


def check(kind: str, api_version: str, defaulted: dict[str, Any]) -> list[CelViolation]:
    found = []
    for rule in _BY_KIND_VERSION.get((kind, api_version), ()):
        for path, node in _nodes(defaulted, rule.location, []):
            outcome = _evaluate(rule, node)
            if outcome is not None:
                leaf = format_path(path).rsplit(".", 1)[-1]
                found.append(CelViolation(format_path(path),
                                          f'{leaf}: Invalid value: "{_type_name(node)}": {outcome}', rule.rule_id))
    return found
