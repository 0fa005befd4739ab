"""The project's own description of the Kueue API for the kinds the compiler emits.

Written by hand from Kueue's Go types (apis/kueue/v1beta1 and v1beta2, Kueue v0.19) and checked
against Kueue's real CRDs by tests/verify/test_crd_crosscheck.py. It is JSON Schema (draft
2020-12) with two extra keywords the API server has and JSON Schema lacks:

    x-list-map-keys: [name]   a list whose items are unique by these keys
                              (CRD x-kubernetes-list-type: map)
    x-list-set: true          a list of unique scalars (x-kubernetes-list-type: set)

and `default`, which `apply_defaults` uses the way the API server's structural defaulting does.
Every object schema closes its properties (`additionalProperties: false`): the compiler must
never emit a field Kueue does not know (the API server would prune or, with strict field
validation, refuse it). `metadata` is checked separately (compiler/verify/metadata.py), as the
API server validates ObjectMeta natively, not through the CRD schema.
"""

from __future__ import annotations

from typing import Any

from .k8s_names import DNS1123_SUBDOMAIN_PATTERN
from compiler.core.quantity import QUANTITY_PATTERN

KUEUE_GROUP = "kueue.x-k8s.io"
V1BETA1 = "kueue.x-k8s.io/v1beta1"
V1BETA2 = "kueue.x-k8s.io/v1beta2"
KUEUE_API_VERSIONS = (V1BETA1, V1BETA2)

INT32 = {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1}
INT64 = {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1}
STRING = {"type": "string"}
# Kueue's object references (ClusterQueueReference, CohortReference, ResourceFlavorReference,
# LocalQueueName, TopologyReference) are all DNS subdomains of at most 253 characters.
NAME_REF = {"type": "string", "maxLength": 253, "pattern": DNS1123_SUBDOMAIN_PATTERN}
# resource.Quantity is x-kubernetes-int-or-string; the pattern only constrains strings.
QUANTITY = {"type": ["integer", "string"], "pattern": QUANTITY_PATTERN}


