"""Read manifest files (or stdin) into documents with their positions.

A file that cannot be read, is not UTF-8 or is not YAML is the one case `evaluate` stops for
(exit 1): without it the engine would silently evaluate a different cluster.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from compiler import codes
from compiler.errors import Diagnostic, InputError, SourcePosition

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _duplicate_key(root: yaml.Node) -> yaml.Node | None:
    """The first mapping key that appears twice (kubectl never prints one; a hand edit might)."""
    seen_nodes: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:  # aliases share nodes: visit each once
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in keys:
                        return key
                    keys.add(key.value)
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return None


def _item_lines(node: yaml.Node) -> list[int]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "items" and isinstance(value, yaml.SequenceNode):
                return [item.start_mark.line + 1 for item in value.value]
    return []


class _DuplicateJsonKey(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    result = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateJsonKey(key)
        result[key] = value
    return result


def _parse_json(text: str, path: str) -> list[tuple[object, SourcePosition]] | None:
    """`kubectl get -o json` output: much faster through the json module. None if it is not
    JSON after all (YAML flow style also starts with a brace), so the YAML parser decides."""
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateJsonKey as error:
        raise InputError([Diagnostic(codes.EVAL_UNREADABLE, f"duplicate mapping key {error.args[0]!r}",
                                     SourcePosition(path))]) from None
    except ValueError:
        return None
    if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
        return [(item, SourcePosition(path)) for item in doc["items"]]
    if isinstance(doc, list):
        return [(item, SourcePosition(path)) for item in doc]
    return [(doc, SourcePosition(path))]


def parse_text(text: str, path: str) -> list[tuple[object, SourcePosition]]:
    """Documents of one file with the line each starts on. libyaml (C) parses; positions come
    from the composed nodes, so a large cluster export loads in seconds."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        parsed = _parse_json(text, path)
        if parsed is not None:
            return parsed
    out: list[tuple[object, SourcePosition]] = []
    loader = _Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            duplicate = _duplicate_key(node)
            if duplicate is not None:
                mark = duplicate.start_mark
                raise InputError([Diagnostic(codes.EVAL_UNREADABLE,
                                             f"duplicate mapping key {duplicate.value!r}",
                                             SourcePosition(path, mark.line + 1, mark.column + 1))])
            line = node.start_mark.line + 1
            doc = loader.construct_document(node)
            if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
                lines = _item_lines(node)
                for index, item in enumerate(doc["items"]):
                    item_line = lines[index] if index < len(lines) else line
                    out.append((item, SourcePosition(path, item_line)))
                continue
            out.append((doc, SourcePosition(path, line)))
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = SourcePosition(path, mark.line + 1, mark.column + 1) if mark else SourcePosition(path)
        raise InputError([Diagnostic(codes.EVAL_UNREADABLE,
                                     f"not valid YAML: {error.problem or error.context}", where)]) from None
    except yaml.YAMLError as error:
        raise InputError([Diagnostic(codes.EVAL_UNREADABLE, f"not valid YAML: {error}",
                                     SourcePosition(path))]) from None
    finally:
        loader.dispose()
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
