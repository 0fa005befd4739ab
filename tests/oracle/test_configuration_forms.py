"""Both engines read the Kueue Configuration in every form (bare, ConfigMap, Helm values) and
agree on the result; both stop on one they cannot read, naming file and line. The fair-sharing
scenario decides differently with and without its Configuration (the positive control)."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml as pyyaml

from kp_testing import REPO_ROOT, run_cli

FAIR = REPO_ROOT / "tests" / "evaluator" / "scenarios" / "fair-sharing-preemption.yaml"


def run_oracle(oracle_bin, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(oracle_bin), *args], capture_output=True, text=True, timeout=300, check=False)


def _wrapped(form: str, configuration: dict) -> dict:
    text = pyyaml.safe_dump(configuration, sort_keys=False)
    if form == "configmap":
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
                "data": {"controller_manager_config.yaml": text}}
    return {"managerConfig": {"controllerManagerConfigYaml": text}}


def _inputs(tmp_path, form: str | None):
    """The scenario's objects without its Configuration, and the Configuration in `form`."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    scenario = pyyaml.safe_load(FAIR.read_text())
    assert not scenario.get("include")
    objects = scenario["objects"]
    for obj in objects:
        # Without fair sharing, classical reclaim takes the lowest priority first: b1, and only b1
        # (b1 and c1 tied otherwise, and a tie is no control). Fair sharing takes c1 whatever its
        # priority: its queue's share is the highest.
        if obj.get("kind") == "Workload" and obj["metadata"]["name"] == "c1":
            obj["spec"]["priority"] = 10
    (configuration,) = [o for o in objects if o.get("kind") == "Configuration"]
    rest = [o for o in objects if o.get("kind") != "Configuration"]
    world = tmp_path / "world.yaml"
    world.write_text(pyyaml.safe_dump_all(rest, sort_keys=False))
    files = [str(world)]
    if form is not None:
        config = tmp_path / f"{form}.yaml"
        config.write_text(pyyaml.safe_dump(configuration if form == "bare" else _wrapped(form, configuration),
                                           sort_keys=False))
        files.append(str(config))
    return files


def _both(oracle_bin, files):
    python = run_cli("evaluate", "--cycles", "1", *files, "--format", "json")
    assert python.returncode == 0, python.stderr
    kueue = run_oracle(oracle_bin, "--cycles", "1", *files)
    assert kueue.returncode == 0, kueue.stderr
    strip = lambda payload: {w["name"]: (w["status"], w["preemptedBy"]) for w in payload["workloads"]}
    return strip(json.loads(python.stdout)), strip(json.loads(kueue.stdout))


def test_every_form_gives_the_bare_configurations_decisions_in_both_engines(oracle_bin, tmp_path):
    results = {}
    for form in ("bare", "configmap", "helm", None):
        results[form] = _both(oracle_bin, _inputs(tmp_path / str(form), form))
    for form in ("bare", "configmap", "helm", None):
        python, kueue = results[form]
        assert python == kueue, (form, python, kueue)
        assert results[form] == results["bare"] or form is None
    assert results["bare"][0]["c/c1"] == ("preempted", "a/a1")
    assert results[None][0]["b/b1"] == ("preempted", "a/a1")   # without its Configuration


@pytest.mark.parametrize("text, line", [
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kueue-manager-config}\ndata:\n"
     "  controller_manager_config.yaml: |\n    kind: Configuration\n    fairSharing: {]\n", 7),
    ("managerConfig:\n  controllerManagerConfigYaml: \"just text\"\n", 1),
], ids=["configmap-yaml", "helm-not-a-configuration"])
def test_both_engines_stop_on_an_unreadable_configuration(oracle_bin, tmp_path, text, line):
    bad = tmp_path / "config.yaml"
    bad.write_text(text)
    files = _inputs(tmp_path, None) + [str(bad)]
    python = run_cli("evaluate", *files)
    kueue = run_oracle(oracle_bin, *files)
    for done in (python, kueue):
        assert done.returncode == 1, done.stderr
        assert f"{bad}:" in done.stderr and "Kueue Configuration" in done.stderr, done.stderr
    assert f"{bad}:{line}:" in python.stderr, python.stderr
