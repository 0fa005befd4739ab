"""What `capacity` must meet and where it may search: targets and bounds, from flags or a file.

A target is one line of text, the same on the command line and in a targets file:

* `p95-wait<=30m`            every team's 95th-percentile wait at most 30 minutes;
* `team-a:p99-wait<=2h`      team-a's 99th percentile at most two hours (`p100`: every job);
* `within-10m>=90%`          every team starts at least 90% of its jobs within 10 minutes;
* `preemptions<=3`           no team suffers more than 3 preemptions over the trace.

Without `TEAM:` a target holds for every team, each on its own ("every team's waits stay
acceptable"). A job that never starts counts as an endless wait.

A bound is `POOL=MIN..MAX` (nodes), `POOL=N` (exactly N), or a pool named as fixed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from compiler.core import codes
from compiler.core.errors import Diagnostic, InputError, SourcePosition

DURATION_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
_DURATION = r"(\d+(?:\.\d+)?)(s|min|m|h|d)?"
_TEAM = r"(?:([a-z0-9](?:[-a-z0-9]*[a-z0-9])?):)?"
_WAIT = re.compile(rf"^{_TEAM}p(100|\d{{1,2}}(?:\.\d+)?)-wait<={_DURATION}$")   # p100: the longest wait
_WITHIN = re.compile(rf"^{_TEAM}within-{_DURATION}>=(\d+(?:\.\d+)?)%$")
_PREEMPTIONS = re.compile(rf"^{_TEAM}preemptions<=(\d+)$")
_BOUND = re.compile(r"^([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)=(\d+)(?:\.\.(\d+))?$")
MAX_NODES = 100_000


@dataclass(frozen=True)
class Target:
    """One requirement on the simulated trace."""

    text: str                 # as the user wrote it (reports quote it)
    team: str | None          # None: every team
    kind: str                 # "wait" | "within" | "preemptions"
    percentile: float = 0.0   # wait: 95 for p95
    seconds: int = 0          # wait: the limit; within: the time
    share: float = 0.0        # within: the share of jobs (0..1)
    count: int = 0            # preemptions: the limit

    @property
    def share_text(self) -> str:
        """The share as written (99.9%, not 100%)."""
        return f"{self.share * 100:g}%"


class Miss(str):
    """A missed target, as the report says it, and whether it can grow with the pools: waits only
    shrink as pools grow, but preemptions (more room to borrow, more to reclaim) and jobs on a pool
    whose nodes cannot hold their pods (a larger such pool takes more of them) can be missed by a
    larger candidate and met by a smaller one. (A str: the report, the JSON and the frontier page
    show it as the sentence it is.)"""

    grows_with_pools: bool

    def __new__(cls, text: str, grows_with_pools: bool = False) -> "Miss":
        miss = super().__new__(cls, text)
        miss.grows_with_pools = grows_with_pools
        return miss

    def __reduce__(self):   # (to worker processes and Dask workers, with its kind)
        return Miss, (str(self), self.grows_with_pools)


def can_grow_with_pools(miss: str) -> bool:
    """Whether a miss is of a kind a larger candidate can have and a smaller one not (`Miss`)."""
    return getattr(miss, "grows_with_pools", False)


@dataclass(frozen=True)
class Bound:
    pool: str
    minimum: int | None = None
    maximum: int | None = None
    fixed: bool = False


@dataclass
class Requirements:
    """Everything the search is told: targets, bounds, and where each came from (for messages)."""

    targets: list[Target] = field(default_factory=list)
    bounds: dict[str, Bound] = field(default_factory=dict)
    origins: dict[str, SourcePosition] = field(default_factory=dict)   # target text or pool -> where


class BadInput(Exception):
    """A target or bound that does not parse; the caller adds where it was written."""


def duration_seconds(number: str, unit: str | None) -> int:
    return int(round(float(number) * DURATION_UNITS[unit or "s"]))


def parse_target(text: str) -> Target:
    text = text.strip()
    compact = text.replace(" ", "")
    if match := _WAIT.match(compact):
        team, pct, number, unit = match.groups()
        percentile = float(pct)
        if not 0 < percentile <= 100:
            raise BadInput(f"'{text}': the percentile must be above 0 and at most 100")
        if "." in pct and len(pct.partition(".")[2]) > 1:
            # (ranks are worked out in thousandths, as `simulate`'s percentiles: p99.95 would be rounded)
            raise BadInput(f"'{text}': a percentile has at most one decimal (p99.9)")
        return Target(text, team, "wait", percentile=percentile, seconds=duration_seconds(number, unit))
    if match := _WITHIN.match(compact):
        team, number, unit, share = match.groups()
        if not 0 < float(share) <= 100:
            raise BadInput(f"'{text}': the share must be above 0% and at most 100%")
        return Target(text, team, "within", seconds=duration_seconds(number, unit), share=float(share) / 100)
    if match := _PREEMPTIONS.match(compact):
        team, count = match.groups()
        return Target(text, team, "preemptions", count=int(count))
    raise BadInput(f"'{text}' is not a target: write [TEAM:]pXX-wait<=DURATION (e.g. p95-wait<=30m), "
                   "[TEAM:]within-DURATION>=PERCENT (e.g. within-10m>=90%) or [TEAM:]preemptions<=N")


def parse_bound(text: str) -> Bound:
    match = _BOUND.match(text.strip().replace(" ", ""))
    if not match:
        raise BadInput(f"'{text}' is not a bound: write POOL=MIN..MAX or POOL=N (nodes)")
    pool, low, high = match.groups()
    minimum, maximum = int(low), int(high if high is not None else low)
    if minimum < 1 or maximum > MAX_NODES or minimum > maximum:
        raise BadInput(f"'{text}': nodes go from 1 to {MAX_NODES:,}, the minimum first")
    return Bound(pool, minimum, maximum)


def _flag_error(flag: str, message: str) -> InputError:
    return InputError([Diagnostic(codes.CAPACITY_TARGET_BAD, f"{flag}: {message}", SourcePosition(flag))])


def from_flags(targets: tuple[str, ...], nodes: tuple[str, ...], fixed: tuple[str, ...]) -> Requirements:
    found = Requirements()
    problems = []
    for text in targets:
        try:
            target = parse_target(text)
        except BadInput as error:
            problems.append(Diagnostic(codes.CAPACITY_TARGET_BAD, f"--target {error}", SourcePosition("--target")))
            continue
        found.targets.append(target)
        found.origins[target.text] = SourcePosition("--target")
    for text in nodes:
        try:
            bound = parse_bound(text)
        except BadInput as error:
            problems.append(Diagnostic(codes.CAPACITY_TARGET_BAD, f"--nodes {error}", SourcePosition("--nodes")))
            continue
        if bound.pool in found.bounds:
            problems.append(_twice(bound.pool, found.origins[bound.pool], SourcePosition("--nodes")))
            continue
        found.bounds[bound.pool] = bound
        found.origins[bound.pool] = SourcePosition("--nodes")
    for pool in fixed:
        if pool in found.bounds:
            problems.append(_twice(pool, found.origins[pool], SourcePosition("--fixed")))
            continue
        found.bounds[pool] = Bound(pool, fixed=True)
        found.origins[pool] = SourcePosition("--fixed")
    if problems:
        raise InputError(problems)
    return found


def from_file(path: Path, into: Requirements) -> None:
    """Add a targets file's targets and bounds (`targets: [...]`, `bounds: {POOL: MIN..MAX | fixed}`),
    every mistake named with its line."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    label = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError([Diagnostic(codes.CAPACITY_TARGET_BAD, f"cannot read the targets file: "
                                     f"{getattr(error, 'strerror', None) or error}", SourcePosition(label))]) from None
    try:
        document = YAML(typ="rt").load(text)
    except YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise InputError([Diagnostic(codes.CAPACITY_TARGET_BAD, f"not YAML: {getattr(error, 'problem', error)}",
                                     SourcePosition(label, line))]) from None
    problems: list[Diagnostic] = []

    def where(node, key) -> SourcePosition:
        try:
            line, column = node.lc.key(key) if isinstance(key, str) else node.lc.item(key)
            return SourcePosition(label, line + 1, column + 1)
        except (AttributeError, KeyError, IndexError, TypeError):
            return SourcePosition(label)

    if not isinstance(document, dict):
        raise InputError([Diagnostic(codes.CAPACITY_TARGET_BAD, "a targets file is a mapping with `targets` "
                                     "(a list) and optionally `bounds`", SourcePosition(label))])
    for key in document:
        if key not in ("targets", "bounds"):
            problems.append(Diagnostic(codes.CAPACITY_TARGET_BAD, f"unknown key '{key}' (targets, bounds)",
                                       where(document, key)))
    entries = document.get("targets", [])
    if not isinstance(entries, list):
        problems.append(Diagnostic(codes.CAPACITY_TARGET_BAD, "`targets` is a list of texts such as "
                                   "p95-wait<=30m", where(document, "targets")))
        entries = []
    for index, entry in enumerate(entries):
        position = where(entries, index)
        try:
            if not isinstance(entry, str):
                raise BadInput(f"targets[{index}] is a text such as p95-wait<=30m")
            target = parse_target(entry)
        except BadInput as error:
            problems.append(Diagnostic(codes.CAPACITY_TARGET_BAD, str(error), position))
            continue
        into.targets.append(target)
        into.origins[target.text] = position
    bounds = document.get("bounds", {})
    if not isinstance(bounds, dict):
        problems.append(Diagnostic(codes.CAPACITY_TARGET_BAD, "`bounds` maps a pool to MIN..MAX, N or fixed",
                                   where(document, "bounds")))
        bounds = {}
    for pool, value in bounds.items():
        position = where(bounds, pool)
        try:
            if value == "fixed":
                bound = Bound(str(pool), fixed=True)
            else:
                bound = parse_bound(f"{pool}={value}")
        except BadInput as error:
            problems.append(Diagnostic(codes.CAPACITY_TARGET_BAD, f"bounds: {error} (or fixed)", position))
            continue
        if bound.pool in into.bounds:
            problems.append(_twice(bound.pool, into.origins[bound.pool], position))
            continue
        into.bounds[bound.pool] = bound
        into.origins[bound.pool] = position
    if problems:
        raise InputError(problems)


