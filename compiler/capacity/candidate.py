"""A candidate policy: the user's policy files with some numbers changed, edited round-trip.

What a candidate may change: nodes per pool, whether a pool is cut with MIG (`mig: planned`) or
not, and each team's guarantee (whole GPUs, `lend` kept at most the guarantee), burst and MIG
guarantees. Everything else stays byte for byte, so `diff` and the pull request show only what
the answer changes:

- a number that is already written (a pool's `nodes`, a team's `guaranteed`, `burst`, `lend`)
  is replaced where it stands in the file's text, found from ruamel.yaml's positions: the
  file's indentation, comments, line endings and document markers are left as they are;
- a change of structure (a `gpus` or `mig` block added, `mig` removed) re-emits that document
  alone with ruamel.yaml's round-trip mode, at the indentation the document was written with:
  comments, key order and flow style stay, not every spacing. The file's other documents, its
  directives, document markers and the comments before a document keep their bytes; a file
  nothing changes in is not rewritten at all.

The same edit makes the candidate the search simulates and the files `--write` puts on disk, so
what is written is exactly what was simulated. `write_policy_files` puts them on disk all or
nothing.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from compiler.core.errors import EnvironmentFailure
from compiler.language.load import POLICY_SUFFIXES


@dataclass(frozen=True, order=True)
class TeamQuota:
    """A team's guarantee in a candidate."""

    team: str
    guaranteed: int
    mig: tuple[tuple[str, int], ...] = ()   # (profile, instances), sorted
    burst: int | None = None                # None: the policy's burst, unchanged


@dataclass(frozen=True, order=True)
class Candidate:
    """One point of the search: hashable, ordered (the search breaks ties by this order)."""

    nodes: tuple[tuple[str, int], ...]          # (pool, nodes) for every pool, in declaration order
    mig: tuple[tuple[str, str], ...] = ()       # (pool, "none" | "planned"): pools whose cut changes
    quotas: tuple[TeamQuota, ...] | None = None  # None: the policy's own guarantees

    def nodes_of(self, pool: str) -> int:
        return dict(self.nodes)[pool]

    def with_nodes(self, pool: str, count: int) -> "Candidate":
        return Candidate(tuple((p, count if p == pool else n) for p, n in self.nodes), self.mig, self.quotas)

    def label(self) -> str:
        text = ", ".join(f"{p}={n}" for p, n in self.nodes)
        if self.mig:
            text += "; " + ", ".join(f"{p} mig {m}" for p, m in self.mig)
        if self.quotas is not None:
            text += f"; guaranteed {sum(q.guaranteed for q in self.quotas)} GPUs"
            instances = sum(n for q in self.quotas for _, n in q.mig)
            if instances:
                text += f", {instances} MIG instances"
        return text


def read_policy_files(root: Path) -> dict[str, bytes]:
    """The policy folder's YAML files (relative path -> bytes), the files `compile` reads."""
    if root.is_file():
        return {root.name: root.read_bytes()}
    files = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and path.suffix in POLICY_SUFFIXES and not any(p.startswith(".") for p in relative.parts):
            files[PurePosixPath(relative).as_posix()] = path.read_bytes()
    return files


def write_policy_files(policy_dir: Path, files: dict[str, bytes], changed: dict[str, bytes]) -> list[str]:
    """The changed files written: every one to a temporary beside it first, then all renamed over
    the originals, so a write that fails leaves the policy as it was (never half a candidate that
    was not simulated). A symlinked file is written where it points, and stays a link."""
    staged: list[tuple[Path, Path, str]] = []   # (temporary, target, path shown)
    try:
        for name, content in changed.items():
            if files.get(name) == content:
                continue
            shown = policy_dir / name if policy_dir.is_dir() else policy_dir
            target = shown.resolve()
            temporary = target.with_name(f".{target.name}.capacity")
            staged.append((temporary, target, str(shown)))
            try:
                temporary.write_bytes(content)
                os.chmod(temporary, target.stat().st_mode & 0o7777)   # (its permissions kept)
            except OSError as error:
                raise EnvironmentFailure(f"cannot write {temporary} (for {target}): "
                                         f"{error.strerror or error}; nothing was written") from None
        for temporary, target, _ in staged:
            try:
                os.replace(temporary, target)
            except OSError as error:   # (a rename in one folder: all but impossible once written)
                raise EnvironmentFailure(f"cannot replace {target}: {error.strerror or error}") from None
    finally:
        for temporary, _, _ in staged:
            if temporary.is_file() and not temporary.is_symlink():
                temporary.unlink()
    return [shown for _, _, shown in staged]


