"""DRA objects (resource.k8s.io/v1) for NVIDIA GPUs and MIG slices, and Kueue's side of DRA.

Pure functions returning plain dicts (the build stage's currency).

Names (DNS subdomains, each <= 63 characters so that the implicit extended resource
`deviceclass.resource.kubernetes.io/<class>` also works):
    whole GPU of a model          <model>.gpu.kueue-policy.io            h100-80gb.gpu.kueue-policy.io
    MIG profile of a model        <model>-<profile>.mig.kueue-policy.io  h100-80gb-3g-40gb.mig.kueue-policy.io
                                  (`.` and `+` in the profile become `-`: 1g.10gb+me -> 1g-10gb-me)
    dra-extended-resource classes (one per resource name, all models in use):
                                  gpu.extended.kueue-policy.io, mig-3g-40gb.extended.kueue-policy.io
    claim templates               the class name's first label (h100-80gb, h100-80gb-3g-40gb),
                                  with -x<N> when a template asks for N > 1 devices
Quota resource names stay the known ones: `nvidia.com/gpu`, `nvidia.com/mig-<profile>` (`+` as `.`).

Selectors match what the NVIDIA DRA driver (gpu.nvidia.com) publishes: `type` gpu/mig, `profile`
for MIG devices and the parent GPU's `productName` (MIG devices carry it too), which tells models
apart whose profiles share names (A100-80GB and H100-80GB both have 3g.40gb). Each selector is
one expression whose first test is the driver, so a device of another driver is rejected before
a missing attribute could raise an evaluation error.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from compiler.core import codes, yamlio
from compiler.core.errors import Diagnostic, PolicyError
from compiler.core.resources import GPU_RESOURCE, mig_resource_name
from compiler.mig.catalogue import Catalogue, load_catalogue
from compiler.core.templating import render_object

API_VERSION = "resource.k8s.io/v1"
NVIDIA_DRIVER = "gpu.nvidia.com"
CLASS_DOMAIN = "kueue-policy.io"
MANAGED_BY = {"app.kubernetes.io/managed-by": "kueue-policy"}
MODEL_ANNOTATION = "kueue-policy.io/gpu-model"
PROFILE_ANNOTATION = "kueue-policy.io/mig-profile"

KUEUE_NAMESPACE = "kueue-system"
KUEUE_CONFIGMAP = "kueue-manager-config"
KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
KUEUE_DEPLOYMENT = "kueue-controller-manager"
CHECKSUM_ANNOTATION = "kueue-policy.io/manager-config-checksum"
RESTART_NOTE_ANNOTATION = "kueue-policy.io/note"
RESTART_NOTE = ("Kueue reads this Configuration only at start-up. The kueue-controller-manager "
                "Deployment carries its checksum in a pod-template annotation, so a change here "
                "restarts the manager when both are applied.")

MAX_MAPPINGS = 16
MAX_CLASSES_PER_MAPPING = 8

GPU_ACCESS_MODES = ("device-plugin", "dra-extended-resource", "dra-claims")


def _dns_part(text: str) -> str:
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text.lower())).strip("-")


def _cel_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def gpu_class_name(model: str) -> str:
    return f"{_dns_part(model)}.gpu.{CLASS_DOMAIN}"


def mig_class_name(model: str, profile: str) -> str:
    return f"{_dns_part(model)}-{_dns_part(profile)}.mig.{CLASS_DOMAIN}"


def extended_class_name(resource_name: str) -> str:
    """Class name for a dra-extended-resource class: nvidia.com/mig-3g.40gb -> mig-3g-40gb...."""
    return f"{_dns_part(resource_name.rpartition('/')[2])}.extended.{CLASS_DOMAIN}"


def _model_test(model: str, catalogue: Catalogue) -> str:
    """The CEL test that a device belongs to `model`.

    Catalogue models with known NVML names match them exactly. Other names (non-MIG GPUs such as
    L40S, or models whose NVML name the sources did not give) match when every part of the name,
    memory size parts excepted, appears as a whole word in the lower-cased productName
    (L40S matches "NVIDIA L40S"; L4 does not)."""
    attribute = f"device.attributes[{_cel_string(NVIDIA_DRIVER)}].productName"
    gpu = catalogue.model(model)
    if gpu is not None and gpu.product_names:
        names = sorted(gpu.product_names)
        if len(names) == 1:
            return f"{attribute} == {_cel_string(names[0])}"
        return f"{attribute} in [{', '.join(_cel_string(n) for n in names)}]"
    tokens = [t for t in _dns_part(model).split("-") if t and not re.fullmatch(r"\d+gb", t)]
    if not tokens:
        tokens = [_dns_part(model)]
    return " && ".join(
        f"{attribute}.lowerAscii().matches({_cel_string('(^|[^a-z0-9])' + t + '([^a-z0-9]|$)')})"
        for t in tokens)


def _selector(device_type: str, models: str | Sequence[str], catalogue: Catalogue | None,
              extra: str = "") -> str:
    """The driver first, then the device type, any extra test, and the model(s)."""
    cat = catalogue or load_catalogue()
    model_list = [models] if isinstance(models, str) else sorted(set(models))
    tests = [_model_test(m, cat) for m in model_list]
    model_part = tests[0] if len(tests) == 1 else "(" + " || ".join(f"({t})" for t in tests) + ")"
    domain = f"device.attributes[{_cel_string(NVIDIA_DRIVER)}]"
    return (f"device.driver == {_cel_string(NVIDIA_DRIVER)} && {domain}.type == '{device_type}' && "
            + (f"{extra} && " if extra else "") + model_part)


def gpu_selector(models: str | Sequence[str], catalogue: Catalogue | None = None) -> str:
    return _selector("gpu", models, catalogue)


def mig_selector(models: str | Sequence[str], profile: str, catalogue: Catalogue | None = None) -> str:
    domain = f"device.attributes[{_cel_string(NVIDIA_DRIVER)}]"
    return _selector("mig", models, catalogue, f"{domain}.profile == {_cel_string(profile)}")


def _device_class(name: str, expression: str, annotations: dict, extended_resource_name: str | None) -> dict:
    return render_object("dra/deviceclass.yaml.j2", name=name, labels=dict(MANAGED_BY), annotations=annotations,
                         expression=expression, extended_resource_name=extended_resource_name)


def gpu_device_class(model: str, *, extended_resource_name: str | None = None,
                     catalogue: Catalogue | None = None) -> dict:
    """DeviceClass selecting whole GPUs of `model` (any name; catalogue models by NVML name)."""
    return _device_class(gpu_class_name(model), gpu_selector(model, catalogue),
                         {MODEL_ANNOTATION: model}, extended_resource_name)


def mig_device_class(model: str, profile: str, *, extended_resource_name: str | None = None,
                     catalogue: Catalogue | None = None) -> dict:
    """DeviceClass selecting MIG devices of `profile` on `model`. Raises PolicyError when the
    model or profile is unknown (profile names are per model)."""
    cat = catalogue or load_catalogue()
    found = cat.profile(model, profile)
    if found is None:
        code = codes.MIG_UNKNOWN_MODEL if cat.model(model) is None else codes.MIG_UNKNOWN_PROFILE
        raise PolicyError([Diagnostic(code, cat.describe_unknown_profile(model, profile))])
    profile = found.name      # nvidia-smi spelling, as the driver publishes `profile`
    return _device_class(mig_class_name(model, profile), mig_selector(model, profile, cat),
                         {MODEL_ANNOTATION: model, PROFILE_ANNOTATION: profile}, extended_resource_name)


def extended_resource_device_classes(gpu_models: Iterable[str],
                                     mig_profiles: Iterable[tuple[str, str]],
                                     catalogue: Catalogue | None = None) -> list[dict]:
    """dra-extended-resource: one class per resource name, covering every model that uses it.

    Kubernetes maps an extended resource name to a single DeviceClass (the newest wins), so the
    per-model classes of dra-claims would shadow each other; the flavor's node labels keep models
    apart in Kueue instead."""
    cat = catalogue or load_catalogue()
    classes: list[dict] = []
    models = sorted(set(gpu_models))
    if models:
        annotations = {MODEL_ANNOTATION: ",".join(models)}
        classes.append(_device_class(extended_class_name(GPU_RESOURCE), gpu_selector(models, cat),
                                     annotations, GPU_RESOURCE))
    by_profile: dict[str, set[str]] = {}
    for model, profile in mig_profiles:
        found = cat.profile(model, profile)
        if found is None:
            code = codes.MIG_UNKNOWN_MODEL if cat.model(model) is None else codes.MIG_UNKNOWN_PROFILE
            raise PolicyError([Diagnostic(code, cat.describe_unknown_profile(model, profile))])
        by_profile.setdefault(found.name, set()).add(model)
    for profile in sorted(by_profile):
        resource = mig_resource_name(profile)
        users = sorted(by_profile[profile])
        classes.append(_device_class(extended_class_name(resource), mig_selector(users, profile, cat),
                                     {MODEL_ANNOTATION: ",".join(users), PROFILE_ANNOTATION: profile},
                                     resource))
    return classes


def claim_template_name(class_name: str, count: int = 1) -> str:
    base = class_name.split(".")[0]
    return base if count == 1 else f"{base}-x{count}"


def claim_template(namespace: str, class_name: str, count: int = 1, name: str | None = None) -> dict:
    """ResourceClaimTemplate asking for `count` devices of the class (v1 `exactly` form, which is
    the form Kueue can charge: ExactCount, no firstAvailable)."""
    if count < 1:
        raise ValueError("a claim template asks for at least one device")
    request = "mig" if ".mig." in class_name else "gpu"
    return render_object("dra/resourceclaimtemplate.yaml.j2", name=name or claim_template_name(class_name, count),
                         namespace=namespace, labels=dict(MANAGED_BY), request=request, class_name=class_name,
                         count=count)


def device_class_mappings(mapping: Mapping[str, Sequence[str]]) -> dict:
    """Kueue `Configuration.resources.deviceClassMappings` fragment: resource name -> classes.

    Enforces Kueue's validation: <= 16 mappings, 1..8 classes each, a class in one mapping only."""
    problems: list[Diagnostic] = []
    if len(mapping) > MAX_MAPPINGS:
        problems.append(Diagnostic(codes.DRA_MAPPING_LIMIT,
                                   f"{len(mapping)} deviceClassMappings; Kueue accepts at most {MAX_MAPPINGS}"))
    owner: dict[str, str] = {}
    entries = []
    for resource in sorted(mapping):
        classes = sorted(set(mapping[resource]))
        if not classes:
            problems.append(Diagnostic(codes.DRA_MAPPING_LIMIT, f"resource {resource} maps to no DeviceClass"))
        if len(classes) > MAX_CLASSES_PER_MAPPING:
            problems.append(Diagnostic(codes.DRA_MAPPING_LIMIT,
                                       f"resource {resource} maps to {len(classes)} DeviceClasses; "
                                       f"Kueue accepts at most {MAX_CLASSES_PER_MAPPING}"))
        for class_name in classes:
            if class_name in owner:
                problems.append(Diagnostic(codes.DRA_MAPPING_LIMIT,
                                           f"DeviceClass {class_name} is mapped to both {owner[class_name]} "
                                           f"and {resource}; Kueue allows one"))
            owner.setdefault(class_name, resource)
        entries.append({"name": resource, "deviceClassNames": classes})
    if problems:
        raise PolicyError(problems)
    return {"resources": {"deviceClassMappings": entries}}


