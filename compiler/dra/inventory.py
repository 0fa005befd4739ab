"""Reading the inputs of `devices check`: ResourceSlices (the inventory) and the DeviceClasses and
ResourceClaimTemplates to check against them, each with its position in its file.

Inventory: what `kubectl get resourceslices -o yaml` prints (a List), or ResourceSlice documents,
in resource.k8s.io/v1, v1beta2 (flat devices) or v1beta1 (devices[].basic). Anything else in an
inventory file is refused: a typo'd file would otherwise "match nothing" and hide the real answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from compiler.core import codes
from compiler.dra.classes import MODEL_ANNOTATION
from compiler.cel.device import DeviceDataError, device_variable
from compiler.core.errors import Diagnostic, DiagnosticSink, PolicyError, SourcePosition
from compiler.language.load import LoadedDocument, PolicySourceFile, load_file

RESOURCE_GROUP = "resource.k8s.io"
SUPPORTED_VERSIONS = ("v1", "v1beta2", "v1beta1")
LIST_KINDS = ("List", "ResourceSliceList", "DeviceClassList", "ResourceClaimTemplateList")


@dataclass(frozen=True)
class InventoryDevice:
    slice_name: str
    pool: str
    node: str              # node name, or "(all nodes)" / "(node selector)"
    name: str
    driver: str
    variable: dict         # the CEL `device` object
    position: SourcePosition

    @property
    def key(self) -> str:
        return f"{self.driver}/{self.pool}/{self.name}"


@dataclass(frozen=True)
class Selector:
    expression: str
    position: SourcePosition      # of the expression's first character
    block: bool = False           # written as a YAML block scalar (| or >)


@dataclass(frozen=True)
class DeviceClassSpec:
    name: str
    selectors: tuple[Selector, ...]
    extended_resource_name: str | None
    position: SourcePosition
    gpu_model: str | None = None     # the kueue-policy.io/gpu-model annotation the compiler writes


@dataclass(frozen=True)
class ClaimRequest:
    name: str
    device_class: str
    selectors: tuple[Selector, ...]
    count: int
    allocation_mode: str
    position: SourcePosition


@dataclass(frozen=True)
class ClaimTemplateSpec:
    namespace: str
    name: str
    requests: tuple[ClaimRequest, ...]
    position: SourcePosition

    @property
    def qualified_name(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class Manifests:
    device_classes: list[DeviceClassSpec] = field(default_factory=list)
    claim_templates: list[ClaimTemplateSpec] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)   # e.g. firstAvailable not checked


def _read(path: Path, sink: DiagnosticSink, display: str | None = None) -> list[LoadedDocument]:
    try:
        content = path.read_bytes()
    except OSError as error:
        sink.error(codes.UNREADABLE, f"cannot read {path}: {error.strerror}", SourcePosition(str(path)))
        return []
    return load_file(PolicySourceFile(display or str(path), content), sink)


def _text_lines(path: Path) -> list[str]:
    """The file's lines, to place positions inside block scalars (already read once, so this
    cannot fail for a file that loaded)."""
    return path.read_bytes().decode("utf-8", errors="replace").splitlines()


def _objects(document: LoadedDocument) -> Iterable[tuple[dict, tuple, LoadedDocument]]:
    """(object, path in document) for a document that is an object or a List of objects."""
    data = document.data
    if isinstance(data, dict) and data.get("kind") in LIST_KINDS and isinstance(data.get("items"), list):
        for index, item in enumerate(data["items"]):
            yield item, ("items", index), document
    else:
        yield data, (), document


def _group_version(api_version: Any) -> tuple[str, str]:
    group, _, version = str(api_version or "").rpartition("/")
    return group, version


def load_inventory(paths: Iterable[Path]) -> list[InventoryDevice]:
    """Every device of every ResourceSlice in `paths`; PolicyError (KP709) if any object is not a
    ResourceSlice or a device cannot be read."""
    sink = DiagnosticSink()
    devices: list[InventoryDevice] = []
    for path in paths:
        documents = _read(Path(path), sink)
        if not documents and not sink.errors:
            sink.error(codes.NOT_RESOURCE_SLICES, "the inventory file holds no ResourceSlice",
                       SourcePosition(str(path)))
        for document in documents:
            for obj, where, doc in _objects(document):
                position = doc.position(where)
                if not isinstance(obj, dict):
                    sink.error(codes.NOT_RESOURCE_SLICES, "expected a ResourceSlice object, found "
                               f"{type(obj).__name__}", position)
                    continue
                group, version = _group_version(obj.get("apiVersion"))
                if obj.get("kind") != "ResourceSlice" or group != RESOURCE_GROUP:
                    sink.error(codes.NOT_RESOURCE_SLICES,
                               f"expected kind ResourceSlice (apiVersion {RESOURCE_GROUP}/v1), found "
                               f"kind {obj.get('kind')!r} apiVersion {obj.get('apiVersion')!r}", position)
                    continue
                if version not in SUPPORTED_VERSIONS:
                    sink.error(codes.NOT_RESOURCE_SLICES,
                               f"ResourceSlice apiVersion {obj.get('apiVersion')} is not supported "
                               f"(use {', '.join(RESOURCE_GROUP + '/' + v for v in SUPPORTED_VERSIONS)})",
                               position)
                    continue
                devices.extend(_slice_devices(obj, where, doc, sink))
    sink.raise_if_errors()
    return devices


def _slice_devices(obj: dict, where: tuple, doc: LoadedDocument,
                   sink: DiagnosticSink) -> list[InventoryDevice]:
    name = str((obj.get("metadata") or {}).get("name", "?"))
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("driver"), str):
        sink.error(codes.NOT_RESOURCE_SLICES, f"ResourceSlice {name} has no spec.driver",
                   doc.position(where))
        return []
    driver = spec["driver"]
    pool = str((spec.get("pool") or {}).get("name", name))
    node = spec.get("nodeName") or ("(all nodes)" if spec.get("allNodes") else "(node selector)")
    raw_devices = spec.get("devices") or []
    if not isinstance(raw_devices, list):
        sink.error(codes.NOT_RESOURCE_SLICES, f"ResourceSlice {name}: spec.devices is not a list",
                   doc.position(where + ("spec", "devices")))
        return []
    result = []
    for index, raw in enumerate(raw_devices):
        position = doc.position(where + ("spec", "devices", index))
        if not isinstance(raw, dict) or not raw.get("name"):
            sink.error(codes.NOT_RESOURCE_SLICES, f"ResourceSlice {name}: device {index} has no name",
                       position)
            continue
        try:
            variable = device_variable(raw, driver)
        except DeviceDataError as error:
            sink.error(codes.NOT_RESOURCE_SLICES, f"ResourceSlice {name}: {error}", position)
            continue
        result.append(InventoryDevice(name, pool, str(node), str(raw["name"]), driver, variable, position))
    return result


def _selector(expression: str, position: SourcePosition, lines: list[str]) -> Selector:
    """Point at the expression's first character: for a block scalar (`expression: |-`) that is
    the next line, at its indentation, not the indicator."""
    line = lines[position.line - 1] if 0 < position.line <= len(lines) else ""
    if line[position.column - 1:position.column] in ("|", ">") and position.line < len(lines):
        content = lines[position.line]
        indent = len(content) - len(content.lstrip(" "))
        return Selector(expression, SourcePosition(position.path, position.line + 1, indent + 1), True)
    if line[position.column - 1:position.column] in ("'", '"'):
        return Selector(expression, SourcePosition(position.path, position.line, position.column + 1))
    return Selector(expression, position)


def _selectors(raw: Any, where: tuple, doc: LoadedDocument, sink: DiagnosticSink,
               owner: str, lines: list[str]) -> tuple[Selector, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        sink.error(codes.BAD_MANIFEST, f"{owner}: selectors must be a list", doc.position(where))
        return ()
    selectors = []
    for index, item in enumerate(raw):
        expression = ((item or {}).get("cel") or {}).get("expression") if isinstance(item, dict) else None
        if not isinstance(expression, str):
            sink.error(codes.BAD_MANIFEST, f"{owner}: selector {index} has no cel.expression",
                       doc.position(where + (index,)))
            continue
        selectors.append(_selector(expression, doc.position(where + (index, "cel", "expression")), lines))
    return tuple(selectors)


def _requests(spec: dict, where: tuple, doc: LoadedDocument, sink: DiagnosticSink,
              owner: str, lines: list[str]) -> tuple[ClaimRequest, ...]:
    devices = ((spec.get("spec") or {}).get("devices") or {})
    raw_requests = devices.get("requests") or []
    base = where + ("spec", "spec", "devices", "requests")
    requests = []
    for index, raw in enumerate(raw_requests if isinstance(raw_requests, list) else []):
        here = base + (index,)
        if not isinstance(raw, dict):
            sink.error(codes.BAD_MANIFEST, f"{owner}: request {index} is not a mapping", doc.position(here))
            continue
        name = str(raw.get("name", f"#{index}"))
        if isinstance(raw.get("exactly"), dict):
            body, body_where = raw["exactly"], here + ("exactly",)
        elif raw.get("firstAvailable") is not None:
            sink.warning(codes.BAD_MANIFEST, f"{owner}: request {name} uses firstAvailable, which "
                         "Kueue cannot charge; not checked", doc.position(here))
            continue
        else:
            body, body_where = raw, here          # v1beta1 flat form
        device_class = body.get("deviceClassName")
        if not isinstance(device_class, str):
            sink.error(codes.BAD_MANIFEST, f"{owner}: request {name} has no deviceClassName",
                       doc.position(here))
            continue
        count = body.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            sink.error(codes.BAD_MANIFEST, f"{owner}: request {name} count must be >= 1",
                       doc.position(body_where + ("count",)))
            continue
        requests.append(ClaimRequest(name, device_class,
                                     _selectors(body.get("selectors"), body_where + ("selectors",), doc,
                                                sink, f"{owner} request {name}", lines),
                                     int(count), str(body.get("allocationMode", "ExactCount")),
                                     doc.position(here)))
    return tuple(requests)


def manifest_paths(out_dir: Path | None, files: Iterable[Path]) -> list[Path]:
    paths = [Path(f) for f in files]
    if out_dir is not None:
        paths += sorted(p for p in Path(out_dir).rglob("*")
                        if p.is_file() and p.suffix in (".yaml", ".yml")
                        and not any(part.startswith(".") for part in p.relative_to(out_dir).parts))
    return paths


def load_manifests(paths: Iterable[Path]) -> Manifests:
    """DeviceClasses and ResourceClaimTemplates among the objects in `paths` (other kinds, e.g.
    the rest of a compiled out/ folder, are skipped)."""
    sink = DiagnosticSink()
    manifests = Manifests()
    for path in paths:
        documents = _read(Path(path), sink)
        lines = _text_lines(Path(path)) if documents else []
        for document in documents:
            for obj, where, doc in _objects(document):
                if not isinstance(obj, dict):
                    continue
                group, _version = _group_version(obj.get("apiVersion"))
                kind = obj.get("kind")
                if group != RESOURCE_GROUP or kind not in ("DeviceClass", "ResourceClaimTemplate"):
                    continue
                metadata = obj.get("metadata") or {}
                name = metadata.get("name")
                position = doc.position(where)
                if not isinstance(name, str):
                    sink.error(codes.BAD_MANIFEST, f"{kind} without metadata.name", position)
                    continue
                spec = obj.get("spec") or {}
                if kind == "DeviceClass":
                    manifests.device_classes.append(DeviceClassSpec(
                        name, _selectors(spec.get("selectors"), where + ("spec", "selectors"), doc, sink,
                                         f"DeviceClass {name}", lines),
                        spec.get("extendedResourceName"), position,
                        ((metadata.get("annotations") or {}).get(MODEL_ANNOTATION))))
                else:
                    namespace = str(metadata.get("namespace", "default"))
                    manifests.claim_templates.append(ClaimTemplateSpec(
                        namespace, name,
                        _requests(spec, where, doc, sink, f"ResourceClaimTemplate {namespace}/{name}",
                                  lines),
                        position))
    duplicates = {}
    for device_class in manifests.device_classes:
        if device_class.name in duplicates:
            sink.error(codes.BAD_MANIFEST, f"DeviceClass {device_class.name} is defined twice",
                       device_class.position, related=duplicates[device_class.name])
        duplicates.setdefault(device_class.name, device_class.position)
    if sink.errors:
        raise PolicyError(sink.items)
    manifests.warnings = list(sink.warnings)
    return manifests