def _yaml(indentation: "_Indentation | None" = None):
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096               # never fold a long line the user wrote on one
    shape = indentation or _Indentation()
    yaml.indent(mapping=shape.mapping, sequence=shape.sequence, offset=shape.offset)
    return yaml


@dataclass(frozen=True)
class _Indentation:
    """How a document indents (ruamel.yaml's `indent`): a nested mapping's keys, a sequence's
    items, and a sequence's dash within them."""

    mapping: int = 2
    sequence: int = 4
    offset: int = 2


_BLOCK_KEY = re.compile(r"^( *)[^\s#-][^#]*:\s*(#.*)?$")   # a key whose value is the block below it
_ITEM = re.compile(r"^( *)- +(?=\S)")


def _indentation(lines: list[str]) -> _Indentation:
    """The indentation the document's first nested mapping and first block sequence show
    (ruamel.yaml's defaults where it has none)."""
    mapping = sequence = offset = None
    for above, line in zip(lines, lines[1:]):
        key = _BLOCK_KEY.match(above.rstrip("\r\n"))
        if key is None or not line.strip() or line.lstrip().startswith("#"):
            continue
        depth = len(key.group(1))
        item = _ITEM.match(line)
        if item is not None and sequence is None:
            offset = len(item.group(1)) - depth
            sequence = item.end() - depth
        elif item is None and mapping is None and len(line) - len(line.lstrip(" ")) > depth:
            mapping = len(line) - len(line.lstrip(" ")) - depth
    default = _Indentation()
    mapping = mapping or default.mapping
    if sequence is None:
        return _Indentation(mapping, max(default.sequence, mapping), default.offset)
    return _Indentation(mapping, max(sequence, offset + 2), offset)


# A plain scalar as written in a file: what a number in place is replaced through.
_PLAIN_SCALAR = re.compile(r"[^\s,\[\]{}#]+")


class _Edits:
    """A file's edits: numbers replaced in place (0-based line, column, new text), or, once any
    edit changes the structure, the file re-emitted (`structural`)."""

    def __init__(self) -> None:
        self.in_place: list[tuple[int, int, str]] = []
        self.structural = False

    def set(self, mapping, key: str, value) -> bool:
        """`mapping[key] = value`; whether that changed anything."""
        if key in mapping and mapping.get(key) == value:
            return False
        old = mapping.get(key)
        position = _value_position(mapping, key) if key in mapping else None
        if position is not None and isinstance(value, int) and isinstance(old, int) and not isinstance(old, bool):
            self.in_place.append((*position, str(value)))
        else:
            self.structural = True
        mapping[key] = value
        return True

    def changed_structure(self) -> bool:
        self.structural = True
        return True

    def applied(self, text: str) -> str | None:
        """`text` with the numbers replaced in place; None when a number is not found where
        the parser saw it (the caller then re-emits the file)."""
        lines = text.splitlines(keepends=True)
        for line, column, new in sorted(self.in_place, reverse=True):
            if line >= len(lines):
                return None
            match = _PLAIN_SCALAR.match(lines[line], column)
            if match is None or match.group().startswith(("!", "&", "*")):   # (a tag, an anchor: re-emitted)
                return None
            lines[line] = lines[line][:column] + new + lines[line][match.end():]
        return "".join(lines)


def _value_position(mapping, key: str) -> tuple[int, int] | None:
    try:
        line, column = mapping.lc.value(key)
    except (AttributeError, KeyError, TypeError):
        return None
    return line, column


