"""`simulate` on traces from where users have them (YAML, CSV, a Kueue export, `trace synth`),
the metrics it answers with, and `--compare REV` on a real git repository."""

from __future__ import annotations

import json
import subprocess

import pytest
from kp_testing.policies import CLUSTER, team, write_policy
from kp_testing import run_cli
from kp_testing.exports import export_text, exported

TEAMS = {"a": "namespaces: [a, a-eval]\ngpus: {guaranteed: 8}\ncapacity: on-demand-only\n"
              "workloads:\n  - {name: train, replicas: 2, gpus: 4}\n  - {name: eval, replicas: 1, gpus: 1}",
         "b": "namespaces: [b]\ngpus: {guaranteed: 8}\ncapacity: on-demand-only\nweight: 3\n"
              "workloads:\n  - {name: big, replicas: 1, gpus: 8}"}


@pytest.fixture
def policies(tmp_path):
    files = {"cluster.yaml": CLUSTER} | {f"{n}.yaml": team(n, body) for n, body in TEAMS.items()}
    return write_policy(tmp_path, files)


def simulate_json(policies, trace_file, *extra):
    result = run_cli("simulate", str(policies), "--trace", str(trace_file), "--format", "json", *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_csv_trace_with_rfc3339_times_and_the_metrics_it_yields(policies, tmp_path):
    trace = tmp_path / "jobs.csv"
    trace.write_text("team,name,at,duration,replicas,gpus,mig,priority\n"
                     "a,one,2026-11-30T09:00:00Z,3600,2,8,,\n"
                     "b,two,2026-11-30T09:30:00Z,1800,1,8,,high\n")
    summary = simulate_json(policies, trace)
    jobs = {j["name"]: j for j in summary["jobs"]}
    assert jobs["one"]["submitted"] == 0 and jobs["two"]["submitted"] == 1800
    # `one` borrows b's idle quota (16 GPUs, a holds 8); b reclaims at 09:30 and `one` restarts later.
    assert jobs["two"]["started"] == 1800 and jobs["one"]["preemptions"] == 1
    assert jobs["one"]["started"] == 3600 and jobs["one"]["finished"] == 7200
    teams = {t["team"]: t for t in summary["teams"]}
    # a used 16 GPUs for 1800 s (lost) and 16 GPUs for 3600 s: 24 GPU-hours; 8 GPUs above its quota.
    assert teams["a"]["gpuHours"] == 24.0
    assert teams["a"]["borrowedGpuHours"] == pytest.approx(12.0)
    assert teams["a"]["preemptionsSuffered"] == 1 and teams["b"]["preemptionsCaused"] == 1
    assert teams["b"]["lentGpuHours"] > 0 and teams["a"]["wait"]["max"] == 3600
    assert teams["b"]["fairShareWeight"] == 0.75 and teams["a"]["fairShareWeight"] == 0.25
    assert summary["run"]["makespan"] == 7200
    od = next(p for p in summary["pools"] if p["pool"] == "od" and p["resource"] == "nvidia.com/gpu")
    assert od["capacity"] == 16 and od["usedHours"] == pytest.approx(24.0 + 4.0)


@pytest.mark.parametrize("body, line, words", [
    ("team,name,at,duration\na,x,yesterday,10\n", 2, "is neither seconds from the start nor an RFC 3339 time"),
    ("team,name,at,duration,colour\na,x,0,10,red\n", 1, "unknown column 'colour'"),
    ("team,name,at,duration\na,x,0,10\nb,y,2026-11-30T09:00:00Z,5\n", 2, "mixes seconds and RFC 3339"),
    ("team,name,at,duration\na,x,0,-5\n", 2, "duration"),
    ("team,name,at\na,x,0\n", 1, "no 'duration' column"),
    ("team,name,at,duration\na,x,0,\u00b2\n", 2, "duration: '\u00b2' is not a whole number"),
    # Field checks run on the whole list at once: the first bad row is still the one named.
    ("team,name,at,duration,gpus\na,x,0,10,1\nBad_Team,y,0,10,1\nc,z,0,10,1\n", 3, "team:"),
    ("team,name,at,duration,gpus,mig\na,x,0,10,1,\na,y,0,10,1,1g.10gb\n", 3, "row: "),
    # Found after reading: the policy has no team z, job x appears twice, no such priority.
    ("team,name,at,duration,gpus\na,x,0,10,1\n\nz,y,0,10,1\n", 4, "unknown team 'z'"),
    ("team,name,at,duration,gpus\na,x,0,10,1\na,x,5,10,1\n", 3, "appears twice"),
    ("team,name,at,duration,gpus,priority\na,x,0,10,1,urgent\n", 2, "unknown priority 'urgent'"),
    ("team,name,at,duration,mig\na,x,0,10,1g.10gb\n", 2, "MIG profile '1g.10gb' is on no MIG pool team 'a'"),
    # Lines, not rows: a quoted cell may hold a line break; a lone CR ends a line too.
    ('team,name,at,duration,gpus\na,x,0,10,"1\n"\nz,y,0,10,1\n', 4, "unknown team 'z'"),
    ("team,name,at,duration,gpus\ra,x,0,10,1\rz,y,0,10,1\r", 3, "unknown team 'z'"),
    ("team,name,at,duration\na," + "n" * 140_000 + ",0,10\n", 2, "cannot read this CSV: field larger"),
    ("team,name,at,duration,gpus,gpus\na,x,0,10,1,2\n", 1, "names the column 'gpus' twice"),
    ("team,name,at,duration\na,x,2026-W48-1T09:00:00Z,10\n", 2, "is neither seconds from the start nor an RFC 3339"),
    ("team,name,at,duration\na,x,0,10000000000000000000000\n", 2, "duration: 10000000000000000000000 is out of range"),
    ("team,name,at,duration\na,x,0,\u0661\u0662\n", 2, "is not a whole number"),
])
def test_bad_csv_rows_name_file_and_line(policies, tmp_path, body, line, words):
    trace = tmp_path / "jobs.csv"
    trace.write_text(body)
    result = run_cli("simulate", str(policies), "--trace", str(trace))
    assert result.returncode == 1
    assert f"jobs.csv:{line}:" in result.stderr and words in result.stderr
    assert "Traceback" not in result.stderr


def test_a_yaml_trace_job_of_an_unknown_team_is_named_by_its_line(policies, tmp_path):
    trace = tmp_path / "jobs.yaml"
    trace.write_text("jobs:\n  - {team: a, name: x, duration: 10, gpus: 1}\n"
                     "  - team: nobody\n    name: y\n    duration: 10\n    gpus: 1\n")
    result = run_cli("simulate", str(policies), "--trace", str(trace))
    assert result.returncode == 1
    assert "jobs.yaml:3:" in result.stderr and "unknown team 'nobody'" in result.stderr


def test_a_kueue_export_becomes_a_trace_and_unknown_teams_are_reported(policies, tmp_path):
    items = [exported("job-1", "a", "2026-11-30T08:00:00Z", "2026-11-30T08:05:00Z", "2026-11-30T09:05:00Z"),
             exported("job-2", "a-eval", "2026-11-30T08:10:00Z", "2026-11-30T08:10:00Z", "2026-11-30T08:40:00Z",
                      gpus=1, count=1),
             exported("job-3", "b", "2026-11-30T08:20:00Z", "2026-11-30T08:20:00Z", None, gpus=8, count=1),
             exported("stray", "team-x", "2026-11-30T08:00:00Z", "2026-11-30T08:00:00Z", "2026-11-30T09:00:00Z"),
             exported("waiting", "b", "2026-11-30T08:30:00Z"),
             {**exported("empty", "a", "2026-11-30T08:00:00Z", "2026-11-30T08:00:00Z", "2026-11-30T08:10:00Z"),
              "spec": {"queueName": "default", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                  "containers": [{"name": "c"}]}}}]}}]
    trace = tmp_path / "export.yaml"
    trace.write_text(export_text(items))
    summary = simulate_json(policies, trace)
    jobs = {j["name"]: j for j in summary["jobs"]}
    assert set(jobs) == {"job-1", "job-2", "job-3"}
    assert (jobs["job-1"]["team"], jobs["job-2"]["team"], jobs["job-3"]["team"]) == ("a", "a", "b")
    assert jobs["job-1"]["submitted"] == 0 and jobs["job-2"]["submitted"] == 600
    # Run time from admission to finish; a job still running runs until the export's last moment.
    assert jobs["job-1"]["finished"] - jobs["job-1"]["started"] == 3600
    assert jobs["job-3"]["finished"] - jobs["job-3"]["started"] == 3900 - 1200
    assert summary["notes"]["unknownTeams"] == {"team-x": 1}
    assert sorted(s["code"] for s in summary["notes"]["skipped"]) == ["KP910", "KP912"]
    text = run_cli("simulate", str(policies), "--trace", str(trace))
    assert text.returncode == 0
    assert "namespace 'team-x' belong to no team" in text.stderr and "b/waiting was never admitted" in text.stderr
    assert "a/empty requests no GPU, MIG instance, cpu or memory" in text.stderr



