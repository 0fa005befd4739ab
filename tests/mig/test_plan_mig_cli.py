"""`kueue-policy plan-mig` as users run it (a subprocess of the installed console script)."""

from __future__ import annotations

import json

from kp_testing import run_cli


def test_json_output():
    result = run_cli("plan-mig", "--gpu", "H100-80GB", "1g.10gb=9", "2g.20gb=4", "3g.40gb=3", "--format", "json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["gpus"] == 4 and payload["lowerBound"] == 4
    assert sum(l["count"] for l in payload["layouts"]) == 4
    assert all(set(l) >= {"count", "profiles"} for l in payload["layouts"])
    assert result.stderr == ""


def test_text_output_and_determinism():
    first = run_cli("plan-mig", "--gpu", "H100-80GB", "2g.20gb=3", "4g.40gb=2")
    second = run_cli("plan-mig", "--gpu", "H100-80GB", "4g.40gb=2", "2g.20gb=3")
    assert first.returncode == 0 and first.stdout == second.stdout
    assert "3 GPU(s), lower bound 3" in first.stdout


def test_demand_bigger_than_gpus():
    result = run_cli("plan-mig", "--gpu", "H100-80GB", "3g.40gb=5", "--gpus", "2", "--format", "json")
    assert result.returncode == 1
    assert "error[KP705]" in result.stderr and "only 2 available" in result.stderr
    payload = json.loads(result.stdout)
    assert payload["feasible"] is False and payload["gpus"] == 3


def test_bad_input():
    other_model = run_cli("plan-mig", "--gpu", "H100-80GB", "3g.20gb=1")
    assert other_model.returncode == 1
    assert "error[KP702]" in other_model.stderr and "A100-40GB" in other_model.stderr
    unknown_model = run_cli("plan-mig", "--gpu", "Q100", "1g.10gb=1")
    assert unknown_model.returncode == 1 and "error[KP701]" in unknown_model.stderr
    not_a_number = run_cli("plan-mig", "--gpu", "H100-80GB", "1g.10gb=two")
    assert not_a_number.returncode == 1 and "error[KP703]" in not_a_number.stderr
    usage = run_cli("plan-mig", "--gpu", "H100-80GB", "1g.10gb")
    assert usage.returncode == 2
    for result in (other_model, unknown_model, not_a_number, usage):
        assert "Traceback" not in result.stderr
        assert result.stdout == ""


def test_node_labels_and_mig_manager_config():
    result = run_cli("plan-mig", "--gpu", "H100-80GB", "3g.40gb=4", "4g.40gb=4", "--gpus", "16",
                     "--gpus-per-node", "4", "--format", "json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert {g["config"]: g["nodes"] for g in payload["nodes"]} == {"1x3g.40gb-1x4g.40gb": 1, "all-disabled": 3}
    assert payload["migManagerConfig"]["mig-configs"]["1x3g.40gb-1x4g.40gb"][0]["mig-devices"] == \
        {"3g.40gb": 1, "4g.40gb": 1}
