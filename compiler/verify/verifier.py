"""verify_objects: every emitted object checked as the API server and Kueue's webhooks would."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any


from ..core import codes, yamlio
from . import admission_policy, builtin, dra_native, kueue_cel, kueue_spec, kueue_webhook, metadata
from .device_class_mappings import verify_device_class_mappings
from .problem import ObjectProblem
from .schema_check import Check, KubernetesValidator, check as schema_check, compile_fast
from .versions import KUEUE_COHORT_V1BETA1_SINCE, KUEUE_V1BETA2_SINCE, parse_version, show

# Built-in kinds the compiler emits as kustomize-style patches, not full objects: a Deployment
# patch lacks the selector and containers a full Deployment needs, so strict schema validation
# would refuse it. Only their metadata is checked.
PATCH_KINDS = frozenset({"ConfigMap", "Deployment"})


@lru_cache(maxsize=None)
def _kueue_validator(api_version: str, kind: str) -> tuple[KubernetesValidator, Check, dict[str, Any]]:
    schema = kueue_spec.schema_for(api_version, kind)
    KubernetesValidator.check_schema(schema)
    return KubernetesValidator(schema), compile_fast(schema), schema


def _identity(obj: Any) -> tuple[str, str, str]:
    if not isinstance(obj, dict):
        return "", "", ""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return (str(obj.get("kind", "") or ""), str(meta.get("name", "") or ""), str(meta.get("namespace", "") or ""))


class _Report:
    def __init__(self) -> None:
        self.problems: list[ObjectProblem] = []

    def add(self, index: int, obj: Any, field_path: str, code: str, message: str, rule: str) -> None:
        kind, name, namespace = _identity(obj)
        self.problems.append(ObjectProblem(index, kind, name, namespace, field_path, code, message, rule))


def _verify_kueue(report: _Report, index: int, obj: dict, kueue: tuple[int, ...]) -> None:
    api_version, kind = obj["apiVersion"], obj["kind"]
    if api_version == kueue_spec.V1BETA2 and kueue[:2] < KUEUE_V1BETA2_SINCE:
        report.add(index, obj, "apiVersion", codes.VERSION_GATE,
                   f"apiVersion: {api_version} is served from Kueue {show(KUEUE_V1BETA2_SINCE)}; this cluster runs "
                   f"Kueue {show(kueue)}, which serves kueue.x-k8s.io/v1beta1 only", "version.kueueV1beta2")
        return
    if kind == "Cohort" and kueue[:2] < KUEUE_COHORT_V1BETA1_SINCE:
        report.add(index, obj, "apiVersion", codes.VERSION_GATE,
                   f"apiVersion: Cohort is served as {api_version} from Kueue {show(KUEUE_COHORT_V1BETA1_SINCE)}; "
                   f"this cluster runs Kueue {show(kueue)} (Cohort was kueue.x-k8s.io/v1alpha1 there)",
                   "version.kueueCohortV1beta1")
        return

    for v in metadata.check(obj, kind, kueue_spec.is_namespaced(kind)):
        report.add(index, obj, v.field_path, codes.KUEUE_UNKNOWN_FIELD if v.unknown_field else codes.OBJECT_METADATA,
                   v.message, v.rule)

    validator, fast, schema = _kueue_validator(api_version, kind)
    violations = schema_check(validator, obj, fast)
    structural = False
    for v in violations:
        report.add(index, obj, v.field_path, codes.KUEUE_UNKNOWN_FIELD if v.unknown_field else codes.KUEUE_SCHEMA,
                   v.message, v.rule)
        structural = structural or not v.unknown_field
    if structural:
        # The API server stops at schema errors: CEL rules and webhooks would see mistyped data.
        return

    defaulted = kueue_spec.apply_defaults(obj, schema)
    for c in kueue_cel.check(kind, api_version, defaulted):
        report.add(index, obj, c.field_path, codes.KUEUE_CEL_RULE, c.message, c.rule)
    for w in kueue_webhook.check(kind, api_version, defaulted):
        report.add(index, obj, w.field_path, codes.KUEUE_WEBHOOK, w.message, w.rule)


def _verify_embedded_kueue_configuration(report: _Report, index: int, obj: dict, kueue: tuple[int, ...]) -> None:
    """Kueue reads its Configuration from a ConfigMap key; check its deviceClassMappings there, so a
    mapping Kueue would refuse at start-up is caught with the ConfigMap that carries it."""
    data = obj.get("data")
    if not isinstance(data, dict):
        return
    for key in sorted(k for k in data if isinstance(k, str)):
        text = data[key]
        if not isinstance(text, str) or "kind: Configuration" not in text:
            continue
        try:
            config = yamlio.load(text)
        except yamlio.YamlError as exc:
            report.add(index, obj, f"data.{key}", codes.DEVICE_CLASS_MAPPINGS,
                       f"{key}: the Kueue Configuration is not valid YAML: {exc}", "dcm.yaml")
            continue
        if not isinstance(config, dict) or config.get("kind") != "Configuration":
            continue
        for p in verify_device_class_mappings(config, kueue_version=".".join(map(str, kueue))):
            report.add(index, obj, f"data.{key}: {p.field_path}", p.code, p.message, p.rule)


def _verify_builtin(report: _Report, index: int, obj: dict, kubernetes: tuple[int, ...], kueue: tuple[int, ...],
                    patch_kinds: frozenset[str]) -> None:
    api_version, kind = obj["apiVersion"], obj["kind"]
    if kind == "ConfigMap":
        _verify_embedded_kueue_configuration(report, index, obj, kueue)
    if kind in patch_kinds:
        for v in metadata.check(obj, kind, None):
            report.add(index, obj, v.field_path, codes.OBJECT_METADATA, v.message, v.rule)
        return
    result = builtin.validate(obj, kubernetes)
    if not result.known:
        serving = builtin.versions_serving(api_version, kind)
        if serving and serving[0] > result.schema_version:
            report.add(index, obj, "apiVersion", codes.VERSION_GATE,
                       f"apiVersion: {kind} {api_version} is served from Kubernetes {show(serving[0])}; this "
                       f"cluster runs Kubernetes {show(kubernetes)}", "version.kubernetesTooOld")
        elif serving:
            report.add(index, obj, "apiVersion", codes.VERSION_GATE,
                       f"apiVersion: {kind} {api_version} is no longer served by Kubernetes {show(kubernetes)} "
                       f"(last served by {show(serving[-1])})", "version.kubernetesRemoved")
        else:
            report.add(index, obj, "apiVersion", codes.UNKNOWN_OBJECT_KIND,
                       f"apiVersion: no Kubernetes {show(kubernetes)} schema for kind {kind} in {api_version}",
                       "kind.unknown")
        return
    for v in result.violations:
        report.add(index, obj, v.field_path, codes.K8S_SCHEMA, v.message, v.rule)
    if not result.violations and dra_native.applies_to(api_version, kind):
        # Like the API server, its own validation runs on objects that decoded cleanly.
        for d in dra_native.check(obj):
            report.add(index, obj, d.field_path, codes.K8S_SCHEMA, d.message, d.rule)
    if not result.violations and admission_policy.applies_to(api_version, kind):
        for r in admission_policy.check(obj):
            report.add(index, obj, r.field_path, codes.K8S_SCHEMA, r.message, r.rule)
    for m in metadata.check(obj, kind, builtin.namespaced(api_version, kind)):
        report.add(index, obj, m.field_path, codes.OBJECT_METADATA, m.message, m.rule)


def verify_objects(objects: list[dict], kubernetes_version: str, kueue_version: str, *,
                   patch_kinds: Iterable[str] = PATCH_KINDS) -> list[ObjectProblem]:
    """Every problem the API server or Kueue's webhooks would raise with `objects`, sorted by
    object index then field path. An empty list means every object would be accepted.

    kubernetes_version  the cluster's version, "1.34" or "v1.34.2"
    kueue_version       the Kueue release, "0.19" or "v0.19.2"
    patch_kinds         built-in kinds emitted as patches (only their metadata is checked)
    Raises VersionError (a ValueError) if a version string is malformed.
    """
    kubernetes = parse_version(kubernetes_version, "Kubernetes version")
    kueue = parse_version(kueue_version, "Kueue version")
    patches = frozenset(patch_kinds)
    report = _Report()
    seen: dict[tuple[str, str, str, str], int] = {}
    for index, obj in enumerate(objects):
        if not isinstance(obj, dict):
            report.add(index, obj, "", codes.UNKNOWN_OBJECT_KIND,
                       f"object is a {type(obj).__name__}, not a mapping with apiVersion, kind and metadata",
                       "kind.notAMapping")
            continue
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
            field = "apiVersion" if not isinstance(api_version, str) or not api_version else "kind"
            report.add(index, obj, field, codes.UNKNOWN_OBJECT_KIND, f"{field}: Required value", "kind.missing")
            continue
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        if group == kueue_spec.KUEUE_GROUP:
            if api_version in kueue_spec.KUEUE_API_VERSIONS and kind in kueue_spec.KINDS:
                _verify_kueue(report, index, obj, kueue)
            else:
                report.add(index, obj, "kind", codes.UNKNOWN_OBJECT_KIND,
                           f"kind: the verifier has no model of {kind} in {api_version} (it knows "
                           f"{', '.join(sorted(kueue_spec.KINDS))} in {' and '.join(kueue_spec.KUEUE_API_VERSIONS)})",
                           "kind.unknownKueue")
        else:
            _verify_builtin(report, index, obj, kubernetes, kueue, patches)

        kind_, name, namespace = _identity(obj)
        key = (group, kind_, namespace, name)
        if name and kind not in patches:
            if key in seen:
                report.add(index, obj, "metadata.name", codes.DUPLICATE_OBJECT,
                           f"name: Duplicate value: {kind} \"{name}\"{' in namespace ' + namespace if namespace else ''} "
                           f"is also object #{seen[key]} of the output; the second would overwrite the first",
                           "object.duplicate")
            else:
                seen[key] = index
    for index, name in admission_policy.unbound(objects):
        report.add(index, objects[index], "spec.policyName", codes.K8S_SCHEMA,
                   f'Not found: "{name}": no MutatingAdmissionPolicy of that name among the objects, so the '
                   "binding applies nothing", "mapb.policyName.missing")
    return sorted(report.problems, key=lambda p: (p.index, p.field_path, p.code, p.message))
