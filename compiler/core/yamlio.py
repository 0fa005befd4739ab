"""YAML in and out, in one place: one scalar schema (YAML 1.2 core), one duplicate-key check,
one byte-stable dumper, and the place of every node.

Why one schema. Kubernetes names are DNS labels, and `no`, `on`, `null`, `0123`, `1e3` and
`0x1f` are all valid ones. YAML 1.1 (PyYAML's default) reads the first as a boolean and the rest
as null or numbers; a policy written by a person, a kubectl export, a template's output read
back, and a file inside a ConfigMap must all mean the same thing, so every reader here uses
YAML 1.2's core schema: only `true`/`false`, `null`/`~`/empty, and plain decimal, `0o` and `0x`
integers and decimal floats are not strings. Mapping keys are always strings, as written (the
JSON Kubernetes stores has no other key type).

Why libyaml. It parses ~20x faster than a pure-Python parser; that is the hot path of a
1,000-team compile and of reading a large cluster export. The line and column of every node come
from the same parser's composed nodes, on demand, when a diagnostic needs one. ruamel.yaml is used
for one thing only: wording a syntax error the way people know it from other tools.

The writer quotes every string that *any* common reader (YAML 1.1, YAML 1.2, Go's yaml.v2 that
kubectl and Argo CD use) would take for something else, so output read back anywhere is the
same strings.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Iterator

import yaml as pyyaml
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.error import YAMLError as RuamelError

__all__ = ["YamlError", "dump", "familiar_error", "first_anchor", "flow", "load", "load_all", "load_all_with_lines",
           "load_json", "positions"]


@dataclass
class YamlError(Exception):
    """A document that is not YAML (or not the YAML we accept). Line and column are 1-based."""

    message: str
    line: int = 1  # a problem without a place is shown at the start of the file
    column: int = 1
    duplicate_key: str | None = None  # set when the problem is a key written twice
    context: str | None = None  # what the parser was doing, when it says

    def __str__(self) -> str:
        return self.message


# --- the one scalar schema ----------------------------------------------------------------------

_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"
                    r"|\.(?:nan|NaN|NAN))$")
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
# None: PyYAML's "any other tag", whose constructor refuses it with its position.
_CORE_TAGS = (None, *("tag:yaml.org,2002:" + t for t in ("str", "int", "float", "bool", "null", "map", "seq")))


def _problem(message: str, node: pyyaml.Node) -> pyyaml.constructor.ConstructorError:
    return pyyaml.constructor.ConstructorError(None, None, message, node.start_mark)


class _DuplicateKey(pyyaml.constructor.ConstructorError):
    def __init__(self, key: str, mark: pyyaml.Mark) -> None:
        super().__init__(None, None, f"duplicate key '{key}' in the same mapping", mark)
        self.key = key


class _CoreLoader(pyyaml.CSafeLoader):
    """libyaml's parser with YAML 1.2 core resolvers and constructors; any other tag is refused."""

    yaml_implicit_resolvers: dict = {}
    yaml_constructors = {tag: pyyaml.SafeLoader.yaml_constructors[tag] for tag in _CORE_TAGS}

    def construct_mapping(self, node, deep=False):  # noqa: ANN001 - PyYAML's signature
        """Keys are strings as written; a key written twice in one mapping is an error (the one
        duplicate-key check). Merge keys (`<<`), which kubectl honours, merge first."""
        if not isinstance(node, pyyaml.MappingNode):
            raise _problem(f"expected a mapping, found {node.id}", node)
        own = [key for key, _ in node.value if key.tag != "tag:yaml.org,2002:merge"]
        seen: set[str] = set()
        for key_node in own:
            if not isinstance(key_node, pyyaml.ScalarNode):
                raise _problem("a mapping key must be a plain value, not a list or a mapping", key_node)
            if key_node.value in seen:
                raise _DuplicateKey(key_node.value, key_node.start_mark)
            seen.add(key_node.value)
        self.flatten_mapping(node)
        mapping = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, pyyaml.ScalarNode):
                raise _problem("a mapping key must be a plain value, not a list or a mapping", key_node)
            mapping[key_node.value] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_core_int(self, node):  # noqa: ANN001
        text = self.construct_scalar(node)
        sign = -1 if text.startswith("-") else 1
        digits = text.lstrip("+-")
        try:
            if digits.startswith("0x"):
                return sign * int(digits[2:], 16)
            if digits.startswith("0o"):
                return sign * int(digits[2:], 8)
            return sign * int(digits, 10)
        except ValueError as error:  # a `!!int` that is not one, or more digits than Python converts
            raise _problem(f"not an integer: {error}", node) from None

    def construct_core_float(self, node):  # noqa: ANN001
        text = self.construct_scalar(node)
        special = {".inf": "inf", "+.inf": "inf", "-.inf": "-inf", ".nan": "nan"}.get(text.lower())
        try:
            return float(special or text)
        except ValueError:
            raise _problem(f"not a number: {text!r}", node) from None

    def construct_core_bool(self, node):  # noqa: ANN001
        text = self.construct_scalar(node)
        if not _BOOL.match(text):
            raise _problem(f"not a boolean: {text!r}", node)
        return text.lower() == "true"


_CoreLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL, list("tTfF"))
_CoreLoader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
_CoreLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
_CoreLoader.add_implicit_resolver("tag:yaml.org,2002:null", _NULL, ["~", "n", "N", ""])
_CoreLoader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^<<$"), ["<"])
_CoreLoader.add_constructor("tag:yaml.org,2002:int", _CoreLoader.construct_core_int)
_CoreLoader.add_constructor("tag:yaml.org,2002:float", _CoreLoader.construct_core_float)
_CoreLoader.add_constructor("tag:yaml.org,2002:bool", _CoreLoader.construct_core_bool)


def _error(error: Exception) -> YamlError:
    if isinstance(error, RecursionError):
        return YamlError("the document nests too deeply")
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or getattr(error, "context", None) or str(error)
    return YamlError(problem.strip(), mark.line + 1 if mark else 1, mark.column + 1 if mark else 1,
                     getattr(error, "key", None))


# --- reading --------------------------------------------------------------------------------------

def load_all_with_lines(text: str) -> Iterator[tuple[Any, int, pyyaml.Node]]:
    """Every document of a stream with the line it starts on and its composed node (the node
    gives `kind: List` items their own lines). Raises YamlError."""
    loader = _CoreLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            yield loader.construct_document(node), node.start_mark.line + 1, node
    except (pyyaml.YAMLError, RecursionError) as error:
        raise _error(error) from None
    finally:
        loader.dispose()


def load_all(text: str) -> list[Any]:
    """Every document of a YAML stream (empty documents are None). Raises YamlError."""
    return [data for data, _, _ in load_all_with_lines(text)]


def load(text: str) -> Any:
    """The one document of a YAML text. Raises YamlError."""
    documents = load_all(text)
    if len(documents) > 1:
        raise YamlError("expected one YAML document, found several")
    return documents[0] if documents else None


