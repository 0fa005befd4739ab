"""The verify stage: every emitted object checked as the Kubernetes API server and Kueue's
webhooks would check it, before anything is written.

Public API (stable):

    from compiler.verify import verify_objects, verify_device_class_mappings, ObjectProblem

    verify_objects(objects, kubernetes_version, kueue_version) -> list[ObjectProblem]
        Kueue kinds (ResourceFlavor, Cohort, ClusterQueue, LocalQueue, WorkloadPriorityClass, Topology;
        kueue.x-k8s.io/v1beta1 and v1beta2): the project's own schema (kueue_spec.py), the CRDs'
        CEL rules (kueue_cel.py) and Kueue's webhook rules (kueue_webhook.py). Built-in kinds:
        kubernetes-validate's strict schemas at the cluster's version (builtin.py), plus the API
        server's own DRA rules for DeviceClass / ResourceClaimTemplate (dra_native.py); ConfigMap,
        Namespace and Deployment are patches, so only their metadata is checked; a ConfigMap
        carrying a Kueue Configuration has its deviceClassMappings checked. All objects:
        metadata (metadata.py) and no two objects with the same identity.
    verify_device_class_mappings(fragment) -> list[ObjectProblem]
        Kueue Configuration resources.deviceClassMappings rules.

Codes: KP501 Kueue schema, KP502 CEL rule, KP503 webhook, KP504 Kubernetes schema,
KP505 version gate, KP506 unknown field, KP507 metadata, KP508 unknown kind,
KP509 deviceClassMappings, KP510 duplicate object.
"""

from .device_class_mappings import verify_device_class_mappings
from .problem import ObjectProblem
from .verifier import PATCH_KINDS, verify_objects
from .versions import VersionError

__all__ = ["ObjectProblem", "PATCH_KINDS", "VersionError", "verify_device_class_mappings", "verify_objects"]
