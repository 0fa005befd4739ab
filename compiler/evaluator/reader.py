"""Read manifest files (or stdin) into documents with their positions.

A file that cannot be read, is not UTF-8 or is not YAML is the one case `evaluate` stops for
(exit 1): without it the engine would silently evaluate a different cluster.
"""

from __future__ import annotations

import io
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from compiler import codes
from compiler.errors import Diagnostic, InputError, SourcePosition


def _plain(node):
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def parse_text(text: str, path: str) -> list[tuple[object, SourcePosition]]:
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    out: list[tuple[object, SourcePosition]] = []
    try:
        for doc in yaml.load_all(io.StringIO(text)):
            line = doc.lc.line + 1 if hasattr(doc, "lc") and doc.lc.line is not None else 1
            if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
                for item in doc["items"]:
                    item_line = item.lc.line + 1 if hasattr(item, "lc") and item.lc.line is not None else line
                    out.append((_plain(item), SourcePosition(path, item_line)))
                continue
            out.append((_plain(doc), SourcePosition(path, line)))
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = SourcePosition(path, mark.line + 1, mark.column + 1) if mark else SourcePosition(path)
        raise InputError([Diagnostic(codes.EVAL_UNREADABLE,
                                     f"not valid YAML: {error.problem or error.context}", where)]) from None
    except YAMLError as error:
        raise InputError([Diagnostic(codes.EVAL_UNREADABLE, f"not valid YAML: {error}",
                                     SourcePosition(path))]) from None
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