def default_kueue_configuration(api_version: str = "config.kueue.x-k8s.io/v1beta2") -> dict:
    """The Configuration kueue-policy writes when the cluster gives none: Kueue's defaults for
    the fields the install manifests set (health, metrics, webhook, leader election)."""
    return {
        "apiVersion": api_version, "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset",
                                        "kubeflow.org/pytorchjob", "pod"]},
    }


def _deep_merge(base: dict, overlay: Mapping) -> dict:
    merged = dict(base)
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


def kueue_config_patch(fragment: Mapping, base_config: Mapping | None = None,
                       namespace: str = KUEUE_NAMESPACE) -> tuple[dict, dict]:
    """(ConfigMap patch, Deployment patch) rolling `fragment` out to Kueue.

    Kueue reads its Configuration once, at start-up, from the `controller_manager_config.yaml`
    key of the `kueue-manager-config` ConfigMap. A strategic-merge patch replaces that key
    whole, so the patch carries the complete Configuration: `base_config` (the cluster's own, when
    the policy gives it) with the fragment merged in, else Kueue's install defaults. A ConfigMap
    change alone does nothing: the Deployment patch sets a checksum annotation on the manager's
    pod template, so a changed mapping rolls the manager and an unchanged one does not."""
    configuration = _deep_merge(dict(base_config or default_kueue_configuration()), fragment)
    text = yamlio.dump(configuration)
    checksum = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    configmap = render_object("kueue-config/kueue-manager-config.yaml.j2", name=KUEUE_CONFIGMAP,
                              namespace=namespace, annotations={RESTART_NOTE_ANNOTATION: RESTART_NOTE},
                              key=KUEUE_CONFIG_KEY, configuration_text=text)
    deployment = render_object("kueue-config/kueue-controller-manager.yaml.j2", name=KUEUE_DEPLOYMENT,
                               namespace=namespace, checksum_annotation=CHECKSUM_ANNOTATION, checksum=checksum)
    return configmap, deployment