def load_json(text: str) -> Any | None:
    """`kubectl get -o json` output, through the json module (much faster). None when the text is
    not JSON after all, or repeats a key: the YAML reader then decides, and reports a repeated
    key with its line like any other."""
    def pairs(items: list[tuple[str, Any]]) -> dict:
        mapping = dict(items)
        if len(mapping) != len(items):
            raise ValueError("duplicate key")
        return mapping
    try:
        return json.loads(text, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return None


def first_anchor(text: str) -> tuple[str, str, int, int] | None:
    """The first anchor or alias of a stream, as (what, name, line, column), without composing
    anything (so an alias bomb costs nothing). Syntax errors are left to the loader."""
    try:
        for event in pyyaml.parse(text, Loader=pyyaml.CSafeLoader):
            anchor = getattr(event, "anchor", None)
            if isinstance(event, pyyaml.AliasEvent) or (
                    isinstance(event, (pyyaml.ScalarEvent, pyyaml.CollectionStartEvent)) and anchor):
                mark = event.start_mark
                what = "alias" if isinstance(event, pyyaml.AliasEvent) else "anchor"
                return what, anchor, mark.line + 1, mark.column + 1
    except pyyaml.YAMLError:
        pass
    return None


# --- positions --------------------------------------------------------------------------------

Place = tuple[int, int]  # 1-based line and column
NodePath = tuple[str | int, ...]


def positions(text: str, index: int) -> tuple[dict[NodePath, Place], dict[NodePath, Place]]:
    """Where every node of document `index` starts (keyed by its path of keys and indexes, the
    shape pydantic uses for error locations), and where every mapping key is. Read from the same
    parser as the data, so every path `load` produced has its place (merged keys point at the
    mapping that merges them). Empty when the text does not parse."""
    nodes: dict[NodePath, Place] = {}
    keys: dict[NodePath, Place] = {}
    loader = _CoreLoader(text)
    try:
        number = 0
        while loader.check_node():
            node = loader.get_node()
            if number == index:
                nodes[()] = _place(node)
                _record(node, (), nodes, keys)
                break
            number += 1
    except (pyyaml.YAMLError, RecursionError):
        pass
    finally:
        loader.dispose()
    return nodes, keys


def _place(node: pyyaml.Node) -> Place:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _record(node: pyyaml.Node, path: NodePath, nodes: dict[NodePath, Place], keys: dict[NodePath, Place]) -> None:
    stack = [(node, path)]
    while stack:  # iterative: a deeply nested document must not exhaust Python's stack
        node, path = stack.pop()
        if isinstance(node, pyyaml.MappingNode):
            for key_node, value_node in node.value:
                if isinstance(key_node, pyyaml.ScalarNode):
                    key_path = path + (key_node.value,)
                    keys[key_path] = _place(key_node)
                    nodes[key_path] = _place(value_node)
                    stack.append((value_node, key_path))
        elif isinstance(node, pyyaml.SequenceNode):
            for index, item in enumerate(node.value):
                nodes[path + (index,)] = _place(item)
                stack.append((item, path + (index,)))


def _round_trip(text: str) -> Iterator[Any]:
    reader = YAML(typ="rt")
    reader.allow_duplicate_keys = True  # repeated keys are `load`'s to report
    yield from reader.load_all(text)


def familiar_error(text: str) -> YamlError | None:
    """The first syntax error of a text in ruamel.yaml's wording (the one people know from other
    tools), or None when ruamel reads the text."""
    try:
        for _ in _round_trip(text):
            pass
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = (error.problem or error.context or "invalid YAML").strip()
        context = error.context.strip() if error.context and error.problem else None
        return YamlError(problem, mark.line + 1 if mark else 1, mark.column + 1 if mark else 1, context=context)
    except (RuamelError, RecursionError, ValueError, KeyError, TypeError, OverflowError):
        # (ruamel converts explicit tags as it reads, `!!int abc` raising from the conversion:
        # then the first reader's wording stands)
        pass
    return None


# --- writing --------------------------------------------------------------------------------------

# Characters a YAML reader refuses raw (DEL, C1 controls) or changes (NEL and the Unicode line and
# paragraph separators are line breaks to YAML, so a quoted scalar would fold them into a space).
_RAW_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029]")


def flow(value: Any) -> str:
    """A value as one line of YAML flow text that reads back as exactly that value in every
    reader: JSON (a string is always quoted, so `no` or `0123` stay strings), with the characters
    YAML cannot carry raw written as escapes. Templates write every value through it."""
    text = json.dumps(value, ensure_ascii=False)
    return _RAW_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


class _Dumper(pyyaml.CSafeDumper):
    """libyaml's emitter: fast and byte-stable; lists are written as `kubectl get -o yaml` does."""


# Strings a YAML 1.2 or Go yaml.v2 reader would not read back as strings, beyond those PyYAML
# (YAML 1.1) already quotes: `1e3` (a float in both), `0o17` (an int in 1.2), `y` and `n`
# (booleans in yaml.v2).
_Dumper.yaml_implicit_resolvers = {key: list(value)
                                   for key, value in pyyaml.resolver.Resolver.yaml_implicit_resolvers.items()}
_Dumper.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
_Dumper.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
_Dumper.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))


def _represent_str(dumper: pyyaml.SafeDumper, value: str):
    # Embedded files (ConfigMap data) read as themselves, not as one escaped line.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def _library_dump(data: Any) -> str:
    return pyyaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                       allow_unicode=True, width=1_000_000, indent=2)


def dump(data: Any) -> str:
    """Block-style YAML, keys in the order given, byte-stable. Long strings are never folded
    (CEL expressions, descriptions), so a diff stays one line.

    The bytes are the library's (libyaml through `_Dumper`); the shapes every manifest has are
    written by `_BlockWriter` instead, which produces those same bytes (a property test compares
    both) several times faster, and hands anything else back to the library."""
    if type(data) in (dict, list) and data:
        try:
            return _BlockWriter().document(data)
        except (_Unsupported, RecursionError):
            pass
    return _library_dump(data)