def _export_items():
    return [exported("job-1", "a", "2026-11-30T08:00:00Z", "2026-11-30T08:05:00Z", "2026-11-30T09:05:00Z"),
            exported("job-3", "b", "2026-11-30T08:20:00Z", "2026-11-30T08:20:00Z", None, gpus=8, count=1),
            exported("stray", "team-x", "2026-11-30T08:00:00Z", "2026-11-30T08:00:00Z", "2026-11-30T09:00:00Z"),
            exported("waiting", "b", "2026-11-30T08:30:00Z")]


def _same_run(policies, trace):
    """`simulate --format json` of a trace file, its path (and a note's line, which only a YAML
    export gives: a JSON one is read whole, every item at the file's position) left out."""
    text = run_cli("simulate", str(policies), "--trace", str(trace), "--format", "json")
    assert text.returncode == 0, text.stderr
    summary = json.loads(text.stdout.replace(str(trace), "TRACE"))
    for note in summary["notes"]["skipped"]:
        assert note["at"].startswith("TRACE")
        note["at"] = "TRACE"
    return summary


@pytest.mark.parametrize("indent", [4, None])
def test_a_kueue_export_in_json_reads_as_the_same_export_in_yaml(policies, tmp_path, indent):
    """`kubectl get workloads -A -o json` (a List, keys sorted, its `kind` last) and one Workload
    (`kubectl get workload NAME -o json`): the same jobs and notes as the YAML export."""
    items = _export_items()
    as_yaml, as_json = tmp_path / "export.yaml", tmp_path / "export.json"
    as_yaml.write_text(export_text(items))
    as_json.write_text(json.dumps({"apiVersion": "v1", "items": items, "kind": "List",
                                   "metadata": {"resourceVersion": ""}}, indent=indent, sort_keys=True))
    expected = _same_run(policies, as_yaml)
    assert expected["run"]["jobs"] == 2 and expected["notes"]["unknownTeams"] == {"team-x": 1}
    assert [note["code"] for note in expected["notes"]["skipped"]] == ["KP912"]
    assert _same_run(policies, as_json) == expected
    with_bom = tmp_path / "export-bom.json"   # (PowerShell's `Out-File -Encoding utf8` writes one)
    with_bom.write_bytes(b"\xef\xbb\xbf" + as_json.read_bytes())
    assert _same_run(policies, with_bom) == expected
    one_yaml, one_json = tmp_path / "one.yaml", tmp_path / "one.json"
    one_yaml.write_text("".join(f"{key}: {json.dumps(value)}\n" for key, value in items[0].items()))
    one_json.write_text(json.dumps(items[0], indent=indent))
    assert _same_run(policies, one_json) == _same_run(policies, one_yaml)
    assert _same_run(policies, one_json)["run"]["jobs"] == 1