# --- Version gates and the whole set, by gpuAccess --------------------------------------------

def _minor(version: str) -> tuple[int, int]:
    match = re.match(r"^v?(\d+)\.(\d+)", str(version).strip())
    if not match:
        raise ValueError(f"{version!r} is not a Kubernetes version like 1.34")
    return int(match.group(1)), int(match.group(2))


def check_dra_version(gpu_access: str, kubernetes_version: str,
                      feature_gates: Iterable[str] = ()) -> list[Diagnostic]:
    """Problems with using `gpu_access` on this Kubernetes version (empty list = fine)."""
    if gpu_access not in GPU_ACCESS_MODES:
        return [Diagnostic(codes.DRA_VERSION, f"gpuAccess {gpu_access!r} is not one of {', '.join(GPU_ACCESS_MODES)}")]
    if gpu_access == "device-plugin":
        return []
    try:
        version = _minor(kubernetes_version)
    except ValueError as error:
        return [Diagnostic(codes.DRA_VERSION, str(error))]
    if version < (1, 34):
        return [Diagnostic(codes.DRA_VERSION,
                           f"gpuAccess {gpu_access} emits resource.k8s.io/v1 objects, which need "
                           f"Kubernetes >= 1.34 (cluster: {kubernetes_version}); use device-plugin")]
    if gpu_access == "dra-extended-resource" and version < (1, 36) and "DRAExtendedResource" not in set(feature_gates):
        return [Diagnostic(codes.DRA_VERSION,
                           f"gpuAccess dra-extended-resource needs DeviceClass extendedResourceName: beta "
                           f"(on by default) from Kubernetes 1.36; on {kubernetes_version} declare the "
                           f"DRAExtendedResource feature gate, or the API server drops the field")]
    return []


