"""The compiled fast path (schema_check.compile_fast) says "valid" exactly when jsonschema finds
no error, for every Kueue kind and version, on generated valid and invalid objects."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.verify import kueue_spec
from compiler.verify.schema_check import KubernetesValidator, compile_fast
from kp_testing.verify_strategies import BY_KIND, V1BETA1, V1BETA2, with_unknown_field


@pytest.mark.parametrize("version", [V1BETA1, V1BETA2])
@pytest.mark.parametrize("kind", list(kueue_spec.KINDS))
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_fast_path_agrees_with_jsonschema(kind, version, data):
    schema = kueue_spec.schema_for(version, kind)
    obj = data.draw(with_unknown_field(BY_KIND[kind](version)))
    valid = KubernetesValidator(schema).is_valid(obj)
    assert compile_fast(schema)(obj) == valid
    # One compiled check per kind and version for the whole run: its answers remembered per
    # distinct list (schema_check._by_value) stay jsonschema's, example after example.
    shared = _SHARED.setdefault((kind, version), compile_fast(schema))
    assert shared(obj) == valid and shared(obj) == valid  # the second time from memory


_SHARED: dict = {}


@pytest.mark.parametrize("value,valid", [
    (1, True), ("1", True), (1.0, True), (1.5, False), (True, False), (None, False), ("x", False),
])
def test_fast_path_types_follow_json_schema(value, valid):
    schema = {"type": ["integer", "string"], "pattern": "^[0-9]+$"}
    assert compile_fast(schema)(value) is valid
    assert KubernetesValidator(schema).is_valid(value) is valid


def test_fast_path_refuses_keywords_it_does_not_know():
    with pytest.raises(ValueError, match="does not support"):
        compile_fast({"anyOf": [{"type": "string"}]})


def test_lists_equal_as_text_but_not_as_values_are_told_apart():
    check = compile_fast({"type": "array", "items": {"type": "integer"}})
    assert check([1]) and not check([True]) and not check(["1"]) and not check([1.5]) and check([1])


@pytest.mark.parametrize("version", [V1BETA1, V1BETA2])
@pytest.mark.parametrize("kind", ["ClusterQueue", "Cohort", "ResourceFlavor"])
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_a_cel_rule_judges_what_it_observes_as_it_judges_the_whole_node(kind, version, data):
    """kueue_cel evaluates (and remembers) a rule on the part of `self` the rule can observe."""
    from compiler.verify import kueue_cel
    schema = kueue_spec.schema_for(version, kind)
    obj = kueue_spec.apply_defaults(data.draw(BY_KIND[kind](version)), schema)
    for rule in kueue_cel._BY_KIND_VERSION.get((kind, version), ()):
        for _, node in kueue_cel._nodes(obj, rule.location, []):
            assert kueue_cel._run(rule, kueue_cel._observed(rule, node)) == kueue_cel._run(rule, node), rule.rule_id
