"""The one label-selector matcher: a ClusterQueue's namespaceSelector (a LabelSelector) and a
pod set's node affinity (node selector requirements, with Gt and Lt) read the same requirement
the same way, and differ only where the Kubernetes API does."""

from __future__ import annotations

import pytest

from compiler.evaluator.selectors import label_selector_matches, requirement_matches

LABELS = {"team": "a", "tier": "7"}


@pytest.mark.parametrize("requirement, matches", [
    ({"key": "team", "operator": "In", "values": ["a", "b"]}, True),
    ({"key": "team", "operator": "In", "values": ["b"]}, False),
    ({"key": "team", "operator": "NotIn", "values": ["b"]}, True),
    ({"key": "absent", "operator": "NotIn", "values": ["b"]}, True),
    ({"key": "team", "operator": "Exists"}, True),
    ({"key": "absent", "operator": "DoesNotExist"}, True),
    ({"key": "team", "operator": "In", "values": "a"}, False),  # values not a list: none
    ({"key": "team", "operator": "Equals", "values": ["a"]}, False),
])
def test_a_requirement_reads_the_same_in_both_selectors(requirement, matches):
    assert requirement_matches(requirement, LABELS, numeric=True) is matches
    assert label_selector_matches({"matchExpressions": [requirement]}, LABELS) is matches


def test_gt_and_lt_are_node_affinity_operators_only():
    gt = {"key": "tier", "operator": "Gt", "values": ["5"]}
    assert requirement_matches(gt, LABELS, numeric=True)
    assert not requirement_matches({**gt, "operator": "Lt"}, LABELS, numeric=True)
    assert not requirement_matches({**gt, "values": ["x"]}, LABELS, numeric=True)
    assert not label_selector_matches({"matchExpressions": [gt]}, LABELS)


def test_a_label_selector_that_the_api_server_refuses_selects_nothing():
    assert not label_selector_matches(None, LABELS)
    assert label_selector_matches({}, LABELS)
    assert label_selector_matches({"matchLabels": {"team": "a"}}, LABELS)
    assert not label_selector_matches({"matchLabels": {"team": "b"}}, LABELS)
    assert not label_selector_matches({"matchExpressions": ["team"]}, LABELS)
    assert not label_selector_matches({"matchExpressions": [{"key": 3, "operator": "DoesNotExist"}]}, LABELS)
