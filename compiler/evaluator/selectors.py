"""Kubernetes label selectors: a LabelSelector (matchLabels, matchExpressions; a ClusterQueue's
namespaceSelector) and a node selector requirement (node affinity, with Gt and Lt), matched
against labels as the API machinery's labels.Selector and the scheduler's nodeaffinity do."""

from __future__ import annotations


def requirement_values(requirement: dict) -> list[str]:
    """A selector requirement's `values` as strings (anything but a list, which the API server
    refuses, as none)."""
    values = requirement.get("values")
    return [str(v) for v in values] if isinstance(values, list) else []


def requirement_matches(requirement: dict, labels: dict[str, str], numeric: bool = False) -> bool:
    """Whether `labels` satisfy one requirement: In, NotIn, Exists, DoesNotExist, and with
    `numeric` (a node selector requirement) Gt and Lt; any other operator matches nothing."""
    key = requirement.get("key")
    op = requirement.get("operator")
    values = requirement_values(requirement)
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if numeric and op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def label_selector_matches(selector: dict | None, labels: dict[str, str]) -> bool:
    """Whether a LabelSelector selects `labels`. None selects nothing, {} everything; an
    expression that is not a mapping, or whose key is not a string, the API server refuses:
    such a selector selects nothing."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(str(key)) != str(value):
            return False
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, dict) or not isinstance(expr.get("key"), str):
            return False
        if not requirement_matches(expr, labels):
            return False
    return True
