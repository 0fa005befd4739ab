"""Job traces: what arrives when, for how long, and in which shape.

Three sources, one model (`Trace`):

* YAML, a `jobs` list (the hand-written form):

      jobs:
        - {name: ft-1, team: alpha, at: 0, duration: 3600, replicas: 2, gpus: 8, priority: critical}

* CSV, one job a line, with a header naming the columns
  (`team,name,at,duration,replicas,gpus,mig,priority`; `cpu`, `memory` and `gpuMemory` may be
  added). `at` is seconds from the start or an RFC 3339 time (then the earliest time is the
  start); `duration` is seconds. An empty cell means "not set".

* A Kueue export (`kubectl get workloads -A -o yaml`, or `-o json`): arrival from `creationTimestamp`, run
  time from the QuotaReserved (or Admitted) condition to the Finished condition, shape from the
  pod sets, team from the namespace of the Workload (the team that owns it). See `from_export`.

A job takes the fields of a declared workload plus `team`, `at` and `duration`.
"""

from __future__ import annotations

import bisect
import csv
import datetime
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Callable

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StrictInt, ValidationError

from compiler.core import codes, yamlio
from compiler.core.errors import Diagnostic, DiagnosticSink, InputError, Severity, SourcePosition
from compiler.core.resources import GPU_RESOURCE, MIG_PREFIX, is_gpu, is_mig
from compiler.language.load import PolicySourceFile, load_file
from compiler.language.policy import DeclaredWorkload, DnsLabel
from compiler.language.validate import report_model_errors

MAX_JOBS = 1_000_000
MAX_AT = 10**10          # seconds from the trace's start (about 317 years)
MAX_DURATION = 10**9     # seconds of one run (about 32 years)
# A YAML trace of MAX_JOBS jobs is about 100 MB (`trace synth` writes ~104 bytes a job).
MAX_TRACE_BYTES = 256 * 1024 * 1024
CSV_COLUMNS = ("team", "name", "at", "duration", "replicas", "gpus", "mig", "gpuMemory", "cpu", "memory", "priority")
INTEGER_COLUMNS = {"duration", "replicas", "gpus"}


class TraceJob(DeclaredWorkload):
    team: DnsLabel
    at: Annotated[StrictInt, Field(ge=0, le=MAX_AT)] = 0
    duration: Annotated[StrictInt, Field(ge=1, le=MAX_DURATION)]


class Trace(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    jobs: list[TraceJob] = Field(min_length=1, max_length=MAX_JOBS)
    # Where each job was read (never part of the input): a callable, so that a YAML trace of
    # 100,000 jobs reads its position table only when a job has something to report.
    _locate: Callable[[int], SourcePosition] | None = PrivateAttr(default=None)

    def located(self, locate: Callable[[int], SourcePosition]) -> "Trace":
        self._locate = locate
        return self

    def where(self, index: int, path: str) -> SourcePosition:
        """The file position of job `index`, for a diagnostic about it."""
        return self._locate(index) if self._locate is not None else SourcePosition(path)


@dataclass
class TraceNotes:
    """What a trace reader left out or approximated, reported next to the results."""

    skipped: list[Diagnostic] = field(default_factory=list)
    unknown_teams: dict[str, int] = field(default_factory=dict)  # namespace -> jobs left out
    # What the jobs read ask that the policy cannot give as asked (pods larger than any node):
    # kept, and warned about.
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"unknownTeams": dict(sorted(self.unknown_teams.items())),
                "skipped": [{"code": d.code, "message": d.message, "at": str(d.position) if d.position else None}
                            for d in self.skipped],
                "warnings": list(self.warnings)}


def _error(message: str, path: str, line: int | None = None, code: str = codes.TRACE_BAD) -> InputError:
    return InputError([Diagnostic(code, message, SourcePosition(path, line or 1))])


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise _error(f"cannot read trace: {error.strerror or error}", str(path), code=codes.UNREADABLE) from None


_EXPORT_KIND = re.compile(rb"^kind:[ \t]*[\"']?(List|Workload)[\"']?[ \t]*\r?$", re.MULTILINE)
_JOBS_KEY = re.compile(rb"^[\"']?jobs[\"']?[ \t]*:", re.MULTILINE)