def _twice(pool: str, first: SourcePosition, again: SourcePosition) -> Diagnostic:
    """Two bounds on one pool (`--nodes` twice, `--nodes` and `--fixed`, a flag and the targets
    file): refused rather than one silently winning."""
    where_first = first.path if first.path.startswith("--") else str(first)   # (a flag has no line)
    return Diagnostic(codes.CAPACITY_TARGET_BAD, f"pool '{pool}' is bounded twice (also by {where_first}); give "
                      "one bound", again)


def check_names(requirements: Requirements, teams: set[str], pools: set[str], cluster: str) -> None:
    """Every team a target names and every pool a bound names exists in the cluster searched."""
    problems = []
    for target in requirements.targets:
        if target.team is not None and target.team not in teams:
            problems.append(Diagnostic(codes.CAPACITY_UNKNOWN_NAME, f"target '{target.text}': cluster '{cluster}' "
                                       f"has no team '{target.team}' (teams: {', '.join(sorted(teams))})",
                                       requirements.origins.get(target.text)))
    for pool in requirements.bounds:
        if pool not in pools:
            problems.append(Diagnostic(codes.CAPACITY_UNKNOWN_NAME, f"bound on '{pool}': cluster '{cluster}' has no "
                                       f"such pool (pools: {', '.join(sorted(pools))})", requirements.origins.get(pool)))
    if problems:
        raise InputError(problems)