def obj(properties: dict[str, Any], *, required: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    schema.update(extra)
    return schema


def string_map(**extra: Any) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": STRING, **extra}


def array(items: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, **extra}


def enum(*values: str, default: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "enum": list(values)}
    if default is not None:
        schema["default"] = default
    return schema


# --- shared pieces ------------------------------------------------------------------------------

FAIR_SHARING = obj({"weight": {**QUANTITY, "default": 1}})
STOP_POLICY = enum("None", "Hold", "HoldAndDrain", default="None")


def resource_groups(version: str) -> dict[str, Any]:
    resource_quota = obj({
        "name": STRING,
        "nominalQuota": QUANTITY,
        "borrowingLimit": QUANTITY,
        "lendingLimit": QUANTITY,
    }, required=("name", "nominalQuota"))
    flavor_quotas = obj({
        "name": NAME_REF,
        "resources": array(resource_quota, minItems=1, maxItems=64, **{"x-list-map-keys": ["name"]}),
    }, required=("name", "resources"))
    group = obj({
        "coveredResources": array(STRING, minItems=1, maxItems=64),
        "flavors": array(flavor_quotas, minItems=1, maxItems=64, **{"x-list-map-keys": ["name"]}),
    }, required=("coveredResources", "flavors"))
    return array(group, maxItems=16)


LABEL_SELECTOR = obj({
    "matchExpressions": array(obj({
        "key": STRING,
        "operator": STRING,
        "values": array(STRING),
    }, required=("key", "operator"))),
    "matchLabels": string_map(),
})


def preemption() -> dict[str, Any]:
    return obj({
        "borrowWithinCohort": obj({
            "maxPriorityThreshold": INT32,
            "policy": enum("Never", "LowerPriority", default="Never"),
        }, default={}),
        "reclaimWithinCohort": enum("Never", "LowerPriority", "Any", default="Never"),
        "withinClusterQueue": enum("Never", "LowerPriority", "LowerOrNewerEqualPriority", default="Never"),
    }, default={})


def flavor_fungibility(version: str) -> dict[str, Any]:
    # v1beta1 still accepts the deprecated Borrow / Preempt; v1beta2 replaced both by MayStopSearch.
    borrow = ("MayStopSearch", "TryNextFlavor") + (("Borrow",) if version == V1BETA1 else ())
    preempt = ("MayStopSearch", "TryNextFlavor") + (("Preempt",) if version == V1BETA1 else ())
    return obj({
        "preference": enum("BorrowingOverPreemption", "PreemptionOverBorrowing"),
        "whenCanBorrow": enum(*borrow, default="MayStopSearch"),
        "whenCanPreempt": enum(*preempt, default="TryNextFlavor"),
    }, default={})


# --- kinds --------------------------------------------------------------------------------------

def _top(spec: dict[str, Any]) -> dict[str, Any]:
    return obj({"apiVersion": STRING, "kind": STRING, "metadata": {"type": "object"}, "spec": spec})


def resource_flavor(version: str) -> dict[str, Any]:
    taint = obj({
        "effect": STRING,
        "key": STRING,
        "timeAdded": {"type": "string", "format": "date-time"},
        "value": STRING,
    }, required=("effect", "key"))
    toleration = obj({
        "effect": STRING,
        "key": STRING,
        "operator": STRING,
        "tolerationSeconds": INT64,
        "value": STRING,
    })
    return _top(obj({
        "nodeLabels": string_map(maxProperties=8),
        "nodeTaints": array(taint, maxItems=8),
        "tolerations": array(toleration, maxItems=8),
        "topologyName": NAME_REF,
    }))


def cluster_queue(version: str) -> dict[str, Any]:
    if version == V1BETA2:
        admission_checks_strategy = obj({
            "admissionChecks": array(obj({
                "name": {"type": "string", "minLength": 1, "maxLength": 316},
                "onFlavors": array(NAME_REF, maxItems=64, **{"x-list-set": True}),
            }, required=("name",)), minItems=1, maxItems=64, **{"x-list-map-keys": ["name"]}),
        }, required=("admissionChecks",))
        admission_mode = enum("UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing")
    else:
        admission_checks_strategy = obj({
            "admissionChecks": array(obj({
                "name": {"type": "string", "maxLength": 316},
                "onFlavors": array(NAME_REF),
            }, required=("name",))),
        })
        admission_mode = STRING
    spec: dict[str, Any] = {
        "admissionChecksStrategy": admission_checks_strategy,
        "admissionScope": obj({"admissionMode": admission_mode}, required=("admissionMode",)),
        "fairSharing": FAIR_SHARING,
        "flavorFungibility": flavor_fungibility(version),
        "namespaceSelector": LABEL_SELECTOR,
        "preemption": preemption(),
        "queueingStrategy": enum("StrictFIFO", "BestEffortFIFO", default="BestEffortFIFO"),
        "resourceGroups": resource_groups(version),
        "stopPolicy": STOP_POLICY,
    }
    if version == V1BETA2:
        spec["cohortName"] = NAME_REF
        spec["concurrentAdmissionPolicy"] = obj({
            "migration": obj({
                "constraints": obj({"lastAcceptableFlavorName": NAME_REF}),
                "mode": {**enum("TryPreferredFlavors", "RetainFirstAdmission"), "maxLength": 253},
            }, required=("mode",)),
        }, required=("migration",))
    else:
        spec["cohort"] = NAME_REF
        spec["admissionChecks"] = array({"type": "string", "maxLength": 316})
    return _top(obj(spec))


def cohort(version: str) -> dict[str, Any]:
    return _top(obj({
        "fairSharing": FAIR_SHARING,
        "parentName": NAME_REF,
        "resourceGroups": resource_groups(version),
    }))


def local_queue(version: str) -> dict[str, Any]:
    return _top(obj({
        "clusterQueue": NAME_REF,
        "fairSharing": FAIR_SHARING,
        "stopPolicy": STOP_POLICY,
    }))


def workload_priority_class(version: str) -> dict[str, Any]:
    # No spec: value and description are top-level fields.
    description = {"type": "string", "maxLength": 2048} if version == V1BETA2 else STRING
    return obj({
        "apiVersion": STRING,
        "kind": STRING,
        "metadata": {"type": "object"},
        "value": INT32,
        "description": description,
    }, required=("value",))


# A node label key, as Kueue's TopologyLevel.nodeLabel pattern states it.
NODE_LABEL_PATTERN = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                      r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")


def topology(version: str) -> dict[str, Any]:
    level = obj({"nodeLabel": {"type": "string", "minLength": 1, "maxLength": 316, "pattern": NODE_LABEL_PATTERN}},
                required=("nodeLabel",))
    return _top(obj({"levels": array(level, minItems=1, maxItems=16)}, required=("levels",)))


# kind -> (builder, namespaced)
KINDS: dict[str, tuple[Any, bool]] = {
    "ResourceFlavor": (resource_flavor, False),
    "Cohort": (cohort, False),
    "ClusterQueue": (cluster_queue, False),
    "LocalQueue": (local_queue, True),
    "WorkloadPriorityClass": (workload_priority_class, False),
    "Topology": (topology, False),
}


def schema_for(api_version: str, kind: str) -> dict[str, Any]:
    builder, _ = KINDS[kind]
    return builder(api_version)


def is_namespaced(kind: str) -> bool:
    return KINDS[kind][1]


def apply_defaults(value: Any, schema: dict[str, Any]) -> Any:
    """A copy of `value` with the schema's defaults filled in, as the API server does before
    validating: a missing property gets its default only when its parent object is present."""
    if isinstance(value, dict) and schema.get("type") == "object":
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        out = {}
        for key, item in value.items():
            sub = props.get(key)
            if sub is None and isinstance(extra, dict):
                sub = extra
            out[key] = apply_defaults(item, sub) if sub else item
        for key, sub in props.items():
            if key not in out and "default" in sub:
                out[key] = apply_defaults(_copy(sub["default"]), sub)
        return out
    if isinstance(value, list) and schema.get("type") == "array":
        items = schema.get("items", {})
        return [apply_defaults(item, items) for item in value]
    return value


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
