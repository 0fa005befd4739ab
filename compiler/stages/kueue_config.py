"""Kueue's manager Configuration: the policy's settings merged into the user's own, never replacing it.

Kueue reads one Configuration (controller_manager_config.yaml) at start-up. The policy needs a
few settings in it: `resources.deviceClassMappings` (DRA), and `fairSharing` (with the policy's
preemption strategies). Everything else there (waitForPodsReady, integrations, client QPS, ...)
belongs to whoever runs Kueue. So the compiler starts from

- `Cluster.spec.kueueConfig.base`, the user's own Configuration (a file in the policy folder, path
  relative to the cluster file), or else
- Kueue's default Configuration for the cluster's `kueueVersion` (package data in
  `compiler/kueue_defaults/<version>.yaml`, every integration Kueue enables by default),

adds what the policy needs, keeps every other value as it is, and refuses a base whose settings
would make Kueue behave unlike the verdicts the policy was judged with (file and line of the base).

The result ships twice: as the kustomize component (ConfigMap patch + a checksum that restarts
the manager) and as a Helm values fragment for Kueue's chart
(`managerConfig.controllerManagerConfigYaml`, the key charts/kueue/values.yaml reads).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from compiler.core import codes
from compiler.stages.build import WAVE_FOUNDATION, BuildResult, BuiltObject, Origin
from compiler.dra.classes import kueue_config_patch
from compiler.stages.emit import yaml_file
from compiler.core.errors import DiagnosticSink, SourcePosition
from compiler.language.load import LoadedDocument, PolicySourceFile, load_file
from compiler.stages.repository_files import Refused, RepositoryFiles

CONFIG_GROUP = "config.kueue.x-k8s.io/"
V1BETA1, V1BETA2 = CONFIG_GROUP + "v1beta1", CONFIG_GROUP + "v1beta2"
HELM_VALUES_PATH = "kueue-config/helm-values.yaml"
COMPONENT_PREFIX = "kueue-config/"


def is_kueue_configuration(document: LoadedDocument) -> bool:
    data = document.data
    return isinstance(data, dict) and str(data.get("apiVersion", "")).startswith(CONFIG_GROUP)


def split_configurations(documents: list[LoadedDocument]) -> tuple[list[LoadedDocument], dict[str, LoadedDocument]]:
    """(policy documents, Kueue Configurations by display path). A Configuration kept in the
    policy folder is a base for `kueueConfig.base`, not a policy document."""
    policy = [d for d in documents if not is_kueue_configuration(d)]
    configs = {d.path: d for d in documents if is_kueue_configuration(d)}
    return policy, configs


def default_configuration(kueue_version: str) -> dict | None:
    """Kueue's own default Configuration for this minor version, or None when none is shipped."""
    minor = ".".join(kueue_version.split(".")[:2])
    resource = resources.files("compiler") / "kueue_defaults" / f"{minor}.yaml"
    if not resource.is_file():
        return None
    return yaml.safe_load(resource.read_text(encoding="utf-8"))


def shipped_versions() -> list[str]:
    folder = resources.files("compiler") / "kueue_defaults"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


@dataclass
class Base:
    """The Configuration merged into: its data, and where it came from (None = Kueue's default)."""

    data: dict
    document: LoadedDocument | None

    def at(self, *path: str | int, key: bool = False) -> SourcePosition | None:
        return self.document.position(path, key=key) if self.document is not None else None

    @property
    def label(self) -> str:
        return self.document.path if self.document is not None else "Kueue's default Configuration"


