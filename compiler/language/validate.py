"""Stage 2, validate: loaded YAML documents -> typed policy documents.

Pydantic does the checking; this module's job is to turn its errors into diagnostics that point
at the user's line, in words a platform engineer reads without knowing pydantic.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from compiler.core import codes
from compiler.core.errors import DiagnosticSink, SourcePosition
from compiler.language.load import LoadedDocument, NodePath
from compiler.language.policy import API_VERSION, DOCUMENT_MODELS, ClusterDocument, Strict, TeamDocument

ModelT = TypeVar("ModelT", bound=Strict)


@dataclass(frozen=True)
class Located(Generic[ModelT]):
    """A validated document together with where it came from, for later diagnostics."""

    model: ModelT
    source: LoadedDocument

    @property
    def path(self) -> str:
        return self.source.path

    def position(self, *path: str | int, key: bool = False) -> SourcePosition:
        return self.source.position(path, key=key)


@dataclass
class ValidatedPolicy:
    clusters: list[Located[ClusterDocument]]
    teams: list[Located[TeamDocument]]
    # Names of Cluster documents that failed validation (None when the name itself is unusable):
    # teams that point at them are not checked further, so a typo in the cluster file does not
    # also read as "unknown cluster" in every team file.
    invalid_clusters: set[str | None] = field(default_factory=set)


# Names pydantic uses as location segments for the members of the policy's model unions.
_UNION_TAGS = frozenset({"MigLayout"})


def _existing_prefix(data: Any, loc: tuple) -> NodePath:
    """The longest prefix of a pydantic error location that exists in the user's data.

    Pydantic adds segments of its own for unions and validators (e.g. 'literal[...]', or the
    member's name 'MigLayout'); those must not end up in a message or a position lookup. A
    union member's tag is skipped, so an unknown key inside the member is still pointed at.
    """
    path: list[str | int] = []
    node = data
    for segment in loc:
        if isinstance(node, dict) and isinstance(segment, str) and segment in node:
            node = node[segment]
        elif isinstance(node, list) and isinstance(segment, int) and 0 <= segment < len(node):
            node = node[segment]
        elif isinstance(segment, str) and not segment.isidentifier() or segment in _UNION_TAGS:
            continue
        else:
            break
        path.append(segment)
    return tuple(path)


def dotted(path: NodePath) -> str:
    text = ""
    for segment in path:
        text += f"[{segment}]" if isinstance(segment, int) else (f".{segment}" if text else str(segment))
    return text


@lru_cache(maxsize=None)
def _model_schema(model_type: type[BaseModel]) -> dict:
    return model_type.model_json_schema(mode="validation")


def _objects(schema: dict, node: dict) -> list[dict]:
    """The object schemas a schema node may be: $ref followed, anyOf/oneOf branches expanded."""
    if "$ref" in node:
        return _objects(schema, schema["$defs"][node["$ref"].rsplit("/", 1)[-1]])
    branches = node.get("anyOf") or node.get("oneOf")
    if branches:
        return [found for branch in branches for found in _objects(schema, branch)]
    return [node]


def allowed_fields(model_type: type[BaseModel], loc: tuple) -> list[str]:
    """The field names allowed at a pydantic error location's parent (the models' own schema,
    walked by the location; segments pydantic adds for union members and validators are skipped)."""
    schema = _model_schema(model_type)
    nodes = [schema]
    for segment in loc:
        expanded = [o for node in nodes for o in _objects(schema, node)]
        if isinstance(segment, int):
            step = [o["items"] for o in expanded if isinstance(o.get("items"), dict)]
        else:
            step = [o["properties"][segment] for o in expanded if segment in o.get("properties", {})]
            step = step or [o["additionalProperties"] for o in expanded
                            if isinstance(o.get("additionalProperties"), dict)]
        nodes = step or nodes  # not a data segment: a union member tag such as 'MigLayout'
    return sorted({name for node in nodes for o in _objects(schema, node) for name in o.get("properties", {})})


def _did_you_mean(unknown: object, allowed: list[str]) -> str:
    """A misspelt field name's closest allowed name (difflib's ratio, case-insensitive)."""
    if not isinstance(unknown, str) or not allowed:
        return ""
    lowered = {name.lower(): name for name in allowed}
    close = difflib.get_close_matches(unknown.lower(), list(lowered), n=1, cutoff=0.6)
    return f"; did you mean '{lowered[close[0]]}'?" if close else ""


def _describe(error: dict, data: Any, path: NodePath,
              model_type: type[BaseModel] | None = None) -> tuple[str, str, bool]:
    """(code, message, point-at-key) for one pydantic error; with the model that was validated,
    an unknown field also gets the closest allowed name."""
    kind = error["type"]
    loc = error["loc"]
    field = dotted(path)
    if kind == "extra_forbidden":
        unknown = loc[-1]
        parent = dotted(path[:-1]) if path and path[-1] == unknown else field
        where = f" in {parent}" if parent else ""
        hint = _did_you_mean(unknown, allowed_fields(model_type, loc[:-1])) if model_type else ""
        return codes.UNKNOWN_FIELD, f"unknown field '{unknown}'{where}{hint}", True
    if kind == "missing":
        missing = loc[-1]
        where = f" in {field}" if field else ""
        return codes.MISSING_FIELD, f"required field '{missing}' is missing{where}", True
    message = error["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    value = error.get("input")
    shown = "" if isinstance(value, (dict, list)) else f" (got {value!r})"
    if kind == "string_pattern_mismatch" and path and (
            path[-1] in ("name", "parent", "cohort", "priority", "cluster") or path[-2:-1] == ("namespaces",)):
        return (codes.BAD_NAME,
                f"{field}: {value!r} is not a DNS-1123 label (lower-case letters, digits and '-', "
                "starting and ending with a letter or digit)", False)
    if kind == "string_too_long" and path and (path[-1] == "name" or path[-2:-1] == ("namespaces",)):
        return codes.BAD_NAME, f"{field}: {value!r} is longer than 63 characters", False
    if "quantity" in message:
        return codes.BAD_QUANTITY, f"{field}: {message}", False
    return codes.WRONG_TYPE, f"{field}: {message}{shown}" if field else f"{message}{shown}", False


def validate_documents(documents: list[LoadedDocument], sink: DiagnosticSink) -> ValidatedPolicy:
    policy = ValidatedPolicy(clusters=[], teams=[])
    for document in documents:
        data = document.data
        if not isinstance(data, dict):
            sink.error(codes.DOC_NOT_MAPPING,
                       f"a policy document must be a mapping with apiVersion, kind, metadata and spec, "
                       f"not a {type(data).__name__}", document.position())
            continue
        api_version = data.get("apiVersion")
        if api_version != API_VERSION:
            sink.error(codes.WRONG_API_VERSION,
                       f"apiVersion must be '{API_VERSION}'"
                       + (f", not {api_version!r}" if api_version is not None else " (it is missing)"),
                       document.position(("apiVersion",)))
            continue
        kind = data.get("kind")
        model_type = DOCUMENT_MODELS.get(kind) if isinstance(kind, str) else None
        if model_type is None:
            known = ", ".join(sorted(DOCUMENT_MODELS))
            sink.error(codes.UNKNOWN_KIND,
                       f"unknown kind {kind!r}; the policy language has {known}" if kind is not None
                       else f"kind is missing; the policy language has {known}",
                       document.position(("kind",)))
            continue
        try:
            model = model_type.model_validate(data)
        except ValidationError as error:
            if kind == "Cluster":
                name = data.get("metadata", {}).get("name") if isinstance(data.get("metadata"), dict) else None
                policy.invalid_clusters.add(name if isinstance(name, str) else None)
            report_model_errors(error, document, sink, model_type)
            continue
        located = Located(model, document)
        if isinstance(model, ClusterDocument):
            policy.clusters.append(located)
        else:
            policy.teams.append(located)  # type: ignore[arg-type]
    return policy


def report_model_errors(error: ValidationError, document: LoadedDocument, sink: DiagnosticSink,
                        model_type: type | None = None) -> None:
    """Each pydantic error of `document` (validated as `model_type`) as a coded diagnostic at the
    line it is about."""
    data = document.data
    for item in error.errors(include_url=False):
        path = _existing_prefix(data, item["loc"])
        code, message, at_key = _describe(item, data, path, model_type)
        if item["type"] == "extra_forbidden" and path and path[-1] == item["loc"][-1]:
            position = document.position(path, key=True)
        else:
            position = document.position(path, key=at_key)
        sink.error(code, message, position)
