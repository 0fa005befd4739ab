"""verify_objects never raises on malformed objects: whatever the build stage hands it, the
answer is a list of problems (the compiler turns them into diagnostics, never a traceback)."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.verify import ObjectProblem, verify_device_class_mappings, verify_objects
from kp_testing.verify_strategies import BY_KIND, V1BETA1, V1BETA2

JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, allow_infinity=False),
              st.sampled_from(["", "x", "cpu", "-1", "Exists", "All", "device.driver == 'a'"])),
    lambda children: st.one_of(st.lists(children, max_size=3),
                               st.dictionaries(st.sampled_from(["name", "spec", "resources", "selectors", "cel",
                                                                "expression", "requests", "exactly", "count",
                                                                "nominalQuota", "flavors", "coveredResources",
                                                                "metadata", "labels", "key", "operator"]),
                                               children, max_size=4)),
    max_leaves=12)


@st.composite
def damaged(draw):
    """A generated Kueue object with one subtree replaced by arbitrary JSON."""
    kind = draw(st.sampled_from(sorted(BY_KIND)))
    obj = draw(BY_KIND[kind](draw(st.sampled_from([V1BETA1, V1BETA2]))))
    node = obj
    for _ in range(draw(st.integers(0, 4))):
        children = [k for k, v in node.items() if isinstance(v, dict)] if isinstance(node, dict) else []
        if not children:
            break
        node = node[draw(st.sampled_from(sorted(children)))]
    if isinstance(node, dict) and node:
        node[draw(st.sampled_from(sorted(node)))] = draw(JSON)
    return obj


BUILTIN = st.fixed_dictionaries({
    "apiVersion": st.sampled_from(["resource.k8s.io/v1", "resource.k8s.io/v1beta1", "v1", "apps/v1"]),
    "kind": st.sampled_from(["DeviceClass", "ResourceClaimTemplate", "ConfigMap", "Namespace", "Deployment"]),
    "metadata": st.one_of(JSON, st.just({"name": "x", "namespace": "y"})),
    "spec": JSON,
})


def _check(found):
    assert isinstance(found, list) and all(isinstance(p, ObjectProblem) for p in found)


@settings(max_examples=150, deadline=None)
@given(objects=st.lists(st.one_of(damaged(), BUILTIN, JSON), min_size=1, max_size=3))
def test_verify_objects_never_raises(objects):
    before = copy.deepcopy(objects)
    _check(verify_objects(objects, "1.34", "0.19"))
    assert objects == before


@settings(max_examples=100, deadline=None)
@given(fragment=st.one_of(
    st.fixed_dictionaries({"resources": st.fixed_dictionaries({"deviceClassMappings": JSON})}),
    st.fixed_dictionaries({"deviceClassMappings": st.lists(JSON, max_size=3)}),
    st.dictionaries(st.sampled_from(["resources", "featureGates", "metadata"]), JSON, max_size=3)))
def test_verify_device_class_mappings_never_raises(fragment):
    _check(verify_device_class_mappings(fragment))


def test_an_api_version_too_long_for_a_file_name_is_an_unknown_kind_not_an_os_error() -> None:
    """Found by the live mutation test: the built-in schema lookup made a file name of the
    apiVersion, and 300 characters of it raised OSError (File name too long)."""
    from compiler.verify import verify_objects
    obj = {"apiVersion": "resource.k8s.io/v1-" + "y" * 300, "kind": "ResourceClaimTemplate",
           "metadata": {"name": "x", "namespace": "a"}}
    problems = verify_objects([obj], "1.36", "0.19")
    assert [p.rule for p in problems] == ["kind.unknown"]