def test_a_jobs_trace_in_json_is_still_a_jobs_trace(policies, tmp_path):
    """Only a top-level `kind` of List or Workload makes a JSON file an export: a `jobs` trace
    written as JSON keeps the trace reader, its limits and its positions."""
    trace = tmp_path / "jobs.json"
    trace.write_text(json.dumps({"jobs": [{"name": "one", "team": "a", "at": 0, "duration": 60, "gpus": 1,
                                           "labels": {"kind": "List"}}]}, indent=4))
    result = run_cli("simulate", str(policies), "--trace", str(trace))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"{trace}:9:13: error[KP204]: unknown field 'labels'" in result.stderr, result.stderr


def test_trace_synth_is_seeded_and_drawn_from_declared_workloads(policies, tmp_path):
    first = run_cli("trace", "synth", str(policies), "--jobs", "40", "--seed", "7", "--rate", "30")
    again = run_cli("trace", "synth", str(policies), "--jobs", "40", "--seed", "7", "--rate", "30")
    other = run_cli("trace", "synth", str(policies), "--jobs", "40", "--seed", "8", "--rate", "30")
    assert first.returncode == 0, first.stderr
    assert first.stdout == again.stdout and first.stdout != other.stdout
    trace = tmp_path / "synth.yaml"
    trace.write_text(first.stdout)
    summary = simulate_json(policies, trace)
    assert len(summary["jobs"]) == 40
    assert {j["name"].rsplit("-", 1)[0] for j in summary["jobs"]} <= {"train", "eval", "big"}
    csv_out = tmp_path / "synth.csv"
    written = run_cli("trace", "synth", str(policies), "--jobs", "40", "--seed", "7", "--rate", "30",
                      "--distribution", "lognormal", "--out", str(csv_out))
    assert written.returncode == 0 and csv_out.read_text().startswith("team,name,at,duration,")
    assert len(simulate_json(policies, csv_out)["jobs"]) == 40