def _edit_cluster(spec, candidate: Candidate, edits: _Edits) -> bool:
    changed = False
    nodes, cuts = dict(candidate.nodes), dict(candidate.mig)
    for pool in spec.get("pools") or []:
        name = pool.get("name")
        if name in nodes:
            changed |= edits.set(pool, "nodes", nodes[name])
        if name in cuts:
            if cuts[name] == "none" and "mig" in pool:
                del pool["mig"]
                changed = edits.changed_structure()
            elif cuts[name] == "planned":
                changed |= edits.set(pool, "mig", "planned")
    return changed


def _edit_team(name: str, spec, quotas: dict[str, TeamQuota], edits: _Edits) -> bool:
    quota = quotas.get(name)
    if quota is None:
        return False
    from ruamel.yaml.comments import CommentedMap

    changed = False
    gpus = spec.get("gpus")
    if gpus is not None or quota.guaranteed or quota.burst is not None:   # (no `gpus` guarantees 0 already)
        if gpus is None:
            gpus = spec["gpus"] = CommentedMap()
            changed = edits.changed_structure()
        changed |= edits.set(gpus, "guaranteed", quota.guaranteed)
        if quota.burst is not None:
            changed |= edits.set(gpus, "burst", quota.burst)
        if gpus.get("lend") is not None and gpus["lend"] > quota.guaranteed:
            changed |= edits.set(gpus, "lend", quota.guaranteed)
    wanted = dict(quota.mig)
    if wanted:
        current = spec.get("mig")
        if current is None or dict(current) != wanted:
            mig = CommentedMap(sorted(wanted.items()))
            mig.fa.set_flow_style()
            spec["mig"] = mig
            changed = edits.changed_structure()
    elif spec.get("mig"):
        del spec["mig"]
        changed = edits.changed_structure()
    return changed


def _in_cluster(document, cluster: str | None) -> bool:
    """Whether a Cluster or Team document belongs to `cluster` (None: the policy has one). A
    policy with several clusters may give two of them a pool, or a team, of the same name: only
    the searched cluster's are the candidate's."""
    if cluster is None:
        return True
    if document.get("kind") == "Cluster":
        return (document.get("metadata") or {}).get("name") == cluster
    return document["spec"].get("cluster") in (None, cluster)   # (no `cluster`: the only one)


def apply(files: dict[str, bytes], candidate: Candidate, cluster: str | None = None) -> dict[str, bytes]:
    """The policy files with the candidate's numbers in `cluster`'s pools and teams (None: the
    policy's only cluster); files it does not change keep their bytes."""
    yaml = _yaml()
    quotas = {q.team: q for q in candidate.quotas} if candidate.quotas is not None else {}
    result = {}
    for name, content in files.items():
        text = content.decode("utf-8")
        documents = list(yaml.load_all(text))
        edits = [_Edits() for _ in documents]
        changed = False
        for document, edit in zip(documents, edits):
            if not isinstance(document, dict) or not isinstance(document.get("spec"), dict):
                continue
            if not _in_cluster(document, cluster):
                continue
            kind = document.get("kind")
            if kind == "Cluster":
                changed |= _edit_cluster(document["spec"], candidate, edit)
            elif kind == "Team":
                team = (document.get("metadata") or {}).get("name")
                changed |= _edit_team(team, document["spec"], quotas, edit)
        if not changed:
            result[name] = content
            continue
        result[name] = _edited(text, documents, edits).encode("utf-8")
    return result


def _edited(text: str, documents: list, edits: list[_Edits]) -> str:
    """The file's text with every document's edits: numbers in place, and each document whose
    structure changed re-emitted alone between the file's own markers and comments. The whole
    file is re-emitted only when its documents cannot be told apart in its lines."""
    in_place = _Edits()
    in_place.in_place = [change for edit in edits if not edit.structural for change in edit.in_place]
    lines = in_place.applied(text)
    if lines is not None and not any(edit.structural for edit in edits):
        return lines
    spans = _document_spans(text.splitlines(keepends=True), len(documents))
    if lines is None or spans is None:
        return _emitted(_yaml(), documents, text)
    lines = lines.splitlines(keepends=True)
    for (start, end), document, edit in sorted(zip(spans, documents, edits), key=lambda d: d[0], reverse=True):
        if edit.structural:
            lines[start:end] = _re_emitted(document, lines[start:end], text)
    return "".join(lines)