# In JSON a key's depth is not in its line: this only says whether parsing is worth it.
_JSON_EXPORT_KIND = re.compile(rb'"kind"[ \t\r\n]*:[ \t\r\n]*"(List|Workload)"')
_JSON_OBJECT_START = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]*\{")   # (a UTF-8 BOM first: PowerShell's utf8)


def is_kueue_export(content: bytes) -> bool:
    """A YAML file of Workload objects (or a `kind: List` of them), rather than a `jobs` list:
    a top-level `kind:` anywhere in the file (`kubectl get -o yaml` sorts keys, so a List's
    `kind:` comes after all its items, at the very end of a large export)."""
    return bool(_EXPORT_KIND.search(content)) and not _JOBS_KEY.search(content)


def json_export(content: bytes) -> object | None:
    """The parsed document of a `kubectl get workloads -A -o json` export (a List of Workloads,
    or one Workload), else None. A `jobs` trace written as JSON, or a file that is not JSON after
    all, is None: the trace reader then reads it as YAML, with its size limit and positions."""
    if not _JSON_OBJECT_START.match(content) or not _JSON_EXPORT_KIND.search(content):
        return None
    try:
        document = yamlio.load_json(content.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return None
    if isinstance(document, dict) and document.get("kind") in ("List", "Workload") and "jobs" not in document:
        return document
    return None


def export_documents(path: Path, content: bytes) -> list[tuple[object, SourcePosition]] | None:
    """The objects of a Kueue export, YAML or JSON, with their positions (a JSON export's all at
    the file's: the json module keeps no lines), or None when the file is a trace of jobs."""
    from compiler.evaluator.reader import json_documents, read_files

    if path.suffix.lower() == ".csv":
        return None
    document = json_export(content)
    if document is not None:
        return json_documents(document, str(path))   # parsed once, not again by read_files
    return read_files([str(path)]) if is_kueue_export(content) else None


def read_yaml_trace(path: Path, content: bytes) -> Trace:
    sink = DiagnosticSink()
    documents = load_file(PolicySourceFile(str(path), content), sink, max_bytes=MAX_TRACE_BYTES, kind="trace files")
    sink.raise_if_errors()
    if len(documents) != 1 or not isinstance(documents[0].data, dict):
        raise _error("a trace file holds one document with a `jobs` list", str(path), code=codes.DOC_NOT_MAPPING)
    document = documents[0]
    try:
        trace = Trace.model_validate(document.data)
    except ValidationError as error:
        report_model_errors(error, document, sink, Trace)
        raise InputError(sink.items) from None
    return trace.located(lambda index: document.position(("jobs", index)))


# RFC 3339's date-time (Python's fromisoformat alone also reads week dates and basic formats).
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def _parse_time(text: str) -> datetime.datetime | None:
    if not _RFC3339.fullmatch(text):
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment


def read_csv_trace(path: Path, content: bytes) -> Trace:
    """A CSV trace: a header row naming the columns, then one job a row."""
    where = str(path)
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise _error(f"not UTF-8 (byte {error.start})", where, code=codes.UNREADABLE) from None
    rows = _csv_rows(text, where)
    if not rows:
        raise _error("empty CSV trace: the first line names the columns (team,name,at,duration,...)", where, 1)
    header = [cell.strip() for cell in rows[0][1]]
    unknown = [c for c in header if c not in CSV_COLUMNS]
    if unknown:
        raise _error(f"unknown column {unknown[0]!r}; a CSV trace has the columns {', '.join(CSV_COLUMNS)}", where, 1)
    missing = [c for c in ("team", "name", "duration") if c not in header]
    if missing:
        raise _error(f"the header has no {missing[0]!r} column", where, 1)
    twice = next((c for i, c in enumerate(header) if c in header[:i]), None)
    if twice is not None:
        raise _error(f"the header names the column {twice!r} twice", where, 1)
    records: list[tuple[int, dict]] = []
    for line, row in rows[1:]:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise _error(f"{len(row)} cells where the header has {len(header)}", where, line)
        cells = [cell.strip() for cell in row]
        records.append((line, {k: v for k, v in zip(header, cells) if v}))
    if not records:
        raise _error("the CSV trace has a header but no job", where, 1)
    lines = [line for line, _ in records]
    try:
        # One validation for the whole list: per row, pydantic's entry cost is most of the read.
        trace = Trace.model_validate({"jobs": _csv_jobs(records, where)})
    except ValidationError as error:
        item = error.errors(include_url=False)[0]
        location = item["loc"]
        if len(location) < 2 or location[0] != "jobs" or not isinstance(location[1], int):
            raise _error(f"{'.'.join(str(p) for p in location) or 'jobs'}: {item['msg']}", where, 1) from None
        column = ".".join(str(p) for p in location[2:]) or "row"
        raise _error(f"{column}: {item['msg']}", where, lines[location[1]]) from None
    return trace.located(lambda index: SourcePosition(where, lines[index]))


def _csv_rows(text: str, where: str) -> list[tuple[int, list[str]]]:
    """(line where the row starts, cells) for every row. Rows end at \\n, \\r\\n or a lone \\r,
    and a quoted cell may hold line breaks: the line numbers count lines, not rows."""
    reader = csv.reader(io.StringIO(text, newline=""))
    rows, line = [], 1
    try:
        for row in reader:
            rows.append((line, row))
            line = reader.line_num + 1
    except csv.Error as error:
        raise _error(f"cannot read this CSV: {error}", where, reader.line_num or 1) from None
    return rows


def _csv_jobs(records: list[tuple[int, dict]], where: str) -> list[dict]:
    """The rows as TraceJob fields: times made seconds from the trace's start, whole numbers
    read (validated with the rest by the caller)."""
    moments: dict[int, datetime.datetime] = {}
    for line, record in records:
        at = record.get("at", "0")
        if not at.isdigit():
            moment = _parse_time(at)
            if moment is None:
                raise _error(f"at: {at!r} is neither seconds from the start nor an RFC 3339 time "
                             "(2026-11-30T09:00:00Z)", where, line)
            moments[line] = moment
    if moments and len(moments) != len(records):
        first = next(line for line, _ in records if line not in moments)
        raise _error("at: mixes seconds and RFC 3339 times; use one form for the whole trace", where, first)
    start = min(moments.values()) if moments else None
    jobs = []
    for line, record in records:
        values: dict[str, object] = dict(record)
        if start is not None:
            values["at"] = int((moments[line] - start).total_seconds())
        for column in INTEGER_COLUMNS | ({"at"} if start is None else set()):
            if column in values:
                text = str(values[column])
                if not (text.isascii() and text.isdecimal()):
                    raise _error(f"{column}: {text!r} is not a whole number", where, line)
                if len(text.lstrip("0")) > 12:
                    raise _error(f"{column}: {text} is out of range (at most 12 digits)", where, line)
                values[column] = int(text)
        jobs.append(values)
    return jobs


def read_trace(path: Path) -> Trace:
    """A YAML or CSV trace file (a Kueue export needs the policy: see `from_export`)."""
    content = read_bytes(path)
    if path.suffix.lower() == ".csv":
        return read_csv_trace(path, content)
    return read_yaml_trace(path, content)


# -- Kueue exports -------------------------------------------------------------------------------
_NAME_UNSAFE = re.compile(r"[^a-z0-9-]+")


def _dns_label(name: str) -> str:
    label = _NAME_UNSAFE.sub("-", name.lower()).strip("-")[:63].strip("-")
    return label or "job"


# What a trace field of an exported Workload was read from, for a note on a value out of bounds.
_FIELD_SOURCES = {"gpus": "nvidia.com/gpu per pod", "mig": "the MIG profile of its nvidia.com/mig-<profile> request",
                  "cpu": "cpu per pod", "memory": "memory per pod", "replicas": "pods, spec.podSets[].count",
                  "at": "seconds from the export's first creationTimestamp",
                  "duration": "run time in seconds, QuotaReserved to Finished", "priority": "priority class name",
                  "name": "metadata.name"}


def _as_mapping(value: object) -> dict:
    """Export data of the wrong type (a string where a mapping belongs) reads as absent."""
    return value if isinstance(value, dict) else {}


def _export_time(value: object) -> datetime.datetime | None:
    """An RFC 3339 time of an export (with its offset), else None."""
    return _parse_time(value) if isinstance(value, str) else None


def _conditions(doc: dict) -> list[dict]:
    conditions = _as_mapping(doc.get("status")).get("conditions")
    return [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []


def _condition_time(doc: dict, *types: str) -> datetime.datetime | None:
    conditions = _conditions(doc)
    for wanted in types:
        for condition in conditions:
            if condition.get("type") == wanted and condition.get("status") == "True":
                moment = _export_time(condition.get("lastTransitionTime"))
                if moment is not None:
                    return moment
    return None


def _bad_condition_times(doc: dict, *types: str) -> list[str]:
    """What the True conditions of these types hold as lastTransitionTime when it is no time."""
    return [repr(c.get("lastTransitionTime")) for c in _conditions(doc)
            if c.get("type") in types and c.get("status") == "True"
            and _export_time(c.get("lastTransitionTime")) is None]


@dataclass
class ExportedJob:
    """One Workload of an export, before it becomes a TraceJob (times still absolute). A Workload
    that cannot be read has `rejected` (why) and no times; `notes` are what reading it left out."""

    namespace: str
    name: str
    created: datetime.datetime | None
    started: datetime.datetime | None
    finished: datetime.datetime | None
    shape: dict
    where: SourcePosition | None
    notes: list[Diagnostic] = field(default_factory=list)
    rejected: Diagnostic | None = None


def _rejected(namespace: str, name: str, why: str, where: SourcePosition | None,
              related: SourcePosition | None = None) -> ExportedJob:
    return ExportedJob(namespace, name, None, None, None, {}, where, rejected=Diagnostic(
        codes.TRACE_BAD, f"{namespace}/{name}: {why}; skipped", where, Severity.WARNING, related))


def export_jobs(documents: list[tuple[object, SourcePosition]]) -> list[ExportedJob]:
    """The Workloads of a `kubectl get workloads -A -o yaml` export, with their times and shape;
    the ones that cannot be read come back rejected, with the reason (see `from_export`)."""
    from compiler.evaluator import load_documents

    docs = []
    for doc, where in documents:
        items = doc.get("items") if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
        docs += [(item, where) for item in (items if isinstance(items, list) else [])
                 if isinstance(item, dict) and item.get("kind") == "Workload"]
    state = load_documents(docs)
    by_key = {w.key: w for w in state.workloads}
    # A YAML export gives each item its line; JSON gives them all the file's position, and the
    # reader's warnings are then told apart by the Workload they name.
    distinct = len({where for _, where in docs}) == len(docs)
    said: dict[object, list[Diagnostic]] = {}
    for diagnostic in state.warnings:
        if diagnostic.code != codes.EVAL_DUPLICATE:  # a Workload twice is reported below
            about = diagnostic.position if distinct else \
                diagnostic.message.removeprefix("Workload ").split(": ", 1)[0]
            said.setdefault(about, []).append(diagnostic)
    first: dict[str, SourcePosition | None] = {}
    jobs = []
    for doc, where in docs:
        meta = doc.get("metadata")
        namespace = meta.get("namespace") if isinstance(meta, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        ns_text = namespace if isinstance(namespace, str) and namespace else "<no namespace>"
        name_text = name if isinstance(name, str) and name else "<no name>"
        if not isinstance(meta, dict):
            jobs.append(_rejected(ns_text, name_text, "metadata is not a mapping", where))
            continue
        if name_text == "<no name>" or ns_text == "<no namespace>":
            missing = "metadata.name" if name_text == "<no name>" else "metadata.namespace"
            jobs.append(_rejected(ns_text, name_text, f"{missing} is missing or not a string", where))
            continue
        key = f"{namespace}/{name}"
        if key in first:
            jobs.append(_rejected(namespace, name, "the export holds this Workload twice: only the first is read",
                                  where, first[key]))
            continue
        first[key] = where
        workload = by_key.get(key)
        loader_said = said.get(where if distinct else key, [])
        if workload is None or (distinct and workload.source is not None and workload.source != where):
            why = "; ".join(d.message.removeprefix(f"Workload {key}: ").removesuffix("; skipped")
                            for d in loader_said) or (
                "it has no apiVersion" if not isinstance(doc.get("apiVersion"), str) else
                "the Kueue object reader skipped it")
            jobs.append(_rejected(namespace, name, f"not a usable Workload ({why})", where))
            continue
        unknown = _unknown_shape(workload, key, loader_said)
        if unknown is not None:
            jobs.append(_rejected(namespace, name, f"its shape is unknown ({unknown})", where))
            continue
        created_text = meta.get("creationTimestamp")
        created = _export_time(created_text)
        if created is None:
            jobs.append(_rejected(namespace, name, "metadata.creationTimestamp is missing or not an RFC 3339 time "
                                  f"(got {created_text!r}): its arrival is unknown", where))
            continue
        notes = [Diagnostic(d.code, d.message, d.position, Severity.WARNING, d.related) for d in loader_said]
        started = _condition_time(doc, "QuotaReserved", "Admitted")
        finished = _condition_time(doc, "Finished")
        notes += _read_as_absent(doc, key, where, started, finished)
        jobs.append(ExportedJob(namespace, name, created, started, finished, _shape(workload, doc), where, notes))
    return jobs


def _read_as_absent(doc: dict, key: str, where: SourcePosition | None, started, finished) -> list[Diagnostic]:
    """The notes on a Workload's fields of the wrong type, each read as absent."""
    notes = []

    def note(message: str) -> None:
        notes.append(Diagnostic(codes.TRACE_BAD, f"{key}: {message}", where, Severity.WARNING))

    status, spec = doc.get("status"), _as_mapping(doc.get("spec"))
    if status is not None and not isinstance(status, dict):
        note("status is not a mapping: read as no status (no admission, never finished)")
    elif status is not None and status.get("conditions") is not None \
            and not isinstance(status.get("conditions"), list):
        note("status.conditions is not a list: read as no conditions")
    if started is None and (bad := _bad_condition_times(doc, "QuotaReserved", "Admitted")):
        note(f"its QuotaReserved/Admitted condition has no valid lastTransitionTime (got {', '.join(bad)})")
    if finished is None and (bad := _bad_condition_times(doc, "Finished")):
        note(f"its Finished condition has no valid lastTransitionTime (got {', '.join(bad)}): taken as still "
             "running at the export's last moment")
    if spec.get("priorityClassRef") is not None and not isinstance(spec.get("priorityClassRef"), dict):
        note(f"spec.priorityClassRef is not a mapping (got {spec.get('priorityClassRef')!r}): ignored")
    return notes


def _unknown_shape(workload, key: str, loader_said: list[Diagnostic]) -> str | None:
    """Why a Workload's pods are unknown, or None: a pod set whose count is not a count (the
    reader took it as 0 pods: replayed as one pod, it would be a guess), or no pod at all."""
    bad_counts = [d.message.removeprefix(f"Workload {key}: ") for d in loader_said if "count must be" in d.message]
    if bad_counts:
        return "; ".join(bad_counts)
    return None if any(ps.count > 0 for ps in workload.podsets) else "no pod set has a pod (count 0)"


def _shape(workload, doc: dict) -> dict:
    """The trace fields of a Workload: its GPU pod set's pods and per-pod requests."""
    pod_sets = sorted(workload.podsets, key=lambda ps: -sum(
        v for r, v in ps.per_pod.items() if is_gpu(r)) * ps.count)
    main = pod_sets[0]
    shape: dict = {"replicas": max(1, sum(ps.count for ps in pod_sets if ps.per_pod == main.per_pod))}
    gpus = main.per_pod.get(GPU_RESOURCE, 0)
    migs = {r.removeprefix(MIG_PREFIX): v for r, v in main.per_pod.items() if is_mig(r)}
    if gpus:
        shape["gpus"] = gpus
    elif migs:
        profile, count = sorted(migs.items())[0]
        shape["mig"] = profile
        shape["replicas"] *= count
    if main.per_pod.get("cpu"):
        shape["cpu"] = f"{main.per_pod['cpu']}m"
    if main.per_pod.get("memory"):
        shape["memory"] = str(main.per_pod["memory"])
    spec = _as_mapping(doc.get("spec"))
    priority = _as_mapping(spec.get("priorityClassRef")).get("name") or spec.get("priorityClassName")
    if isinstance(priority, str) and priority:
        shape["priority"] = priority
    return shape


def _why_invalid(error: ValidationError, fields: dict) -> str:
    """A ValidationError of a TraceJob in the export's terms: which value, read from where, and why."""
    parts = []
    for problem in error.errors():
        name = str(problem["loc"][0]) if problem.get("loc") else ""
        value = f" = {fields[name]!r}" if name in fields else ""
        source = f" ({_FIELD_SOURCES[name]})" if name in _FIELD_SOURCES else ""
        parts.append(f"{name or 'the job'}{value}{source}: {problem['msg']}")
    return "; ".join(parts)


def _arrival_window(jobs: list[ExportedJob]) -> tuple[datetime.datetime, datetime.datetime]:
    """The first and last creation time of the MAX_AT-second window holding the most Workloads:
    one created centuries apart from the rest (0001-01-01) is the odd one, not all the others.
    Of windows alike, the one with the most admissions in it (or soon after), then the latest."""
    times = sorted(job.created for job in jobs)
    seconds = [moment.timestamp() for moment in times]
    admitted = sorted(job.started.timestamp() for job in jobs if job.started is not None)
    best, low = (-1, 0, 0, 0), 0
    for high in range(len(times)):
        while seconds[high] - seconds[low] > MAX_AT:
            low += 1
        if high - low >= best[0]:
            inside = (bisect.bisect_right(admitted, seconds[high] + MAX_DURATION)
                      - bisect.bisect_left(admitted, seconds[low]))
            best = max(best, (high - low, inside, low, high))
    return times[best[2]], times[best[3]]


def from_export(jobs: list[ExportedJob], team_of_namespace: dict[str, str], priorities: set[str],
                path: str) -> tuple[Trace, TraceNotes]:
    """A trace from exported Workloads: jobs of namespaces no team owns, jobs never admitted,
    Workloads that cannot be read or whose values a trace cannot hold are reported in the notes,
    not dropped silently."""
    notes = TraceNotes()

    def skip(job: ExportedJob, message: str, code: str = codes.TRACE_BAD) -> None:
        notes.skipped.append(Diagnostic(code, f"{job.namespace}/{job.name} {message}", job.where, Severity.WARNING))

    usable = []
    for job in jobs:
        if job.rejected is not None:
            notes.skipped.append(job.rejected)
            continue
        team = team_of_namespace.get(job.namespace)
        if team is None:
            notes.unknown_teams[job.namespace] = notes.unknown_teams.get(job.namespace, 0) + 1
            continue
        notes.skipped += job.notes
        if not any(key in job.shape for key in ("gpus", "mig", "cpu", "memory")):
            skip(job, "requests no GPU, MIG instance, cpu or memory: nothing a quota counts")
            continue
        if job.started is None:
            skip(job, "was never admitted in the export: its run time is unknown", codes.TRACE_NO_RUN_TIME)
            continue
        usable.append((job, team))
    trace_jobs, names, places = [], set(), []
    if usable:
        start, last = _arrival_window([job for job, _ in usable])
        # A job still running runs until the export's last moment: its latest time, leaving out
        # a time too far away for any job to reach (a Finished in 2226 would stretch them all).
        horizon = max(t for j in jobs for t in (j.created, j.started, j.finished)
                      if t is not None and (t - last).total_seconds() <= MAX_DURATION)
    for job, team in usable:
        if not start <= job.created <= last:
            skip(job, f"was created at {job.created.isoformat()}, more than {MAX_AT} seconds apart from the "
                 f"export's other Workloads ({start.isoformat()} to {last.isoformat()}): skipped")
            continue
        end = job.finished or horizon
        shape = dict(job.shape)
        if "priority" in shape and shape["priority"] not in priorities:
            skip(job, f"has priority class {shape.pop('priority')!r}, which the policy does not define: it gets "
                 "its team's default priority")
        name = _dns_label(job.name)
        while (team, name) in names:
            name = _dns_label(f"{name[:55]}-{len(names)}")
        fields = {"team": team, "name": name, "at": int((job.created - start).total_seconds()),
                  "duration": max(1, int((end - job.started).total_seconds())), **shape}
        try:
            trace_job = TraceJob.model_validate(fields)
        except ValidationError as error:
            skip(job, f"cannot be simulated: {_why_invalid(error, fields)}; skipped")
            continue
        names.add((team, name))
        trace_jobs.append(trace_job)
        places.append(job.where or SourcePosition(path))
    if not trace_jobs:
        raise InputError(notes.skipped + [Diagnostic(codes.TRACE_BAD, "the export has no Workload of the "
                                                     "policy's teams with a run time", SourcePosition(path))])
    if len(trace_jobs) > MAX_JOBS:
        raise _error(f"the export has {len(trace_jobs)} usable Workloads; a trace holds at most {MAX_JOBS}", path)
    return Trace(jobs=trace_jobs).located(places.__getitem__), notes