@dataclass
class DraObjects:
    """Everything DRA-related for one cluster."""

    device_classes: list[dict] = field(default_factory=list)
    claim_templates: list[dict] = field(default_factory=list)
    mapping_fragment: dict | None = None
    kueue_configmap_patch: dict | None = None
    kueue_deployment_patch: dict | None = None
    resource_classes: dict[str, list[str]] = field(default_factory=dict)   # quota name -> classes

    def all_objects(self) -> list[dict]:
        objects = self.device_classes + self.claim_templates
        objects += [o for o in (self.kueue_configmap_patch, self.kueue_deployment_patch) if o]
        return objects


def build_dra_objects(gpu_access: str, kubernetes_version: str,
                      namespace_devices: Mapping[str, Iterable[tuple[str, str | None]]],
                      feature_gates: Iterable[str] = (), base_kueue_config: Mapping | None = None,
                      catalogue: Catalogue | None = None,
                      device_counts: Mapping[str, Mapping[tuple[str, str | None], Iterable[int]]] | None = None,
                      ) -> DraObjects:
    """DeviceClasses, claim templates and the Kueue mapping for the devices teams use.

    `namespace_devices`: namespace -> (model, MIG profile or None for whole GPUs) it may request.
    `device_counts`: namespace -> device -> how many devices one pod may ask for; a template is
    written for each count (`-x<N>`) besides the one-device template, so a pod needing 8 GPUs
    lists one claim, not 8. One request with `count: N` is what Kueue v0.19 charges as N of the
    mapped resource (pkg/dra: ExactCount requests add up their counts per DeviceClass).
    device-plugin returns nothing (quota names are the device plugin's own). Raises PolicyError
    (KP706) when the Kubernetes version does not allow the mode."""
    problems = check_dra_version(gpu_access, kubernetes_version, feature_gates)
    if problems:
        raise PolicyError(problems)
    result = DraObjects()
    if gpu_access == "device-plugin":
        return result
    cat = catalogue or load_catalogue()
    wanted = {ns: sorted(set(devices), key=lambda d: (d[0], d[1] or "")) for ns, devices in namespace_devices.items()}
    models = sorted({m for devices in wanted.values() for m, p in devices if p is None})
    migs = sorted({(m, p) for devices in wanted.values() for m, p in devices if p is not None})
    if gpu_access == "dra-extended-resource":
        result.device_classes = extended_resource_device_classes(models, migs, cat)
        for device_class in result.device_classes:
            result.resource_classes[device_class["spec"]["extendedResourceName"]] = [device_class["metadata"]["name"]]
        return result
    classes = [gpu_device_class(m, catalogue=cat) for m in models]
    classes += [mig_device_class(m, p, catalogue=cat) for m, p in migs]
    result.device_classes = sorted(classes, key=lambda c: c["metadata"]["name"])
    mapping: dict[str, list[str]] = {}
    for m in models:
        mapping.setdefault(GPU_RESOURCE, []).append(gpu_class_name(m))
    for m, p in migs:
        mapping.setdefault(mig_resource_name(p), []).append(mig_class_name(m, p))
    result.resource_classes = {k: sorted(v) for k, v in sorted(mapping.items())}
    for namespace in sorted(wanted):
        counts_here = (device_counts or {}).get(namespace, {})
        for device in wanted[namespace]:
            model, profile = device
            class_name = gpu_class_name(model) if profile is None else mig_class_name(model, profile)
            for count in sorted({1} | {c for c in counts_here.get(device, ()) if c > 1}):
                result.claim_templates.append(claim_template(namespace, class_name, count))
    result.mapping_fragment = device_class_mappings(result.resource_classes)
    result.kueue_configmap_patch, result.kueue_deployment_patch = kueue_config_patch(
        result.mapping_fragment, base_kueue_config)
    return result
