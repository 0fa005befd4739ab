"""Built-in kinds: strict validation with kubernetes-validate's schemas at the cluster's
Kubernetes version, version gates, and patches (ConfigMap, Deployment) skipped; Namespaces are full objects."""

from __future__ import annotations

import pytest

from compiler.core import codes
from compiler.verify import verify_objects
from compiler.verify.builtin import bundled_versions, schema_version_for


def device_class(api: str = "resource.k8s.io/v1", **spec) -> dict:
    body = {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                                 "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"}}]}
    body.update(spec)
    return {"apiVersion": api, "kind": "DeviceClass", "metadata": {"name": "h100-3g40gb.gpu.example.com"},
            "spec": body}


def claim_template(count=1, namespace: str | None = "team-a") -> dict:
    meta = {"name": "h100-3g"}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": meta,
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "mig.nvidia.com", "allocationMode": "ExactCount",
                                            "count": count}}]}}}}


def test_valid_dra_objects_at_1_34():
    assert verify_objects([device_class(), claim_template()], "1.34", "0.19") == []


def test_resource_v1_is_gated_before_1_34():
    found = verify_objects([device_class()], "1.33", "0.19")
    assert [(p.code, p.field_path, p.rule) for p in found] == [(codes.VERSION_GATE, "apiVersion",
                                                                "version.kubernetesTooOld")]
    assert found[0].message == ("apiVersion: DeviceClass resource.k8s.io/v1 is served from Kubernetes 1.34; "
                                "this cluster runs Kubernetes 1.33")


def test_older_api_version_at_older_cluster():
    assert verify_objects([device_class("resource.k8s.io/v1beta1")], "1.32", "0.19") == []


def test_unknown_field_and_wrong_type_in_builtin_kinds():
    bad = device_class(selector={"cel": {"expression": "true"}})
    found = verify_objects([bad, claim_template(count="one")], "1.34", "0.19")
    assert [(p.index, p.code, p.field_path) for p in found] == [
        (0, codes.K8S_SCHEMA, "spec.selector"),
        (1, codes.K8S_SCHEMA, "spec.spec.devices.requests[0].exactly.count")]
    assert found[0].message == 'unknown field "spec.selector"'
    assert "must be of type integer" in found[1].message


def test_namespaced_builtin_needs_a_namespace():
    found = verify_objects([claim_template(namespace=None)], "1.34", "0.19")
    assert [(p.code, p.rule) for p in found] == [(codes.OBJECT_METADATA, "metadata.namespace.required")]


def test_patches_are_not_validated_as_full_objects():
    deployment_patch = {"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
                        "spec": {"template": {"spec": {"containers": [{"name": "manager", "args": ["--x"]}]}}}}
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kueue-manager-config",
                                                                         "namespace": "kueue-system"},
                  "data": {"controller_manager_config.yaml": "apiVersion: config.kueue.x-k8s.io/v1beta2\n"}}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"team": "a"}}}
    assert verify_objects([deployment_patch, config_map, namespace], "1.34", "0.19") == []
    # as a full object the Deployment patch would be refused (no selector)
    full = verify_objects([deployment_patch], "1.34", "0.19", patch_kinds=())
    assert any(p.code == codes.K8S_SCHEMA and p.field_path == "spec.selector" for p in full)


def test_patch_metadata_is_still_checked():
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team.a"}}
    found = verify_objects([namespace], "1.34", "0.19")
    assert [(p.code, p.rule) for p in found] == [(codes.OBJECT_METADATA, "metadata.name.invalid")]
    assert "RFC 1123 label" in found[0].message  # Namespace names are labels, not subdomains


def test_unknown_builtin_kind():
    found = verify_objects([{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}],
                           "1.34", "0.19")
    assert [(p.code, p.rule) for p in found] == [(codes.UNKNOWN_OBJECT_KIND, "kind.unknown")]


@pytest.mark.parametrize("requested,expected", [
    ((1, 34, 0), (1, 34)), ((1, 34, 2), (1, 34)), ((1, 99, 0), None), ((1, 9, 0), None), ((1, 4, 0), None),
])
def test_schema_version_is_compared_as_numbers_and_clamped(requested, expected):
    versions = bundled_versions()
    chosen = schema_version_for(requested)
    if expected is None:
        # out of the bundled range: clamped to its nearest end, never chosen by string order
        expected = versions[-1] if requested[:2] > versions[-1] else versions[0]
    assert chosen == expected