def test_trace_synth_needs_declared_workloads(tmp_path):
    files = {"cluster.yaml": CLUSTER, "a.yaml": team("a", "namespaces: [a]\ngpus: {guaranteed: 8}")}
    result = run_cli("trace", "synth", str(write_policy(tmp_path, files)))
    assert result.returncode == 1 and "KP910" in result.stderr and "spec.workloads" in result.stderr


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@e", "HOME": str(repo), "PATH": "/usr/bin:/bin"})


def test_compare_runs_the_same_trace_through_the_policy_at_a_revision(policies, tmp_path):
    repo = tmp_path
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "policies")
    git(repo, "commit", "-q", "-m", "policy")
    trace = tmp_path / "jobs.yaml"
    trace.write_text("jobs:\n"
                     "  - {name: one, team: a, at: 0, duration: 3600, replicas: 2, gpus: 8}\n"
                     "  - {name: two, team: b, at: 600, duration: 3600, replicas: 1, gpus: 8}\n")
    # The working tree gives b less quota: a keeps b's GPUs, b waits for them.
    (policies / "b.yaml").write_text((policies / "b.yaml").read_text().replace("guaranteed: 8", "guaranteed: 0"))
    (policies / "a.yaml").write_text((policies / "a.yaml").read_text().replace("guaranteed: 8", "guaranteed: 16"))
    result = run_cli("simulate", str(policies), "--trace", str(trace), "--compare", "HEAD", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "b p95 wait 0 s -> 50.0 min (worse)" in result.stdout
    data = json.loads(run_cli("simulate", str(policies), "--trace", str(trace), "--compare", "HEAD",
                              "--format", "json", cwd=repo).stdout)
    change = next(c for c in data["changes"] if c["team"] == "b" and c["metric"] == "p95 wait")
    assert (change["before"], change["after"], change["worse"]) == (0, 3000, True)
    missing = run_cli("simulate", str(policies), "--trace", str(trace), "--compare", "no-such-rev", cwd=repo)
    assert missing.returncode == 1 and "KP802" in missing.stderr
    # The two runs go side by side on two CPUs: the answer is the one of one run after the other.
    one_after_the_other = run_cli("simulate", str(policies), "--trace", str(trace), "--compare", "HEAD",
                                  "--format", "json", cwd=repo, env={"KUEUE_POLICY_WORKERS": "1"}).stdout
    assert json.loads(one_after_the_other) == data


def test_compare_names_a_trace_mistake_of_the_revision(policies, tmp_path):
    """The revision's run meets the error (its policy has no team c): it is reported as when the
    runs went one after the other, though the working tree's run went well."""
    repo = tmp_path
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "policies")
    git(repo, "commit", "-q", "-m", "policy")
    (policies / "c.yaml").write_text(team("c", "namespaces: [c]\ngpus: {guaranteed: 0}\ncapacity: on-demand-only"))
    trace = tmp_path / "jobs.yaml"
    trace.write_text("jobs:\n  - {name: one, team: c, at: 0, duration: 60, replicas: 1, gpus: 1}\n")
    assert run_cli("simulate", str(policies), "--trace", str(trace)).returncode == 0
    for workers in ("1", "2"):
        result = run_cli("simulate", str(policies), "--trace", str(trace), "--compare", "HEAD", cwd=repo,
                         env={"KUEUE_POLICY_WORKERS": workers})
        assert result.returncode == 1, workers
        assert "jobs.yaml:2" in result.stderr and "unknown team 'c'" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_leading_zeros_are_a_number_not_a_long_one(policies, tmp_path):
    trace = tmp_path / "jobs.csv"
    trace.write_text("team,name,at,duration,gpus\na,x,0000000000000,0000000000060,1\n")
    assert simulate_json(policies, trace)["jobs"][0]["finished"] == 60


