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
    assert compile_fast(schema)(obj) == KubernetesValidator(schema).is_valid(obj)


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
