"""The Kueue manager Configuration in every form kueue-policy emits and Kueue mounts.

Kueue reads one file, `controller_manager_config.yaml`, mounted from the ConfigMap
`kueue-manager-config`; Helm installs write that file from the value
`managerConfig.controllerManagerConfigYaml`. `evaluate` accepts each form:

- a bare `config.kueue.x-k8s.io` Configuration;
- the ConfigMap (as `kubectl get configmap -o yaml` prints it, or the kustomize patch
  `out/<cluster>/kueue-config/kueue-manager-config.patch.yaml`, which is the same ConfigMap):
  key `controller_manager_config.yaml` of `data`;
- the Helm values file (`out/<cluster>/kueue-config/helm-values.yaml`): no kind, the text under
  `managerConfig.controllerManagerConfigYaml`.

A Configuration in one of these forms that cannot be read is an error (exit 1) with the file and
line: evaluating without it would blame the jobs (an unmapped DeviceClass, no fair sharing) for
what is the input's mistake. `oracle/input.go` applies the same rules for `--engine kueue`.
"""

from __future__ import annotations

from pathlib import Path

from compiler.core import codes, yamlio
from compiler.core.errors import Diagnostic, InputError, SourcePosition

CONFIG_GROUP = "config.kueue.x-k8s.io"
CONFIGMAP_KEY = "controller_manager_config.yaml"
HELM_VALUE = ("managerConfig", "controllerManagerConfigYaml")


def embedded_text(doc: dict) -> tuple[str, str, object] | None:
    """(field path, key name, value) of an embedded Configuration, or None when `doc` is not one
    of the wrapping forms (any other ConfigMap, any other object)."""
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if kind == "ConfigMap" and api_version == "v1":
        data = doc.get("data")
        if isinstance(data, dict) and CONFIGMAP_KEY in data:
            return f"data.{CONFIGMAP_KEY}", CONFIGMAP_KEY, data[CONFIGMAP_KEY]
        return None
    if kind is None and api_version is None:
        values = doc.get(HELM_VALUE[0])
        if isinstance(values, dict) and HELM_VALUE[1] in values:
            return ".".join(HELM_VALUE), HELM_VALUE[1], values[HELM_VALUE[1]]
    return None


def _inner_position(where: SourcePosition | None, key: str, line: int, column: int) -> SourcePosition | None:
    """The file position of line `line` of a block scalar under `key`, for a document starting at
    `where`: the key's own line (found again in the file, only on this error path) plus `line`.
    Without the file (stdin) the document's position stays, and the message gives the inner line."""
    if where is None:
        return None
    try:
        lines = Path(where.path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return where
    for index in range(max(0, where.line - 1), len(lines)):
        if lines[index].lstrip().startswith((f"{key}:", f'"{key}":', f"'{key}':")):
            # 0-based index of the inner line in the file; a parser reporting the end of the text
            # points one past its last line.
            target = min(index + line, len(lines) - 1)
            indent = len(lines[target]) - len(lines[target].lstrip())
            return SourcePosition(where.path, target + 1, indent + column)
    return where


def _error(message: str, where: SourcePosition | None) -> InputError:
    return InputError([Diagnostic(codes.EVAL_UNREADABLE, message, where)])


def unwrap(doc: dict, where: SourcePosition | None, what: str) -> dict:
    """The Configuration inside a wrapping form (see embedded_text), checked like a bare one.
    Raises InputError naming the file, line and cause."""
    found = embedded_text(doc)
    assert found is not None
    field, key, text = found
    if not isinstance(text, str):
        raise _error(f"{what}: {field} must be the Kueue Configuration as a YAML string, not a "
                     f"{type(text).__name__}", where)
    try:
        config = yamlio.load(text)
    except yamlio.YamlError as error:
        raise _error(f"{what}: {field} is not a readable Kueue Configuration: line {error.line} of the "
                     f"embedded YAML: {error.message}", _inner_position(where, key, error.line, error.column)) from None
    if not isinstance(config, dict) or config.get("kind") != "Configuration" or \
            not str(config.get("apiVersion", "")).startswith(CONFIG_GROUP + "/"):
        kind = config.get("kind") if isinstance(config, dict) else type(config).__name__
        raise _error(f"{what}: {field} does not hold a Kueue Configuration (apiVersion {CONFIG_GROUP}/..., "
                     f"kind Configuration; found {kind!s})", where)
    check_shape(config, where, f"{what}: {field}")
    return config


# Sections the engines read, and the type each must have: a wrong type here is a Configuration
# Kueue's manager refuses at start-up (strict decoding), never one to evaluate without.
_SECTIONS = {"fairSharing": dict, "resources": dict, "integrations": dict}
_RESOURCE_FIELDS = {"deviceClassMappings": list, "excludeResourcePrefixes": list, "quotaCheckStrategy": str}


def check_shape(config: dict, where: SourcePosition | None, what: str) -> None:
    """The fields the engines read have the types Kueue's Configuration gives them."""
    for section, wanted in _SECTIONS.items():
        value = config.get(section)
        if value is not None and not isinstance(value, wanted):
            raise _error(f"{what}: {section} must be a mapping, not a {type(value).__name__}", where)
    resources = config.get("resources") or {}
    for field, wanted in _RESOURCE_FIELDS.items():
        value = resources.get(field)
        if value is not None and not isinstance(value, wanted):
            raise _error(f"{what}: resources.{field} must be a {'list' if wanted is list else 'string'}, "
                         f"not a {type(value).__name__}", where)
    for index, mapping in enumerate(resources.get("deviceClassMappings") or []):
        if not isinstance(mapping, dict) or not isinstance(mapping.get("name"), str) or \
                not isinstance(mapping.get("deviceClassNames"), list):
            raise _error(f"{what}: resources.deviceClassMappings[{index}] must have a name and a list of "
                         "deviceClassNames", where)
