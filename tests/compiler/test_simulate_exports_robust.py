"""A Kueue export (`kubectl get workloads -A -o yaml`) with values of the wrong type, out of the
trace's bounds, repeated or missing: never a traceback; each Workload left out or approximated is
named in TraceNotes.skipped (a warning), and an export with nothing usable left is an InputError."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kp_testing.exports import export_text, exported

from compiler.core.errors import InputError, Severity
from compiler.evaluator.reader import parse_text
from compiler.simulate.trace import export_jobs, from_export

WORKTREE = Path(__file__).resolve().parents[2]
TEAMS = {"alpha-train": "alpha", "alpha-eval": "alpha"}
PRIORITIES = {"standard", "critical"}


def workload(name="w1", **changes):
    doc = exported(name, "alpha-train", "2026-11-30T09:00:00Z", "2026-11-30T09:01:00Z", count=1)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return doc


DELETE = object()
REQUESTS = "spec__podSets__0__template__spec__containers__0__resources__requests"


def read(items, form="yaml"):
    """(jobs, notes) of an export, as `simulate` reads it with a policy of team alpha."""
    text = export_text(items) if form == "yaml" else json.dumps({"apiVersion": "v1", "kind": "List",
                                                                 "items": items})
    trace, notes = from_export(export_jobs(parse_text(text, "export.yaml")), TEAMS, PRIORITIES, "export.yaml")
    return {job.name: job for job in trace.jobs}, notes.skipped


def about(notes, name="alpha-train/w1"):
    found = [d for d in notes if name in d.message]
    assert found, [d.message for d in notes]
    assert all(d.severity is Severity.WARNING for d in found)
    return " ".join(d.message for d in found)


# (changes to the good Workload w1, whether w1 is still simulated, words its note must hold)
WRONG_TYPES = {
    "status-string": ({"status": "oops"}, False, "status is not a mapping"),
    "status-list": ({"status": ["oops"]}, False, "status is not a mapping"),
    "conditions-string": ({"status": {"conditions": "oops"}}, False, "status.conditions is not a list"),
    "priority-ref-string": ({"spec__priorityClassRef": "high"}, True, "spec.priorityClassRef is not a mapping"),
}
OUT_OF_BOUNDS = {
    "gpus-65": ({f"{REQUESTS}__nvidia.com/gpu": "65"}, "gpus = 65"),
    "count-100001": ({"spec__podSets__0__count": 100001}, "replicas = 100001"),
    "cpu-9E": ({f"{REQUESTS}__cpu": "9E"}, "cpu"),
    "memory-100Pi": ({f"{REQUESTS}__memory": "100Pi"}, "memory"),
    "mig-no-profile": ({REQUESTS: {"nvidia.com/mig-": "1"}}, "mig = ''"),
    "run-too-long": ({"status": {"conditions": [
        {"type": "QuotaReserved", "status": "True", "lastTransitionTime": "2026-11-30T09:01:00Z"},
        {"type": "Finished", "status": "True", "lastTransitionTime": "2226-11-30T09:01:00Z"}]}}, "duration"),
}
REJECTED = {
    "no-api-version": ({"apiVersion": DELETE}, "apiVersion"),
    "spec-null": ({"spec": None}, "spec.podSets is empty"),
    "no-pod-sets": ({"spec__podSets": []}, "spec.podSets is empty"),
    "no-creation-time": ({"metadata__creationTimestamp": DELETE}, "creationTimestamp"),
    "bad-creation-time": ({"metadata__creationTimestamp": "yesterday"}, "creationTimestamp"),
    "creation-time-without-offset": ({"metadata__creationTimestamp": "2026-11-30T09:00:00"}, "creationTimestamp"),
    # (a count that is no count was read as 0 pods: replaying it as one pod would be a guess)
    "count-negative": ({"spec__podSets__0__count": -1}, "count must be a non-negative integer (got -1)"),
    "count-string": ({"spec__podSets__0__count": "2"}, "count must be a non-negative integer (got '2')"),
    "count-zero": ({"spec__podSets__0__count": 0}, "no pod set has a pod"),
}


@pytest.mark.parametrize("form", ["yaml", "json"])
@pytest.mark.parametrize("case", sorted(WRONG_TYPES))
def test_fields_of_the_wrong_type_read_as_absent_and_are_reported(case, form):
    changes, simulated, words = WRONG_TYPES[case]
    jobs, notes = read([workload("ok"), workload(**changes)], form)
    assert "ok" in jobs and ("w1" in jobs) is simulated
    assert words in about(notes)


@pytest.mark.parametrize("form", ["yaml", "json"])
def test_metadata_that_is_no_mapping_is_reported_at_its_line(form):
    jobs, notes = read([workload("ok"), workload(metadata="oops")], form)
    assert set(jobs) == {"ok"}
    (note,) = notes
    assert "metadata is not a mapping" in note.message
    assert note.position.path == "export.yaml" and (form == "json" or note.position.line == 5)


@pytest.mark.parametrize("form", ["yaml", "json"])
@pytest.mark.parametrize("case", sorted(OUT_OF_BOUNDS))
def test_values_a_trace_cannot_hold_skip_that_workload_with_a_warning(case, form):
    changes, words = OUT_OF_BOUNDS[case]
    jobs, notes = read([workload("ok"), workload(**changes)], form)
    assert set(jobs) == {"ok"}
    text = about(notes)
    assert words in text and "skipped" in text
    # Nothing usable left: the export's own error, with the reasons, not a ValidationError.
    with pytest.raises(InputError) as raised:
        read([workload(**changes)], form)
    assert any("alpha-train/w1" in d.message and words in d.message for d in raised.value.diagnostics)
    assert any("the export has no Workload" in d.message for d in raised.value.diagnostics)


@pytest.mark.parametrize("created", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59-23:59"])
def test_a_workload_created_centuries_from_the_others_is_the_one_skipped(created):
    jobs, notes = read([workload("ok"), workload(metadata__creationTimestamp=created)])
    assert set(jobs) == {"ok"} and jobs["ok"].at == 0
    assert "more than 10000000000 seconds apart" in about(notes)


@pytest.mark.parametrize("form", ["yaml", "json"])
@pytest.mark.parametrize("case", sorted(REJECTED))
def test_a_workload_that_cannot_be_read_is_named_in_the_notes(case, form):
    changes, words = REJECTED[case]
    jobs, notes = read([workload("ok"), workload(**changes)], form)
    assert set(jobs) == {"ok"}
    assert words in about(notes)


def test_a_workload_without_namespace_is_reported():
    jobs, notes = read([workload("ok"), workload(metadata__namespace=DELETE)])
    assert set(jobs) == {"ok"}
    assert "metadata.namespace" in about(notes, "<no namespace>/w1")


@pytest.mark.parametrize("form", ["yaml", "json"])
def test_a_workload_exported_twice_is_simulated_once(form):
    twice = workload(**{f"{REQUESTS}__nvidia.com/gpu": "8"})
    jobs, notes = read([workload("ok"), workload(), twice], form)
    assert set(jobs) == {"ok", "w1"} and jobs["w1"].gpus == 4  # the first one
    assert "twice" in about(notes)


@pytest.mark.parametrize("field", ["spec__priorityClassName", "spec__priorityClassRef"])
def test_a_priority_class_the_policy_lacks_is_dropped_with_a_warning(field):
    value = "urgent" if field.endswith("Name") else {"name": "urgent", "kind": "WorkloadPriorityClass"}
    jobs, notes = read([workload("ok"), workload(**{field: value})])
    assert jobs["w1"].priority is None  # the team's default
    assert "'urgent'" in about(notes)
    known, quiet = read([workload(spec__priorityClassName="critical")])
    assert known["w1"].priority == "critical" and not quiet


@pytest.mark.parametrize("form", ["yaml", "json"])
def test_a_finished_condition_without_a_time_is_reported(form):
    conditions = [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": "2026-11-30T09:01:00Z"},
                  {"type": "Finished", "status": "True", "lastTransitionTime": "soon"}]
    later = exported("later", "alpha-train", "2026-11-30T10:00:00Z", "2026-11-30T10:00:00Z", "2026-11-30T11:00:00Z")
    jobs, notes = read([later, workload(status={"conditions": conditions})], form)
    assert jobs["w1"].duration == 11 * 3600 - 9 * 3600 - 60  # runs until the export's last moment
    assert "Finished condition has no valid lastTransitionTime" in about(notes)


def test_a_good_export_has_no_notes():
    jobs, notes = read([workload("ok"), workload()])
    assert set(jobs) == {"ok", "w1"} and notes == []


def test_the_cli_exits_1_without_traceback_when_nothing_is_usable(tmp_path):
    """Through the command line of this checkout (not the installed console script's)."""
    trace = tmp_path / "export.yaml"
    trace.write_text(export_text([workload(**{f"{REQUESTS}__nvidia.com/gpu": "65"}),
                                  workload("w2", status="oops", metadata__creationTimestamp="0001-01-01T00:00:00Z"),
                                  workload("w3", metadata="oops")]))
    result = subprocess.run([sys.executable, "-m", "compiler", "simulate", str(WORKTREE / "policies"),
                             "--trace", str(trace)], cwd=WORKTREE, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "alpha-train/w1 cannot be simulated: gpus = 65" in result.stderr
    assert "alpha-train/w2: status is not a mapping" in result.stderr
    assert "export.yaml:" in result.stderr and "the export has no Workload" in result.stderr