def test_a_yaml_trace_may_be_larger_than_a_policy_file(policies, tmp_path):
    """Policy files are refused above 8 MiB; a trace of 100,000 jobs is about 10 MB of YAML."""
    trace = tmp_path / "jobs.yaml"
    trace.write_text("jobs:\n  - {name: one, team: a, at: 0, duration: 60, gpus: 1}\n" + ("# padding\n" * 900_000))
    assert trace.stat().st_size > 8 * 1024 * 1024
    assert simulate_json(policies, trace)["run"]["jobs"] == 1


@pytest.mark.parametrize("body, words", [
    # A tag whose value does not convert: reported, in the reader's words, at its line.
    ("jobs:\n  - {name: one, team: a, at: !!int abc, duration: 60, gpus: 1}\n", "jobs.yaml:2:"),
    ("jobs:\n  - {name: one, team: a, at: 0, duration: !!float abc, gpus: 1}\n", "jobs.yaml:2:"),
    # A control character is named by its line and column, and is no "tab".
    ("jobs:\n  - {name: o\x00ne, team: a, at: 0, duration: 60, gpus: 1}\n", "jobs.yaml:2:13: error[KP101]: "
     "YAML syntax error: character U+0000 is not allowed in YAML"),
])
def test_yaml_that_the_reader_refuses_is_named_without_a_traceback(policies, tmp_path, body, words):
    trace = tmp_path / "jobs.yaml"
    trace.write_text(body)
    result = run_cli("simulate", str(policies), "--trace", str(trace))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert words in result.stderr, result.stderr
    assert "tab character" not in result.stderr


def test_a_large_export_is_read_as_an_export(policies, tmp_path):
    """`kubectl get -o yaml` sorts keys: a List's `kind:` is its last line, past any fixed-size
    head of a large export."""
    items = [f"""- apiVersion: kueue.x-k8s.io/v1beta2
  kind: Workload
  metadata: {{creationTimestamp: "2026-11-30T09:{i // 60:02d}:{i % 60:02d}Z", name: w{i}, namespace: a}}
  spec:
    podSets:
    - count: 1
      name: main
      template: {{spec: {{containers: [{{name: c, resources: {{requests: {{nvidia.com/gpu: "1"}}}}}}]}}}}
  status:
    conditions:
    - {{lastTransitionTime: "2026-11-30T09:{i // 60:02d}:{i % 60:02d}Z", status: "True", type: QuotaReserved}}
""" for i in range(300)]
    export = tmp_path / "workloads.yaml"
    export.write_text("apiVersion: v1\nitems:\n" + "".join(items) + "kind: List\nmetadata: {resourceVersion: ''}\n")
    assert export.stat().st_size > 65536
    assert simulate_json(policies, export)["run"]["jobs"] == 300


@pytest.mark.parametrize("options, words", [
    (["--rate", "nan"], "is not a number"),
    (["--duration", "nan"], "is not a number"),
    (["--distribution", "lognormal", "--sigma", "nan"], "is not a number"),
    (["--duration", "inf"], "--duration"),
    (["--rate", "0.001", "--jobs", "5000"], "raise --rate or lower --jobs"),
])
def test_trace_synth_refuses_options_simulate_could_not_read(policies, options, words):
    result = run_cli("trace", "synth", str(policies), *options)
    assert result.returncode in (1, 2) and "Traceback" not in result.stderr
    assert words in result.stderr, result.stderr


def test_trace_synth_cuts_long_tailed_runs_at_what_simulate_reads(policies, tmp_path):
    out = tmp_path / "synth.csv"
    result = run_cli("trace", "synth", str(policies), "--jobs", "50", "--duration", "900000000",
                     "--distribution", "lognormal", "--sigma", "3", "--out", str(out))
    assert result.returncode == 0, result.stderr
    durations = [int(line.split(",")[3]) for line in out.read_text().splitlines()[1:]]
    assert max(durations) == 10**9  # the long tail reaches the bound and stops there
    assert run_cli("simulate", str(policies), "--trace", str(out)).returncode == 0
