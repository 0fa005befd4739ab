"""Stage 1, load: policy files -> plain YAML data with the position of every node.

Two readers, one result. The fast path (libyaml, YAML 1.2 core scalars) reads valid files; the
position of every node comes from ruamel.yaml's round-trip loader, on demand, when a diagnostic
needs one. A file the fast path cannot read faithfully goes to ruamel directly, which reports
syntax errors and duplicate keys at their position.

The loader is deliberately strict, because a policy file is reviewed by people and executed by a
machine: it refuses non-UTF-8 text, tabs in indentation, duplicate keys, and anchors/aliases
(refused while *parsing*, before anything is composed, so an alias bomb costs nothing).

Positions are kept in a side table keyed by the node's path (a tuple of keys and indexes, the
same shape pydantic uses for error locations), so later stages can point at the exact line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Mapping

import yaml as pyyaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from compiler import codes
from compiler.errors import Diagnostic, DiagnosticSink, PolicyError, SourcePosition

POLICY_SUFFIXES = (".yaml", ".yml")
# A policy file is written by hand; anything this large is a mistake (or an attack).
MAX_FILE_BYTES = 8 * 1024 * 1024

NodePath = tuple[str | int, ...]


@dataclass
class LoadedDocument:
    """One YAML document of one policy file, as plain Python data plus a position table.

    The position table comes from ruamel.yaml's round-trip loader. A valid policy never needs
    it, so when the data was read by the fast path it is built on first use (only files that
    produce a diagnostic pay for it)."""

    path: str  # display path, e.g. "policies/teams/alpha.yaml"
    index: int  # 0-based document index within the file
    data: Any
    _positions: dict[NodePath, SourcePosition] | None = field(default=None, repr=False)
    _key_positions: dict[NodePath, SourcePosition] | None = field(default=None, repr=False)
    _text: str | None = field(default=None, repr=False)  # set when positions are still to be read

    @property
    def positions(self) -> dict[NodePath, SourcePosition]:
        self._ensure_positions()
        return self._positions  # type: ignore[return-value]

    @property
    def key_positions(self) -> dict[NodePath, SourcePosition]:
        self._ensure_positions()
        return self._key_positions  # type: ignore[return-value]

    def _ensure_positions(self) -> None:
        if self._positions is not None:
            return
        self._positions, self._key_positions = {}, {}
        if self._text is None:
            return
        for index, node in enumerate(_yaml().load_all(self._text)):
            if index == self.index:
                _record(node, (), self, self.path)
                break
        self._text = None

    def position(self, path: Iterable[str | int] = (), *, key: bool = False) -> SourcePosition:
        """The position of the node at `path`, or of its nearest ancestor that has one.

        With key=True, prefer the position of the mapping key (useful for "unknown field").
        """
        node_path = tuple(path)
        while True:
            if key and node_path in self.key_positions:
                return self.key_positions[node_path]
            if node_path in self.positions:
                return self.positions[node_path]
            if not node_path:
                return SourcePosition(self.path, 1, 1)
            node_path = node_path[:-1]


@dataclass(frozen=True)
class PolicySourceFile:
    display_path: str
    content: bytes


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    return yaml


_TAB_INDENT = re.compile(r"^[ ]*\t", re.MULTILINE)


def _decode(source: PolicySourceFile, sink: DiagnosticSink) -> str | None:
    try:
        return source.content.decode("utf-8")
    except UnicodeDecodeError as error:
        before = source.content[: error.start]
        line = before.count(b"\n") + 1
        column = error.start - (before.rfind(b"\n") + 1) + 1
        sink.error(codes.NOT_UTF8,
                   f"file is not valid UTF-8 (byte 0x{source.content[error.start]:02x} cannot be decoded)",
                   SourcePosition(source.display_path, line, column))
        return None


def _check_tabs(source: PolicySourceFile, text: str, sink: DiagnosticSink) -> bool:
    match = _TAB_INDENT.search(text)
    if match is None:
        return True
    line = text.count("\n", 0, match.start()) + 1
    column = match.end() - match.start()
    sink.error(codes.TABS, "tab character used for indentation; YAML allows only spaces",
               SourcePosition(source.display_path, line, column))
    return False


def _check_no_aliases(source: PolicySourceFile, text: str, sink: DiagnosticSink) -> bool:
    """Walk the event stream (nothing is composed, so a bomb costs nothing) and refuse anchors
    and aliases. libyaml's parser is used for speed; syntax errors are left to the loader."""
    try:
        for event in pyyaml.parse(text, Loader=pyyaml.CSafeLoader):
            anchor = getattr(event, "anchor", None)
            if isinstance(event, pyyaml.AliasEvent) or (
                    isinstance(event, (pyyaml.ScalarEvent, pyyaml.CollectionStartEvent)) and anchor):
                mark = event.start_mark
                what = "alias" if isinstance(event, pyyaml.AliasEvent) else "anchor"
                sink.error(codes.ALIAS_REJECTED,
                           f"YAML {what} '{anchor}' is not allowed in policy files; write the value out",
                           SourcePosition(source.display_path, mark.line + 1, mark.column + 1))
                return False
    except pyyaml.YAMLError:
        pass  # reported, with ruamel's position and wording, when the file is loaded
    return True


