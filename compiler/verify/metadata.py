"""ObjectMeta checks the API server makes natively (not through a CRD or OpenAPI schema):
name and namespace formats, label and annotation keys and values, and no unknown metadata fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import k8s_names

# The fields of metav1.ObjectMeta. Anything else under metadata is unknown to the API server.
OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields",
})
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

# Kinds whose names must be DNS labels rather than DNS subdomains (apimachinery NameIsDNSLabel).
DNS_LABEL_NAMED_KINDS = frozenset({"Namespace", "Service"})


@dataclass(frozen=True)
class MetadataViolation:
    field_path: str
    message: str
    unknown_field: bool
    rule: str


def check(obj: dict[str, Any], kind: str, namespaced: bool | None) -> list[MetadataViolation]:
    """`namespaced`: True / False when the kind's scope is known, None to skip the scope check."""
    found: list[MetadataViolation] = []

    def add(path: str, message: str, rule: str, unknown: bool = False) -> None:
        found.append(MetadataViolation(path, message, unknown, rule))

    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        add("metadata", "metadata: Required value: every object needs metadata with a name", "metadata.missing")
        return found
    for key in sorted(set(meta) - OBJECT_META_FIELDS):
        add(f"metadata.{key}", f'unknown field "metadata.{key}"', "metadata.unknownField", unknown=True)

    name = meta.get("name")
    if not isinstance(name, str) or not name:
        add("metadata.name", "name: Required value: name or generateName is required", "metadata.name.required")
    else:
        check_name = k8s_names.dns1123_label if kind in DNS_LABEL_NAMED_KINDS else k8s_names.dns1123_subdomain
        for msg in check_name(name):
            add("metadata.name", f'name: Invalid value: "{name}": {msg}', "metadata.name.invalid")

    namespace = meta.get("namespace")
    if namespaced is True:
        if not isinstance(namespace, str) or not namespace:
            add("metadata.namespace", f"namespace: Required value: {kind} is namespaced and needs a namespace",
                "metadata.namespace.required")
        else:
            for msg in k8s_names.dns1123_label(namespace):
                add("metadata.namespace", f'namespace: Invalid value: "{namespace}": {msg}',
                    "metadata.namespace.invalid")
    elif namespaced is False and namespace not in (None, ""):
        add("metadata.namespace", f'namespace: Forbidden: {kind} is cluster-scoped; it cannot have the '
            f'namespace "{namespace}"', "metadata.namespace.forbidden")

    labels = meta.get("labels")
    if labels is not None:
        if not isinstance(labels, dict):
            add("metadata.labels", "labels: Invalid value: must be a map of strings", "metadata.labels.type")
        else:
            for key in sorted(labels, key=str):
                value = labels[key]
                for msg in k8s_names.label_key(str(key)):
                    add("metadata.labels", f'labels: Invalid value: "{key}": {msg}', "metadata.labels.key")
                if not isinstance(value, str):
                    add(f"metadata.labels.{key}", f'labels: Invalid value: label "{key}" must be a string, '
                        f"not {type(value).__name__}", "metadata.labels.type")
                    continue
                for msg in k8s_names.label_value(value):
                    add("metadata.labels", f'labels: Invalid value: "{value}": {msg}', "metadata.labels.value")

    annotations = meta.get("annotations")
    if annotations is not None:
        if not isinstance(annotations, dict):
            add("metadata.annotations", "annotations: Invalid value: must be a map of strings",
                "metadata.annotations.type")
        else:
            total = 0
            for key in sorted(annotations, key=str):
                value = annotations[key]
                for msg in k8s_names.qualified_name(str(key).lower()):
                    add("metadata.annotations", f'annotations: Invalid value: "{key}": {msg}',
                        "metadata.annotations.key")
                if not isinstance(value, str):
                    add(f"metadata.annotations.{key}", f'annotations: Invalid value: annotation "{key}" must be '
                        f"a string, not {type(value).__name__}", "metadata.annotations.type")
                    continue
                total += len(str(key)) + len(value)
            if total > TOTAL_ANNOTATION_SIZE_LIMIT:
                add("metadata.annotations", f"annotations: Too long: must have at most {TOTAL_ANNOTATION_SIZE_LIMIT}"
                    " bytes", "metadata.annotations.size")
    return found
