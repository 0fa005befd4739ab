"""Read manifest files (or stdin) into documents with their positions.

A file that cannot be read, is not UTF-8 or is not YAML is the one case `evaluate` stops for
(exit 1): without it the engine would silently evaluate a different cluster.
"""

from __future__ import annotations

from pathlib import Path

from compiler.core import codes, yamlio
from compiler.core.errors import Diagnostic, InputError, SourcePosition


def _item_lines(node) -> list[int]:  # noqa: ANN001 - a composed YAML node
    """The line of each item of a `kind: List` document."""
    for key, value in node.value if node.id == "mapping" else ():
        if key.id == "scalar" and key.value == "items" and value.id == "sequence":
            return [item.start_mark.line + 1 for item in value.value]
    return []


def _unlisted(doc: object) -> list | None:
    """The items of a `kind: List` (what `kubectl get -o yaml` prints), else None."""
    if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
        return doc["items"]
    return None


def _parse_json(text: str, path: str) -> list[tuple[object, SourcePosition]] | None:
    """`kubectl get -o json` output: much faster through the json module. None if it is not
    JSON after all (YAML flow style also starts with a brace), so the YAML parser decides."""
    doc = yamlio.load_json(text)
    if doc is None:
        return None
    return json_documents(doc, path)


def json_documents(doc: object, path: str) -> list[tuple[object, SourcePosition]]:
    """The objects of one parsed JSON document (a List's items, a list's, or the document), all
    at the file's position: the json module keeps no lines."""
    items = _unlisted(doc)
    if items is None:
        items = doc if isinstance(doc, list) else [doc]
    return [(item, SourcePosition(path)) for item in items]


def parse_text(text: str, path: str) -> list[tuple[object, SourcePosition]]:
    """Documents of one file with the line each starts on. libyaml (C) parses; positions come
    from the composed nodes, so a large cluster export loads in seconds."""
    if text.lstrip().startswith(("{", "[")):
        parsed = _parse_json(text, path)
        if parsed is not None:
            return parsed
    out: list[tuple[object, SourcePosition]] = []
    try:
        for doc, line, node in yamlio.load_all_with_lines(text):
            items = _unlisted(doc)
            if items is None:
                out.append((doc, SourcePosition(path, line)))
                continue
            lines = _item_lines(node)
            out.extend((item, SourcePosition(path, lines[index] if index < len(lines) else line))
                       for index, item in enumerate(items))
    except yamlio.YamlError as error:
        message = (f"duplicate mapping key {error.duplicate_key!r}" if error.duplicate_key is not None
                   else f"not valid YAML: {error.message}")
        raise InputError([Diagnostic(codes.EVAL_UNREADABLE, message,
                                     SourcePosition(path, error.line, error.column))]) from None
    return out


def read_files(paths: list[str], stdin_text: str | None = None) -> list[tuple[object, SourcePosition]]:
    documents: list[tuple[object, SourcePosition]] = []
    problems: list[Diagnostic] = []
    for path in paths:
        if path == "-":
            documents.extend(parse_text(stdin_text or "", "<stdin>"))
            continue
        file = Path(path)
        try:
            data = file.read_bytes()
        except OSError as error:
            problems.append(Diagnostic(codes.EVAL_UNREADABLE, f"cannot read: {error.strerror or error}",
                                       SourcePosition(path)))
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            problems.append(Diagnostic(codes.EVAL_UNREADABLE, f"not UTF-8 (byte {error.start})",
                                       SourcePosition(path)))
            continue
        try:
            documents.extend(parse_text(text, path))
        except InputError as error:
            problems.extend(error.diagnostics)
    if problems:
        raise InputError(problems)
    return documents
