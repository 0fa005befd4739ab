"""Built-in Kubernetes kinds, validated strictly against the OpenAPI schemas bundled with
kubernetes-validate, at the cluster's Kubernetes version.

We read kubernetes-validate's schema files directly instead of calling
`kubernetes_validate.validate`, for two reasons: it rebuilds the validator (and re-reads a
1.5 MB definitions file) on every call, and it picks the schema version by comparing version
strings ("1.4" > "1.34"). Here versions are compared as numbers, clamped to the bundled range,
and each validator is built once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from referencing import Registry, Resource

from .schema_check import KubernetesValidator, SchemaViolation, check

_SCHEMA_ROOT = "kubernetes-json-schema"
_DIR = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-local-strict$")


@lru_cache(maxsize=1)
def bundled_versions() -> tuple[tuple[int, int], ...]:
    root = resources.files("kubernetes_validate").joinpath(_SCHEMA_ROOT)
    found = set()
    for entry in root.iterdir():
        match = _DIR.match(entry.name)
        if match:
            found.add((int(match.group(1)), int(match.group(2))))
    return tuple(sorted(found))


def schema_version_for(kubernetes: tuple[int, ...]) -> tuple[int, int]:
    """The bundled schema set to use: the newest not newer than the cluster, clamped to the range."""
    versions = bundled_versions()
    wanted = (kubernetes[0], kubernetes[1])
    if wanted <= versions[0]:
        return versions[0]
    return [v for v in versions if v <= wanted][-1]


# What a bundled schema's file name can be made of: an apiVersion or kind with anything else (a
# typo, a path separator, 300 characters) names no built-in kind, and must not reach the file
# system as a path (too long a name is an OSError there, not a missing file).
_SCHEMA_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{0,120}\.json")


def _schema_file(api_version: str, kind: str) -> str | None:
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    name = f"{kind.lower()}-{group_version}.json"
    return name if _SCHEMA_NAME.fullmatch(name) else None


def _dir(version: tuple[int, int]) -> Any:
    return resources.files("kubernetes_validate").joinpath(_SCHEMA_ROOT).joinpath(
        f"v{version[0]}.{version[1]}.0-local-strict")


@lru_cache(maxsize=None)
def _registry(version: tuple[int, int]) -> Registry:
    definitions = json.loads(_dir(version).joinpath("_definitions.json").read_text())
    return Resource.from_contents(definitions) @ Registry()


@lru_cache(maxsize=None)
def _validator(version: tuple[int, int], api_version: str, kind: str) -> KubernetesValidator | None:
    name = _schema_file(api_version, kind)
    if name is None:
        return None
    path = _dir(version).joinpath(name)
    if not path.is_file():
        return None
    schema = json.loads(path.read_text())
    registry = Resource.from_contents(schema) @ _registry(version)
    return KubernetesValidator(schema, registry=registry)


def versions_serving(api_version: str, kind: str) -> list[tuple[int, int]]:
    name = _schema_file(api_version, kind)
    if name is None:
        return []
    return [v for v in bundled_versions() if _dir(v).joinpath(name).is_file()]


@dataclass(frozen=True)
class BuiltinResult:
    schema_version: tuple[int, int]
    known: bool                    # a schema exists for apiVersion/kind at this version
    violations: list[SchemaViolation]


def validate(obj: dict[str, Any], kubernetes: tuple[int, ...]) -> BuiltinResult:
    version = schema_version_for(kubernetes)
    validator = _validator(version, str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    if validator is None:
        return BuiltinResult(version, False, [])
    return BuiltinResult(version, True, check(validator, obj))


@lru_cache(maxsize=None)
def namespaced(api_version: str, kind: str) -> bool | None:
    """Whether the kind is namespaced, for the metadata check; None when not known here."""
    return _SCOPES.get(kind)


# Scopes of the built-in kinds the compiler emits or may emit (from the Kubernetes API reference).
_SCOPES: dict[str, bool] = {
    "Namespace": False, "DeviceClass": False, "ResourceClaimTemplate": True, "ConfigMap": True,
    "Deployment": True, "ClusterRole": False, "ClusterRoleBinding": False, "Role": True,
    "RoleBinding": True, "ServiceAccount": True, "PriorityClass": False, "Secret": True,
    "Service": True, "ResourceClaim": True, "ResourceSlice": False,
}
