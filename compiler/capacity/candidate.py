"""A candidate policy: the user's policy files with some numbers changed, edited round-trip.

What a candidate may change: nodes per pool, whether a pool is cut with MIG (`mig: planned`) or
not, and each team's guarantee (whole GPUs, `lend` kept at most the guarantee), burst and MIG
guarantees. Everything else stays byte for byte: the files are edited with ruamel.yaml's
round-trip mode, so comments, key order and flow style survive, and a file nothing changes in is
not rewritten at all. The same edit makes the candidate the search simulates and the files
`--write` puts on disk, so what is written is exactly what was simulated.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

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


def _yaml():
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096               # never fold a long line the user wrote on one
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _set(mapping, key: str, value) -> bool:
    if mapping.get(key) == value and key in mapping:
        return False
    mapping[key] = value
    return True


def _edit_cluster(spec, candidate: Candidate) -> bool:
    changed = False
    nodes, cuts = dict(candidate.nodes), dict(candidate.mig)
    for pool in spec.get("pools") or []:
        name = pool.get("name")
        if name in nodes:
            changed |= _set(pool, "nodes", nodes[name])
        if name in cuts:
            if cuts[name] == "none" and "mig" in pool:
                del pool["mig"]
                changed = True
            elif cuts[name] == "planned":
                changed |= _set(pool, "mig", "planned")
    return changed


def _edit_team(name: str, spec, quotas: dict[str, TeamQuota]) -> bool:
    quota = quotas.get(name)
    if quota is None:
        return False
    from ruamel.yaml.comments import CommentedMap

    changed = False
    gpus = spec.get("gpus")
    if gpus is None:
        gpus = spec["gpus"] = CommentedMap()
        changed = True
    changed |= _set(gpus, "guaranteed", quota.guaranteed)
    if quota.burst is not None:
        changed |= _set(gpus, "burst", quota.burst)
    if gpus.get("lend") is not None and gpus["lend"] > quota.guaranteed:
        gpus["lend"] = quota.guaranteed
        changed = True
    wanted = dict(quota.mig)
    if wanted:
        current = spec.get("mig")
        if current is None or dict(current) != wanted:
            mig = CommentedMap(sorted(wanted.items()))
            mig.fa.set_flow_style()
            spec["mig"] = mig
            changed = True
    elif spec.get("mig"):
        del spec["mig"]
        changed = True
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
        documents = list(yaml.load_all(content.decode("utf-8")))
        changed = False
        for document in documents:
            if not isinstance(document, dict) or not isinstance(document.get("spec"), dict):
                continue
            if not _in_cluster(document, cluster):
                continue
            kind = document.get("kind")
            if kind == "Cluster":
                changed |= _edit_cluster(document["spec"], candidate)
            elif kind == "Team":
                team = (document.get("metadata") or {}).get("name")
                changed |= _edit_team(team, document["spec"], quotas)
        if not changed:
            result[name] = content
            continue
        out = io.StringIO()
        if len(documents) == 1:
            yaml.dump(documents[0], out)
        else:
            yaml.dump_all(documents, out)
        result[name] = out.getvalue().encode("utf-8")
    return result