def base_display_path(cluster: Any) -> str:
    """`spec.kueueConfig.base` as a display path (relative to the policy folder's parent)."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(cluster.located.path), cluster.spec.kueueConfig.base))


def _in_policy_folder(policy_file: str, wanted: str) -> bool:
    return wanted.startswith(policy_file.split("/", 1)[0] + "/") if "/" in policy_file else "/" not in wanted


def load_outside_bases(clusters: list, configs: dict[str, LoadedDocument], repository: RepositoryFiles | None,
                       sink: DiagnosticSink) -> None:
    """Read each `kueueConfig.base` that names a file outside the policy folder from the
    repository the policy lives in, into `configs`; a refused path is an error at the field."""
    for cluster in clusters:
        if cluster.spec.kueueConfig.base is None:
            continue
        wanted = base_display_path(cluster)
        if wanted in configs or _in_policy_folder(cluster.located.path, wanted):
            continue
        at = cluster.located.position("spec", "kueueConfig", "base")
        if repository is None:
            sink.error(codes.KUEUE_CONFIG_BASE_MISSING, f"spec.kueueConfig.base: {wanted} is outside the policy "
                       "folder, and this policy was not read from a repository to find it in", at)
            continue
        try:
            content = repository.read(wanted)
        except Refused as refused:
            sink.error(codes.KUEUE_CONFIG_BASE_MISSING, f"spec.kueueConfig.base refused: {refused}", at)
            continue
        documents = load_file(PolicySourceFile(wanted, content), sink, kind="Kueue Configurations")
        if len(documents) != 1 or not is_kueue_configuration(documents[0]):
            sink.error(codes.KUEUE_CONFIG_BASE_MISSING, f"spec.kueueConfig.base: {wanted} is not a Kueue "
                       f"Configuration (one document of kind Configuration, apiVersion {V1BETA1} or {V1BETA2})", at)
            continue
        configs[wanted] = documents[0]


def find_base(cluster: Any, configs: dict[str, LoadedDocument], sink: DiagnosticSink) -> Base | None:
    """The base named by `spec.kueueConfig.base`, else Kueue's default for `kueueVersion`."""
    spec = cluster.spec
    located = cluster.located
    if spec.kueueConfig.base is None:
        default = default_configuration(spec.kueueVersion)
        if default is None:
            sink.error(codes.KUEUE_CONFIG_NO_DEFAULT,
                       f"kueue-policy ships Kueue's default Configuration for Kueue {', '.join(shipped_versions())}, "
                       f"not {spec.kueueVersion}: give your installation's controller_manager_config.yaml as "
                       f"spec.kueueConfig.base", located.position("spec", "kueueVersion"))
            return None
        return Base(default, None)
    wanted = base_display_path(cluster)
    document = configs.get(wanted)
    if document is None:
        if not _in_policy_folder(located.path, wanted):
            return None             # reported by load_outside_bases, which read or refused it
        known = ", ".join(sorted(configs)) or "none"
        sink.error(codes.KUEUE_CONFIG_BASE_MISSING,
                   f"spec.kueueConfig.base: {wanted} is not a Kueue Configuration in the policy folder "
                   f"(Kueue Configurations found: {known})", located.position("spec", "kueueConfig", "base"))
        return None
    if document.data.get("kind") != "Configuration" or document.data.get("apiVersion") not in (V1BETA1, V1BETA2):
        sink.error(codes.KUEUE_CONFIG_BASE_MISSING,
                   f"{wanted} must be kind Configuration, apiVersion {V1BETA1} or {V1BETA2}",
                   document.position(("kind",)))
        return None
    return Base(document.data, document)


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


# --- What the policy needs, and where a base disagrees -----------------------------------------

@dataclass(frozen=True)
class Needs:
    """The Configuration settings a cluster's policy depends on."""

    mappings: dict[str, list[str]]            # resource name -> DeviceClasses (DRA)
    fair_sharing: bool
    strategies: list[str]
    strategies_explicit: bool                  # the policy wrote preemptionStrategies itself
    counted: frozenset[str]                    # resources the ClusterQueues' quotas count
    kueue_version: str


def needs_of(cluster: Any, fragment: dict | None, objects: list[Any]) -> Needs:
    spec = cluster.spec
    entries = ((fragment or {}).get("resources") or {}).get("deviceClassMappings") or []
    counted = {resource for built in objects if built.obj.get("kind") == "ClusterQueue"
               for group in built.obj["spec"].get("resourceGroups", []) for resource in group["coveredResources"]}
    return Needs(mappings={e["name"]: list(e["deviceClassNames"]) for e in entries},
                 fair_sharing=spec.fairSharing.enabled,
                 strategies=list(spec.fairSharing.preemptionStrategies),
                 strategies_explicit="preemptionStrategies" in spec.fairSharing.model_fields_set,
                 counted=frozenset(counted), kueue_version=spec.kueueVersion)


def _fair_sharing_on(data: dict, api_version: str) -> bool:
    section = data.get("fairSharing")
    if not isinstance(section, dict):
        return False
    # v1beta1 has an explicit switch; in v1beta2 the section's presence turns fair sharing on.
    return bool(section.get("enable")) if api_version == V1BETA1 else True


def contradictions(base: Base, needs: Needs, policy_at: SourcePosition) -> list[tuple[str, SourcePosition | None]]:
    """(message, base position) for every base setting the policy cannot live with."""
    data, api = base.data, base.data.get("apiVersion")
    found: list[tuple[str, SourcePosition | None]] = []
    if api == V1BETA2 and _minor(needs.kueue_version) < (0, 15):
        found.append((f"{base.label} uses {V1BETA2}, which Kueue {needs.kueue_version} does not serve "
                      f"(use {V1BETA1})", base.at("apiVersion")))
    on = _fair_sharing_on(data, str(api))
    if needs.fair_sharing and not on and isinstance(data.get("fairSharing"), dict):
        found.append((f"{base.label} turns fair sharing off (fairSharing.enable: false) while the policy "
                      f"enables it ({policy_at})", base.at("fairSharing", "enable")))
    if on and not needs.fair_sharing:
        found.append((f"{base.label} enables fair sharing, which the policy's verdicts do not assume: set "
                      f"spec.fairSharing.enabled: true in the cluster policy ({policy_at}) or remove it here",
                      base.at("fairSharing", key=True)))
    strategies = (data.get("fairSharing") or {}).get("preemptionStrategies") if on else None
    if needs.fair_sharing and needs.strategies_explicit and strategies is not None and list(strategies) != needs.strategies:
        found.append((f"{base.label} sets fairSharing.preemptionStrategies {list(strategies)}; the policy sets "
                      f"{needs.strategies} ({policy_at})", base.at("fairSharing", "preemptionStrategies")))
    found.extend(_resource_contradictions(base, needs))
    return found