class _Unsupported(Exception):
    """A value the block writer leaves to the library."""


# A string the library certainly writes as itself (plain) when its resolvers say it is a string:
# no indicator first, no `: ` or ` #`, no leading or trailing blank, printable ASCII only.
_PLAIN = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./=+\- ]*")
_SIMPLE_KEY_MAX = 100  # libyaml writes a key over 128 characters as `? key`; stay well below
_LINE_BREAKS = "\n\r\x85\u2028\u2029"  # a string holding one is written over several lines


def _resolves_to_str(text: str) -> bool:
    """The dumper's own implicit resolvers (as PyYAML's BaseResolver.resolve applies them)."""
    resolvers = _Dumper.yaml_implicit_resolvers
    for _, pattern in resolvers.get(text[0] if text else "", []) + resolvers.get(None, []):
        if pattern.match(text):
            return False
    return True


def _plain(text: str, limit: int) -> bool:
    return len(text) <= limit and bool(_PLAIN.fullmatch(text)) and text[-1] != " " and _resolves_to_str(text)


@functools.lru_cache(maxsize=65536)
def _value_text(text: str) -> str:
    """A string as a block mapping value or sequence item (the same context to the emitter)."""
    if _plain(text, len(text)):
        return text
    if any(c in text for c in _LINE_BREAKS):
        raise _Unsupported  # written at the indentation of its place
    written = _library_dump([text])  # quoted, or plain with characters the pattern leaves out
    if not written.startswith("- ") or written.count("\n") != 1:
        raise _Unsupported
    return written[2:-1]


@functools.lru_cache(maxsize=65536)
def _key_text(text: str) -> str:
    """A string as a block mapping key (a simple key: one line, at most 128 characters)."""
    if _plain(text, _SIMPLE_KEY_MAX):
        return text
    if any(c in text for c in _LINE_BREAKS):
        raise _Unsupported
    written = _library_dump({text: None})
    if written.startswith("?") or not written.endswith(": null\n") or written.count("\n") != 1:
        raise _Unsupported
    return written[:-len(": null\n")]


class _BlockWriter:
    """libyaml's block style for dicts, lists, strings, ints, booleans and None: a mapping's
    values indented by two, a list inside a mapping not indented (`kubectl get -o yaml`), the
    first entry of a list item on the dash's line, empty containers as `{}` and `[]`. Raises
    _Unsupported for anything else (floats, other types, multi-line strings, a container that
    appears twice, which the library writes as an anchor and alias)."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.seen: set[int] = set()

    def document(self, data: dict | list) -> str:
        if type(data) is dict:
            self.mapping(data, 0, "")
        else:
            self.sequence(data, 0, "")
        return "".join(self.out)

    def _enter(self, container: dict | list) -> None:
        if id(container) in self.seen:
            raise _Unsupported
        self.seen.add(id(container))

    def mapping(self, mapping: dict, indent: int, lead: str) -> None:
        self._enter(mapping)
        pad = " " * indent
        for key, value in mapping.items():
            if type(key) is not str:
                raise _Unsupported
            kind = type(value)
            if kind is dict and value:
                self.out.append(f"{lead}{_key_text(key)}:\n")
                self.mapping(value, indent + 2, pad + "  ")
            elif kind is list and value:
                self.out.append(f"{lead}{_key_text(key)}:\n")
                self.sequence(value, indent, pad)
            else:
                self.out.append(f"{lead}{_key_text(key)}: {self.scalar(value)}\n")
            lead = pad

    def sequence(self, sequence: list, indent: int, lead: str) -> None:
        self._enter(sequence)
        pad = " " * indent
        for item in sequence:
            kind = type(item)
            if kind is dict and item:
                self.mapping(item, indent + 2, lead + "- ")
            elif kind is list and item:
                self.sequence(item, indent + 2, lead + "- ")
            else:
                self.out.append(f"{lead}- {self.scalar(item)}\n")
            lead = pad

    def scalar(self, value: Any) -> str:
        kind = type(value)
        if kind is str:
            return _value_text(value)
        if kind is int:
            return str(value)
        if kind is bool:
            return "true" if value else "false"
        if value is None:
            return "null"
        if kind is dict or kind is list:  # empty (non-empty ones are blocks)
            self._enter(value)
            return "{}" if kind is dict else "[]"
        raise _Unsupported
