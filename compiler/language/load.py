"""Stage 1, load: policy files -> plain YAML data with the position of every node.

The YAML itself is read by `compiler.core.yamlio` (libyaml, YAML 1.2 core scalars, duplicate keys
refused); the position of every node is read by the same parser, on demand, when a diagnostic
needs one. A syntax error is worded the way people know it (ruamel.yaml's wording), at its place.

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

from compiler.core import codes, yamlio
from compiler.core.errors import Diagnostic, DiagnosticSink, PolicyError, SourcePosition

POLICY_SUFFIXES = (".yaml", ".yml")
# A policy file is written by hand; anything this large is a mistake (or an attack).
MAX_FILE_BYTES = 8 * 1024 * 1024
# What YAML 1.2 does not allow in a stream (its c-printable set's complement).
_UNACCEPTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

NodePath = yamlio.NodePath


@dataclass
class LoadedDocument:
    """One YAML document of one policy file, as plain Python data plus a position table.

    A valid policy never needs the position table, so it is built on first use (only files that
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
        nodes, keys = yamlio.positions(self._text, self.index)
        self._positions = {path: SourcePosition(self.path, *place) for path, place in nodes.items()}
        self._key_positions = {path: SourcePosition(self.path, *place) for path, place in keys.items()}
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


_TAB_INDENT = re.compile(r"^[ ]*\t", re.MULTILINE)


def _line_column(content: str | bytes, offset: int) -> tuple[int, int]:
    """The line and column (from 1) of `offset` in a file's text or bytes."""
    newline = "\n" if isinstance(content, str) else b"\n"
    return content.count(newline, 0, offset) + 1, offset - (content.rfind(newline, 0, offset) + 1) + 1


def _decode(source: PolicySourceFile, sink: DiagnosticSink) -> str | None:
    try:
        return source.content.decode("utf-8")
    except UnicodeDecodeError as error:
        line, column = _line_column(source.content, error.start)
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
    found = yamlio.first_anchor(text)
    if found is None:
        return True
    what, anchor, line, column = found
    sink.error(codes.ALIAS_REJECTED, f"YAML {what} '{anchor}' is not allowed in policy files; write the value out",
               SourcePosition(source.display_path, line, column))
    return False


def _report_yaml_error(source: PolicySourceFile, text: str, error: yamlio.YamlError, sink: DiagnosticSink) -> None:
    """A duplicate key is reported as found; any other error in ruamel's wording when ruamel also
    refuses the text (it is the wording people know), else in libyaml's."""
    if error.duplicate_key is not None:
        sink.error(codes.DUPLICATE_KEY, f"duplicate key '{error.duplicate_key}' in the same mapping",
                   SourcePosition(source.display_path, error.line, error.column))
        return
    error = yamlio.familiar_error(text) or error
    position = SourcePosition(source.display_path, error.line, error.column)
    if "unacceptable character" in error.message:
        # (The reader counts characters, not lines: the position names where the character is.)
        found = _UNACCEPTABLE.search(text)
        if found is not None:
            position = SourcePosition(source.display_path, *_line_column(text, found.start()))
            sink.error(codes.YAML_SYNTAX, f"YAML syntax error: character U+{ord(found.group()):04X} is not "
                       "allowed in YAML (a control character)", position)
            return
    if "\\t" in error.message or "'\\t'" in error.message or re.search(r"\btabs?\b", error.message.lower()):
        sink.error(codes.TABS, f"tab character is not allowed here: {error.message}", position)
        return
    context = f" ({error.context})" if error.context else ""
    sink.error(codes.YAML_SYNTAX, f"YAML syntax error: {error.message}{context}", position)


def load_file(source: PolicySourceFile, sink: DiagnosticSink, max_bytes: int = MAX_FILE_BYTES,
              kind: str = "policy files") -> list[LoadedDocument]:
    """Load every document of one file. Problems go to `sink`; returns what could be loaded.
    `max_bytes` and `kind` (as the size message names them): other YAML inputs than policy
    files, such as job traces, are larger."""
    if len(source.content) > max_bytes:
        sink.error(codes.UNREADABLE, f"file is {len(source.content)} bytes; {kind} are limited to {max_bytes}",
                   SourcePosition(source.display_path))
        return []
    text = _decode(source, sink)
    if text is None:
        return []
    if not _check_tabs(source, text, sink) or not _check_no_aliases(source, text, sink):
        return []
    try:
        documents = yamlio.load_all(text)
    except yamlio.YamlError as error:
        _report_yaml_error(source, text, error, sink)
        return []
    # An empty document (or an empty file) is not an error.
    return [LoadedDocument(source.display_path, index, data, _text=text)
            for index, data in enumerate(documents) if data is not None]


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