def _resource_contradictions(base: Base, needs: Needs) -> list[tuple[str, SourcePosition | None]]:
    section = base.data.get("resources") or {}
    found: list[tuple[str, SourcePosition | None]] = []
    owner = {cls: name for name, classes in needs.mappings.items() for cls in classes}
    for index, entry in enumerate(section.get("deviceClassMappings") or []):
        name, classes = entry.get("name"), list(entry.get("deviceClassNames") or [])
        if name in needs.mappings and sorted(classes) != sorted(needs.mappings[name]):
            found.append((f"{base.label} counts {name} from DeviceClasses {sorted(classes)}; the policy counts it "
                          f"from {sorted(needs.mappings[name])}",
                          base.at("resources", "deviceClassMappings", index, "deviceClassNames")))
        for cls in classes:
            if cls in owner and owner[cls] != name:
                found.append((f"{base.label} maps DeviceClass {cls} to {name}; the policy maps it to {owner[cls]}",
                              base.at("resources", "deviceClassMappings", index, "name")))
    for index, transformation in enumerate(section.get("transformations") or []):
        if transformation.get("input") in needs.counted:
            found.append((f"{base.label} transforms {transformation.get('input')}, a resource the policy's "
                          f"ClusterQueues count as it is", base.at("resources", "transformations", index, "input")))
    for index, prefix in enumerate(section.get("excludeResourcePrefixes") or []):
        hit = sorted(r for r in needs.counted if str(r).startswith(str(prefix)))
        if hit:
            found.append((f"{base.label} excludes {', '.join(hit)} from quota (prefix {prefix}), which the "
                          f"policy's ClusterQueues count", base.at("resources", "excludeResourcePrefixes", index)))
    return found


# --- The merge ---------------------------------------------------------------------------------

def merged_configuration(base: Base, needs: Needs) -> dict:
    """The base with the policy's settings added; every other key and value as the base has it."""
    merged = dict(base.data)
    api = str(merged.get("apiVersion"))
    if needs.mappings:
        section = dict(merged.get("resources") or {})
        existing = [dict(e) for e in section.get("deviceClassMappings") or []]
        present = {e.get("name") for e in existing}
        section["deviceClassMappings"] = existing + [
            {"name": name, "deviceClassNames": sorted(needs.mappings[name])}
            for name in sorted(needs.mappings) if name not in present]
        merged["resources"] = section
    if needs.fair_sharing:
        section = dict(merged.get("fairSharing") or {})
        if needs.strategies_explicit or "preemptionStrategies" not in section:
            section["preemptionStrategies"] = list(needs.strategies)
        if api == V1BETA1:
            section = {"enable": True, **section}
        merged["fairSharing"] = section
    return merged


def helm_values(configuration_text: str) -> dict:
    """The values fragment for Kueue's Helm chart (charts/kueue/values.yaml reads this key)."""
    return {"managerConfig": {"controllerManagerConfigYaml": configuration_text}}


def needed(cluster: Any, fragment: dict | None) -> bool:
    """A component is written when the policy needs settings or the user gave a base to manage."""
    return bool(fragment) or cluster.spec.kueueConfig.base is not None


def add_kueue_config(built: BuildResult, cluster: Any, configs: dict[str, LoadedDocument], sink: DiagnosticSink) -> None:
    """Add the kueue-config component's patches and the Helm values file to a cluster's build."""
    if not needed(cluster, built.kueue_config_fragment):
        return
    base = find_base(cluster, configs, sink)
    if base is None:
        return
    needs = needs_of(cluster, built.kueue_config_fragment, built.objects)
    policy_at = cluster.located.position("spec", "fairSharing")
    problems = contradictions(base, needs, policy_at)
    for message, position in problems:
        sink.error(codes.KUEUE_CONFIG_CONTRADICTS, message, position)
    if problems:
        return
    built.kueue_configuration = merged_configuration(base, needs)
    configmap, deployment = kueue_config_patch({}, built.kueue_configuration)
    field = ("spec", "kueueConfig", "base") if base.document is not None else ("spec", "kueueVersion")
    origin = Origin(cluster.located, field)
    built.objects.append(BuiltObject(configmap, origin, WAVE_FOUNDATION,
                                     COMPONENT_PREFIX + "kueue-manager-config.patch.yaml", is_patch=True))
    built.objects.append(BuiltObject(deployment, origin, WAVE_FOUNDATION,
                                     COMPONENT_PREFIX + "kueue-controller-manager.patch.yaml", is_patch=True))
    text = next(iter(configmap["data"].values()))
    built.extra_files[HELM_VALUES_PATH] = yaml_file(helm_values(text), cluster.located.path)
