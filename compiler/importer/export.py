"""A live cluster's export -> the Kueue objects it holds, each with the file and line it came from.

Files are read by the evaluator's reader (multi-document, `kind: List`, JSON, positions per list
item) and the Kueue manager Configuration by its Configuration reader (the ConfigMap, the Helm
values, a bare Configuration), so an export that `evaluate` reads, `import` reads the same way.
What import cannot use is an error with the file and line, never skipped: a policy written from
a partial reading would compile to a different cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.core import codes
from compiler.core.errors import Diagnostic, InputError, SourcePosition
from compiler.evaluator import configuration_forms
from compiler.evaluator.loader import load_documents
from compiler.evaluator.reader import read_files

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass", "Topology")
# Objects an export of this shape commonly holds that carry nothing of the queueing setup.
IGNORED = {("kueue.x-k8s.io", "Workload"), ("", "Namespace"), ("resource.k8s.io", "ResourceClaimTemplate"),
           ("kueue.x-k8s.io", "AdmissionCheck"), ("scheduling.k8s.io", "PriorityClass")}


@dataclass(frozen=True)
class ExportedObject:
    """One object of the export as it was written, and where."""

    doc: dict[str, Any]
    where: SourcePosition

    @property
    def kind(self) -> str:
        return self.doc["kind"]

    @property
    def name(self) -> str:
        return self.doc["metadata"]["name"]

    @property
    def namespace(self) -> str | None:
        return self.doc["metadata"].get("namespace")

    @property
    def api_version(self) -> str:
        return self.doc["apiVersion"]

    @property
    def spec(self) -> dict[str, Any]:
        spec = self.doc.get("spec")
        return spec if isinstance(spec, dict) else {}


@dataclass
class ClusterExport:
    """The export, by kind; objects kept in input order (the translation sorts where order is free)."""

    kueue: dict[str, list[ExportedObject]] = field(default_factory=lambda: {kind: [] for kind in KUEUE_KINDS})
    configuration: dict[str, Any] | None = None
    configuration_where: SourcePosition | None = None
    device_classes: list[ExportedObject] = field(default_factory=list)
    nodes: list[ExportedObject] = field(default_factory=list)
    ignored: list[ExportedObject] = field(default_factory=list)

    def of(self, kind: str) -> list[ExportedObject]:
        return self.kueue[kind]


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def _error(message: str, where: SourcePosition | None) -> Diagnostic:
    return Diagnostic(codes.IMPORT_BAD_INPUT, message, where)


def _check_object(doc: object, where: SourcePosition) -> str | None:
    """Why `doc` is not a usable object (None when it is)."""
    if not isinstance(doc, dict):
        return f"document is a {type(doc).__name__}, not a Kubernetes object"
    if not isinstance(doc.get("kind"), str) or not isinstance(doc.get("apiVersion"), str):
        return "object has no kind or apiVersion"
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return f"{doc['kind']} has no metadata.name"
    if doc["kind"] == "LocalQueue" and not isinstance(meta.get("namespace"), str):
        return f"LocalQueue {meta['name']} has no metadata.namespace"
    if doc.get("spec") is not None and not isinstance(doc.get("spec"), dict):
        return f"{doc['kind']} {meta['name']}: spec must be a mapping"
    return None


def expand(paths: list[str]) -> list[str]:
    """Files as given; a folder stands for its *.yaml/*.yml/*.json files at any depth, in path order."""
    expanded = []
    for path in paths:
        folder = Path(path)
        if path != "-" and folder.is_dir():
            expanded.extend(str(p) for p in sorted(folder.rglob("*")) if p.suffix in (".yaml", ".yml", ".json")
                            and p.is_file())
        else:
            expanded.append(path)
    return expanded


def read_export(paths: list[str], stdin_text: str | None = None) -> ClusterExport:
    """Every object of the files, or InputError naming each problem's file and line."""
    paths = expand(paths)
    export = ClusterExport()
    problems: list[Diagnostic] = []
    seen: dict[tuple, SourcePosition] = {}
    for doc, where in read_files(paths, stdin_text):
        if doc is None:
            continue
        if isinstance(doc, dict) and configuration_forms.embedded_text(doc) is not None:
            export.configuration = configuration_forms.unwrap(doc, where, "Kueue manager ConfigMap")
            export.configuration_where = where
            continue
        problem = _check_object(doc, where)
        if problem is not None:
            problems.append(_error(problem, where))
            continue
        group, kind = _group(doc["apiVersion"]), doc["kind"]
        if (group, kind) == ("config.kueue.x-k8s.io", "Configuration"):
            configuration_forms.check_shape(doc, where, "Kueue Configuration")
            export.configuration, export.configuration_where = doc, where
            continue
        obj = ExportedObject(doc, where)
        key = (group, kind, obj.namespace or "", obj.name)
        if key in seen:
            problems.append(Diagnostic(codes.IMPORT_BAD_INPUT, f"{kind} {obj.name} is defined twice", where,
                                       related=seen[key]))
            continue
        seen[key] = where
        if group == KUEUE_GROUP and kind in KUEUE_KINDS:
            export.kueue[kind].append(obj)
        elif (group, kind) == ("resource.k8s.io", "DeviceClass"):
            export.device_classes.append(obj)
        elif (group, kind) == ("", "Node"):
            export.nodes.append(obj)
        elif (group, kind) in IGNORED:
            export.ignored.append(obj)
        else:
            problems.append(_error(
                f"unknown kind {kind} ({doc['apiVersion']}) {obj.name}: import reads "
                f"{', '.join(KUEUE_KINDS)} ({KUEUE_GROUP}), the Kueue manager ConfigMap, DeviceClasses and Nodes",
                where))
    problems.extend(_engine_refusals(export))
    if problems:
        raise InputError(problems)
    return export


def _engine_refusals(export: ClusterExport) -> list[Diagnostic]:
    """What the admission engine's readers refuse in the Kueue objects (a quantity that is none, a
    selector that is not a mapping, a priority value that is not an integer...): the same
    reading `evaluate` gives them, here an error, since import must not leave an object out."""
    documents = [(obj.doc, obj.where) for kind, objs in export.kueue.items() if kind != "Topology" for obj in objs]
    state = load_documents(documents)
    return [Diagnostic(codes.IMPORT_BAD_INPUT, warning.message.removesuffix("; skipped"), warning.position)
            for warning in state.warnings if warning.code in (codes.EVAL_MALFORMED, codes.EVAL_BAD_OBJECT)]