def _report_yaml_error(source: PolicySourceFile, error: MarkedYAMLError, sink: DiagnosticSink) -> None:
    mark = error.problem_mark or error.context_mark
    position = (SourcePosition(source.display_path, mark.line + 1, mark.column + 1)
                if mark is not None else SourcePosition(source.display_path))
    if isinstance(error, DuplicateKeyError):
        key = re.search(r'found duplicate key "([^"]*)"', str(error))
        name = key.group(1) if key else "?"
        sink.error(codes.DUPLICATE_KEY, f"duplicate key '{name}' in the same mapping", position)
        return
    problem = (error.problem or error.context or "invalid YAML").strip()
    if "\\t" in problem or "'\\t'" in problem or "tab" in problem.lower():
        sink.error(codes.TABS, f"tab character is not allowed here: {problem}", position)
        return
    context = f" ({error.context.strip()})" if error.context and error.problem else ""
    sink.error(codes.YAML_SYNTAX, f"YAML syntax error: {problem}{context}", position)


def _plain(node: Any, path: NodePath, doc: LoadedDocument, display_path: str) -> Any:
    """Convert ruamel's round-trip nodes into plain data, recording every node's position."""
    if isinstance(node, CommentedMap):
        result: dict[str, Any] = {}
        for key, value in node.items():
            key_path = path + (key if isinstance(key, (str, int)) else str(key),)
            try:
                key_line, key_col = node.lc.key(key)
                doc.key_positions[key_path] = SourcePosition(display_path, key_line + 1, key_col + 1)
            except (KeyError, TypeError, AttributeError):
                pass
            try:
                value_line, value_col = node.lc.value(key)
                doc.positions[key_path] = SourcePosition(display_path, value_line + 1, value_col + 1)
            except (KeyError, TypeError, AttributeError):
                if key_path in doc.key_positions:
                    doc.positions[key_path] = doc.key_positions[key_path]
            result[key if isinstance(key, str) else str(key)] = _plain(value, key_path, doc, display_path)
        return result
    if isinstance(node, CommentedSeq):
        items = []
        for index, value in enumerate(node):
            item_path = path + (index,)
            try:
                line, col = node.lc.item(index)
                doc.positions[item_path] = SourcePosition(display_path, line + 1, col + 1)
            except (KeyError, TypeError, AttributeError, IndexError):
                pass
            items.append(_plain(value, item_path, doc, display_path))
        return items
    # Scalars: ruamel's subclasses of str/int/float/bool become their plain base types.
    if isinstance(node, bool):
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return node


def _record(node: Any, path: NodePath, doc: LoadedDocument, display_path: str) -> None:
    """Fill the document's position table from a ruamel round-trip node (data is discarded)."""
    if getattr(node, "lc", None) is not None and not path:
        doc._positions[()] = SourcePosition(display_path, node.lc.line + 1, node.lc.col + 1)  # type: ignore[index]
    _plain(node, path, doc, display_path)


class _FastLoader(pyyaml.CSafeLoader):
    """libyaml, reading scalars as YAML 1.2's core schema does (as ruamel.yaml does: `on` and `no`
    are strings, `010` is ten, no timestamps) and refusing duplicate keys. Any error sends the
    file to the ruamel path, which reports it with its position."""

    yaml_implicit_resolvers: dict = {}

    def construct_mapping(self, node, deep=False):  # noqa: ANN001 - PyYAML's signature
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise pyyaml.constructor.ConstructorError(None, None, "duplicate key", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_core_int(self, node):  # noqa: ANN001
        value = self.construct_scalar(node).replace("_", "")
        sign = -1 if value.startswith("-") else 1
        digits = value.lstrip("+-")
        if digits.startswith("0x"):
            return sign * int(digits[2:], 16)
        if digits.startswith("0o"):
            return sign * int(digits[2:], 8)
        return sign * int(digits, 10)


_FastLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                  list("tTfF"))
_FastLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
                                  list("-+0123456789"))
_FastLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."))
_FastLoader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"),
                                  ["~", "n", "N", ""])
_FastLoader.add_constructor("tag:yaml.org,2002:int", _FastLoader.construct_core_int)


def _fast_load(source: PolicySourceFile, text: str) -> list[LoadedDocument] | None:
    try:
        raw = list(pyyaml.load_all(text, Loader=_FastLoader))
    except (pyyaml.YAMLError, ValueError, TypeError):
        return None
    documents = []
    for index, data in enumerate(raw):
        if data is None:  # an empty document (or an empty file) is not an error
            continue
        if not _plain_types_only(data):
            return None  # something only the full loader reads faithfully: let it decide
        documents.append(LoadedDocument(source.display_path, index, data, _text=text))
    return documents


# Plain scalars ruamel resolves beyond YAML 1.2's core schema (timestamps, numbers with `_`): a
# file holding such a string is read by ruamel, so both paths always give the same data.
_RUAMEL_EXTRAS = re.compile(r"^(?:\d{4}-\d{1,2}-\d{1,2}|[-+]?[0-9][0-9_]*_[0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?)")


def _plain_types_only(data: Any) -> bool:
    if isinstance(data, dict):
        return all(isinstance(k, str) and not _RUAMEL_EXTRAS.match(k) and _plain_types_only(v)
                   for k, v in data.items())
    if isinstance(data, list):
        return all(_plain_types_only(v) for v in data)
    if isinstance(data, str):
        return not _RUAMEL_EXTRAS.match(data)
    return data is None or isinstance(data, (int, float, bool))


def load_file(source: PolicySourceFile, sink: DiagnosticSink) -> list[LoadedDocument]:
    """Load every document of one file. Problems go to `sink`; returns what could be loaded."""
    if len(source.content) > MAX_FILE_BYTES:
        sink.error(codes.UNREADABLE,
                   f"file is {len(source.content)} bytes; policy files are limited to {MAX_FILE_BYTES}",
                   SourcePosition(source.display_path))
        return []
    text = _decode(source, sink)
    if text is None:
        return []
    if not _check_tabs(source, text, sink) or not _check_no_aliases(source, text, sink):
        return []
    fast = _fast_load(source, text)
    if fast is not None:
        return fast
    documents: list[LoadedDocument] = []
    try:
        for index, node in enumerate(_yaml().load_all(text)):
            if node is None:  # an empty document (or an empty file) is not an error
                continue
            doc = LoadedDocument(source.display_path, index, None, _positions={}, _key_positions={})
            start = getattr(node, "lc", None)
            if start is not None:
                doc.positions[()] = SourcePosition(source.display_path, node.lc.line + 1, node.lc.col + 1)
            doc.data = _plain(node, (), doc, source.display_path)
            documents.append(doc)
    except MarkedYAMLError as error:
        _report_yaml_error(source, error, sink)
        return []
    except YAMLError as error:
        sink.error(codes.YAML_SYNTAX, f"YAML error: {error}", SourcePosition(source.display_path))
        return []
    return documents


def discover_files(root: Path) -> list[PolicySourceFile]:
    """Every *.yaml / *.yml file under `root`, at any depth, in a stable order.

    Hidden files and folders (".git", ".github", editor swap files) are not policy.
    The display path starts with the folder's own name, so messages read `policies/alpha.yaml`
    whichever way the folder was named on the command line.
    """
    if not root.exists():
        raise PolicyError([Diagnostic(codes.UNREADABLE, f"policy folder '{root}' does not exist",
                                      SourcePosition(str(root)))])
    if root.is_file():
        return [PolicySourceFile(root.name, root.read_bytes())]
    base = PurePosixPath(root.resolve().name)
    files: list[PolicySourceFile] = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if path.is_file() and path.suffix in POLICY_SUFFIXES:
            files.append(PolicySourceFile(str(base / PurePosixPath(*relative.parts)), path.read_bytes()))
    return files


def files_from_mapping(files: Mapping[str, bytes], label: str) -> list[PolicySourceFile]:
    """In-memory policy files (e.g. read from a git revision), displayed as `label/relpath`."""
    return [PolicySourceFile(f"{label}/{name}" if label else name, content)
            for name, content in sorted(files.items())
            if PurePosixPath(name).suffix in POLICY_SUFFIXES
            and not any(part.startswith(".") for part in PurePosixPath(name).parts)]


def load_sources(sources: list[PolicySourceFile], sink: DiagnosticSink) -> list[LoadedDocument]:
    documents: list[LoadedDocument] = []
    for source in sources:
        documents.extend(load_file(source, sink))
    return documents