def _re_emitted(document, own: list[str], text: str) -> list[str]:
    """A document's lines re-emitted at its own indentation. The comments below its last
    line (about the next document, as a rule) stay where they are: ruamel.yaml hangs them
    on the last key, so a key added after it would come below them."""
    last = max(i for i, line in enumerate(own) if line.strip() and not line.lstrip().startswith("#"))
    trailing = own[last + 1:]
    body = _emitted(_yaml(_indentation(own)), [document], text, body_only=True).splitlines(keepends=True)
    marker = _INLINE_MARKER.match(own[0])
    if marker is not None:   # (the document began on its marker line: so does its re-emitted body)
        body[0] = marker.group(0) + body[0]
    comments = [line.strip() for line in trailing if line.strip()]
    if not comments:
        return body + trailing
    found = _comment_block(body, comments)
    if found is None:
        return body + trailing   # (ruamel.yaml did not keep them: they stay as written)
    at, after = found
    while after < len(body) and not body[after].strip():   # (the blank lines ruamel keeps with them)
        after += 1
    return body[:at] + body[after:] + trailing


def _comment_block(body: list[str], comments: list[str]) -> tuple[int, int] | None:
    """Where, last in `body`, the comment lines `comments` stand in that order, blank lines
    allowed between them (as ruamel.yaml re-emits a block of comments): (first line, one past
    the last), or None."""
    for at in range(len(body) - 1, -1, -1):
        if body[at].strip() != comments[0]:
            continue
        matched, index = 1, at + 1
        while matched < len(comments) and index < len(body):
            text = body[index].strip()
            if text and text != comments[matched]:
                break
            matched += bool(text)
            index += 1
        if matched == len(comments):
            return at, index
    return None


_MARKER = re.compile(r"^---(?:[ \t]+#.*)?[ \t]*\r?\n?$")   # a document's start, alone on its line (or with a comment)
_INLINE_MARKER = re.compile(r"^---[ \t]+(?=[^#\s])")   # a document's start with its first content on the line


def _document_spans(lines: list[str], count: int) -> list[tuple[int, int]] | None:
    """Each document's own lines (from its first content line, which may be its `---` line, to
    the next `---` or `...`; an empty document, one `---` opened and nothing in it, has no
    lines), or None when they cannot be told apart (not as many as the parser read)."""
    spans: list[tuple[int, int]] = []
    start, opened = None, False   # opened: a `---` began a document since the last boundary
    for index, line in enumerate(lines + ["---\n"]):
        stripped = line.strip()
        is_start = line.startswith("---") and (stripped == "---" or stripped[3:4] in (" ", "\t"))
        is_end = line.startswith("...") and stripped[3:].strip()[:1] in ("", "#")
        if is_start and _MARKER.match(line) is None and index < len(lines):
            # (a document that begins on its own marker line, `--- {kind: Team}`: its lines start there)
            if start is not None:
                spans.append((start, index))
            elif opened:
                spans.append((index, index))
            start, opened = index, True
            continue
        if is_start or is_end:
            if start is not None:
                spans.append((start, index))
            elif opened:
                spans.append((index, index))
            start, opened = None, is_start and index < len(lines)
        elif start is None and stripped and not stripped.startswith("#") and not line.startswith("%"):
            start = index
    return spans if len(spans) == count else None


def _emitted(yaml, documents: list, text: str, body_only: bool = False) -> str:
    """The documents re-emitted round-trip, with the file's line endings; `body_only`: without
    the comments, directives and marker before the first content line (the file keeps its own)."""
    out = io.StringIO()
    if len(documents) == 1:
        yaml.dump(documents[0], out)
    else:
        yaml.dump_all(documents, out)
    emitted = out.getvalue().replace("\r\n", "\n")   # (comments keep the \r they were read with)
    if body_only:
        body = emitted.splitlines(keepends=True)
        while body and (not body[0].strip() or body[0].lstrip().startswith("#") or body[0].startswith("---")):
            body.pop(0)
        emitted = "".join(body)
    return emitted.replace("\n", "\r\n") if "\r\n" in text else emitted