def test_version_spellings():
    for spelling in ("1.34", "v1.34", "1.34.0", "v1.34.1", "1.34.1-gke.100"):
        assert verify_objects([device_class()], spelling, "0.19") == []


# --- the API server's own DRA validation (beyond the OpenAPI schema) -------------------------

def rules_of(objects, k8s="1.34"):
    return sorted(p.rule for p in verify_objects(objects, k8s, "0.19"))


def test_device_class_selector_must_parse():
    bad = device_class(selectors=[{"cel": {"expression": "device.driver == "}}])
    found = verify_objects([bad], "1.34", "0.19")
    assert [(p.code, p.field_path, p.rule) for p in found] == [
        (codes.K8S_SCHEMA, "spec.selectors[0].cel.expression", "dra.selector.cel")]
    # optional syntax is valid in Kubernetes; the local parser lacks it, so it is not refused
    optional = device_class(selectors=[{"cel": {"expression": "device.attributes['x'].?y.orValue(0) == 1"}}])
    assert verify_objects([optional], "1.34", "0.19") == []


def test_device_class_limits_and_config():
    many = device_class(selectors=[{"cel": {"expression": "true"}}] * 33)
    assert rules_of([many]) == ["dra.tooMany"]
    config = device_class(config=[{"opaque": {"driver": "Not_A_Driver", "parameters": {}}}])
    assert rules_of([config]) == ["dra.driver.invalid"]


@pytest.mark.parametrize("name,valid", [("example.com/h100-3g", True), ("nvidia.com/gpu", True),
                                        ("gpu", False), ("kubernetes.io/gpu", False)])
def test_device_class_extended_resource_name(name, valid):
    found = rules_of([device_class(extendedResourceName=name)])
    assert found == ([] if valid else ["dra.deviceClass.extendedResourceName"])


def _template(*requests, constraints=None, config=None):
    obj = claim_template()
    devices = obj["spec"]["spec"]["devices"]
    devices["requests"] = list(requests)
    if constraints is not None:
        devices["constraints"] = constraints
    if config is not None:
        devices["config"] = config
    return obj


@pytest.mark.parametrize("request_,rule", [
    ({"name": "gpu"}, "dra.request.none"),
    ({"name": "gpu", "exactly": {"deviceClassName": "c"}, "firstAvailable": [{"name": "a", "deviceClassName": "c"}]},
     "dra.request.both"),
    ({"name": "GPU", "exactly": {"deviceClassName": "c"}}, "dra.request.name"),
    ({"name": "gpu", "exactly": {"deviceClassName": "c", "count": -1}}, "dra.request.count"),
    ({"name": "gpu", "exactly": {"deviceClassName": "c", "allocationMode": "All", "count": 2}},
     "dra.request.countWithAll"),
    ({"name": "gpu", "exactly": {"deviceClassName": "c", "allocationMode": "Some"}}, "dra.request.allocationMode"),
    ({"name": "gpu", "exactly": {"deviceClassName": "Bad_Class"}}, "dra.request.className"),
    ({"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "c"}] * 2}, "dra.request.duplicate"),
])
def test_claim_template_request_rules(request_, rule):
    assert rules_of([_template(request_)]) == [rule]


def test_a_count_of_zero_is_the_api_servers_default_of_one():
    """A live kube-apiserver 1.36 accepts `count: 0` (decoded as unset, then defaulted to 1), as
    the end-to-end mutation test found."""
    assert rules_of([_template({"name": "gpu", "exactly": {"deviceClassName": "c", "count": 0}})]) == []


def test_claim_template_references():
    ok = {"name": "gpu", "exactly": {"deviceClassName": "c"}}
    alt = {"name": "alt", "firstAvailable": [{"name": "big", "deviceClassName": "c"}]}
    good = _template(ok, alt, constraints=[{"requests": ["gpu", "alt/big"], "matchAttribute": "gpu.nvidia.com/uuid"}],
                     config=[{"requests": ["gpu"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {}}}])
    assert rules_of([good]) == []
    bad = _template(ok, constraints=[{"requests": ["cpu"], "matchAttribute": "uuid"}])
    assert rules_of([bad]) == ["dra.constraint.attributeDomain", "dra.requestRef.unknown"]
    assert rules_of([_template(ok, ok)]) == ["dra.request.duplicate"]
