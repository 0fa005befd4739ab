"""The differential test: random valid Kueue worlds through the Python engine and Kueue's own
scheduler (kueue-oracle), and the generator, validity check and shrinker it stands on."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from differential.engines import OracleEngine, perturbed_engine, python_engine
from differential.harness import (
    compare, disagreeing_worlds, generated, kueue_varies_and_once_agrees, run_world, shrink, shrink_with,
)
from differential.validity import problems
from differential.worlds import dump, world, world_yaml
from kp_testing import REPO_ROOT

ORACLE = Path(os.environ.get("KUEUE_ORACLE", REPO_ROOT / "oracle" / "bin" / "kueue-oracle"))
# A fixed slice: about two minutes with two worker processes on this project's 2-core machines.
CI_SEED, CI_WORLDS = 20261201, 200


def _kinds(objects: list[dict]) -> Counter:
    return Counter(o["kind"] for o in objects)


# ---- generator -------------------------------------------------------------------------------
def test_generated_worlds_are_valid_and_load_without_warnings() -> None:
    for index in range(80):
        objects = world(11, index)
        assert problems(objects) == [], (index, problems(objects))
        python_engine(dump(objects))  # raises InvalidWorld if the loader skipped anything


def test_same_seed_same_bytes_in_another_process() -> None:
    here = [hashlib.sha256(world_yaml(5, i).encode()).hexdigest() for i in range(5)]
    code = ("import hashlib; from differential.worlds import world_yaml; "
            "print([hashlib.sha256(world_yaml(5, i).encode()).hexdigest() for i in range(5)])")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "tests"), "PYTHONHASHSEED": "12345"}
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert other.stdout.strip() == str(here)
    assert len(set(here)) == 5
    assert world_yaml(5, 0) != world_yaml(6, 0)


def test_generator_covers_every_feature_the_brief_names() -> None:
    seen: Counter = Counter()
    statuses: Counter = Counter()
    for index in range(250):
        objects = world(3, index)
        text = dump(objects)
        cohorts = {o["metadata"]["name"]: (o.get("spec") or {}) for o in objects if o["kind"] == "Cohort"}
        for name, spec in cohorts.items():
            parent = spec.get("parentName")
            if parent and (cohorts.get(parent) or {}).get("parentName"):
                seen["three-level cohort tree"] += 1
            if spec.get("resourceGroups"):
                seen["cohort with quota"] += 1
        for o in objects:
            spec = o.get("spec") or {}
            if o["kind"] == "ClusterQueue":
                seen["several resource groups"] += len(spec["resourceGroups"]) > 1
                pre = spec.get("preemption") or {}
                for key in ("withinClusterQueue", "reclaimWithinCohort"):
                    seen[f"{key}={pre.get(key)}"] += 1
                seen[f"borrowWithinCohort={(pre.get('borrowWithinCohort') or {}).get('policy')}"] += 1
                seen["maxPriorityThreshold"] += "maxPriorityThreshold" in str(pre)
                seen[f"queueing={spec.get('queueingStrategy')}"] += 1
            if o["kind"] == "Workload":
                seen["several pod sets"] += len(spec["podSets"]) > 1
                seen["misrouted workload"] += o["metadata"]["name"] == "wl-misrouted"
                seen["reclaimer behind it"] += o["metadata"]["name"] == "wl-reclaimer"
                seen["admitted"] += "status" in o
                seen["pending"] += "status" not in o
        for word in ("borrowingLimit", "lendingLimit", "minCount", "nodeSelector", "tolerations", "nodeTaints",
                     "fairSharing", "priorityClassRef", "weight", "matchLabels", "matchExpressions"):
            seen[word] += word in text
        statuses.update(w["status"] for w in python_engine(text)["workloads"])
    wanted = ["three-level cohort tree", "cohort with quota", "several resource groups", "maxPriorityThreshold",
              "several pod sets", "admitted", "pending", "borrowingLimit", "lendingLimit", "minCount",
              "nodeSelector", "tolerations", "nodeTaints", "fairSharing", "priorityClassRef", "weight",
              "queueing=StrictFIFO", "queueing=BestEffortFIFO", "borrowWithinCohort=LowerPriority",
              "matchLabels", "matchExpressions", "misrouted workload", "reclaimer behind it"]
    wanted += [f"withinClusterQueue={p}" for p in ("Never", "LowerPriority", "LowerOrNewerEqualPriority")]
    wanted += [f"reclaimWithinCohort={p}" for p in ("Never", "LowerPriority", "Any")]
    assert [w for w in wanted if not seen[w]] == []
    assert {"admitted", "running", "pending", "inadmissible", "preempted"} <= set(statuses)


def _first(objects: list[dict], kind: str, where=lambda o: True) -> dict:
    return next(o for o in objects if o["kind"] == kind and where(o))


def test_validity_refuses_what_kueue_would_refuse() -> None:
    base = next(w for w in (world(4, i) for i in range(200))
                if any(o["kind"] == "Workload" and "status" in o for o in w)
                and any("lendingLimit" in str(o) for o in w if o["kind"] == "ClusterQueue"))
    assert problems(base) == []

    too_much_lent = copy.deepcopy(base)
    queue = _first(too_much_lent, "ClusterQueue", lambda o: "lendingLimit" in str(o))
    for group in queue["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for res in flavor["resources"]:
                if "lendingLimit" in res:
                    res["lendingLimit"] = "999"
    assert any("lendingLimit" in p or "nominalQuota" in p for p in problems(too_much_lent))

    over_quota = copy.deepcopy(base)
    admitted = _first(over_quota, "Workload", lambda o: "status" in o)
    psa = admitted["status"]["admission"]["podSetAssignments"][0]
    podset = next(p for p in admitted["spec"]["podSets"] if p["name"] == psa["name"])
    podset["count"] = psa["count"] = 1000
    podset.pop("minCount", None)
    psa["resourceUsage"] = {r: str(int(v.rstrip("Gim") or 0) * 1000) + v[len(v.rstrip("Gim")):]
                            for r, v in psa["resourceUsage"].items()}
    assert any("above" in p for p in problems(over_quota)), problems(over_quota)

    stale_usage = copy.deepcopy(base)
    psa = _first(stale_usage, "Workload", lambda o: "status" in o)["status"]["admission"]["podSetAssignments"][0]
    psa["resourceUsage"] = {r: "0" for r in psa["resourceUsage"]}
    assert any("resourceUsage" in p for p in problems(stale_usage))

    two_min = copy.deepcopy(base)
    wl = _first(two_min, "Workload")
    wl["spec"]["podSets"] = [dict(copy.deepcopy(wl["spec"]["podSets"][0]), name=n, count=2, minCount=1)
                             for n in ("a", "b")]
    assert any("at most one podSet can use minCount" in p for p in problems(two_min))


# ---- harness and shrinker --------------------------------------------------------------------
def test_an_engine_agrees_with_itself() -> None:
    for index in range(40):
        outcome = run_world(world_yaml(8, index), python_engine, python_engine)
        assert outcome.agree, outcome.differences


def test_compare_names_each_compared_field_and_ignores_reasons() -> None:
    a = {"workloads": [{"name": "ns/w", "status": "admitted", "assignment": {"main": {"cpu": "x"}},
                        "count": {"main": 2}, "preemptedBy": None, "reason": "one"}]}
    b = copy.deepcopy(a)
    b["workloads"][0]["reason"] = "another"
    assert compare(a, b) == []
    b["workloads"][0].update(status="pending", count={"main": 1})
    assert compare(a, b) == ["ns/w: status python='admitted' kueue='pending'",
                             "ns/w: count python={'main': 2} kueue={'main': 1}"]
    assert compare(a, {"workloads": []}) == ["ns/w: only in python"]


def test_planted_disagreement_shrinks_to_a_small_valid_world() -> None:
    perturbed = perturbed_engine("ignore-borrowing-limit")
    index = next(i for i in range(200) if not run_world(world_yaml(1, i), python_engine, perturbed).agree)
    original = world(1, index)
    minimal = shrink(original, python_engine, perturbed, budget_seconds=120)
    assert problems(minimal) == []
    assert not run_world(dump(minimal), python_engine, perturbed).agree
    assert len(minimal) <= 10 < len(original) or len(minimal) * 2 <= len(original), _kinds(minimal)
    # the planted change is about borrowing limits: the minimal world keeps exactly that
    assert "borrowingLimit" in dump(minimal)
    assert _kinds(minimal)["Workload"] >= 1 and _kinds(minimal)["ClusterQueue"] >= 1


def test_shrinker_drops_fields_as_well_as_objects() -> None:
    original = world(2, 5)
    target = next(o["metadata"]["name"] for o in original if o["kind"] == "ClusterQueue")
    minimal = shrink_with(original, lambda objs: any(o["kind"] == "ClusterQueue" and
                                                     o["metadata"]["name"] == target for o in objs),
                          budget_seconds=60)
    assert _kinds(minimal) == Counter({"ClusterQueue": 1})
    # every optional field went too: only what makes it a ClusterQueue named target is left
    assert minimal[0]["metadata"] == {"name": target}
    assert not (minimal[0].get("spec") or {}).get("resourceGroups")


# ---- the command -----------------------------------------------------------------------------
def _run_module(*args: str, tmp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "tests")}
    return subprocess.run([sys.executable, "-m", "differential", *args, "--detail", str(tmp / "detail.json")],
                          capture_output=True, text=True, env=env, cwd=REPO_ROOT / "tests", timeout=600)


def test_command_reports_agreement_on_its_last_line(tmp_path: Path) -> None:
    done = _run_module("--seed", "3", "-n", "15", "--against", "python", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "differential: 15/15 worlds agree"
    assert not (tmp_path / "detail.json").exists()


def test_command_writes_shrunk_disagreements_to_the_file_it_names(tmp_path: Path) -> None:
    done = _run_module("--seed", "1", "-n", "12", "--against", "perturbed:ignore-borrowing-limit",
                       "--max-shrink", "1", "--shrink-seconds", "60", tmp=tmp_path)
    lines = done.stdout.splitlines()
    assert done.returncode == 1
    agree = int(lines[-1].split()[1].split("/")[0])
    assert lines[-1] == f"differential: {agree}/12 worlds agree" and agree < 12
    assert str(tmp_path / "detail.json") in done.stdout
    detail = json.loads((tmp_path / "detail.json").read_text())
    first = detail["disagreements"][0]
    assert first["minimalDifferences"] and "minimalWorld" in first and first["python"] and first["kueue"]
    assert (tmp_path / "detail" / f"world-{first['index']}.min.yaml").read_text() == first["minimalWorld"]


def test_make_target_names_the_build_command_when_the_oracle_is_absent(tmp_path: Path) -> None:
    done = subprocess.run(["make", "-s", "differential", "N=1", f"ORACLE={tmp_path / 'none'}"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "make oracle" in done.stderr


# ---- against Kueue itself ------------------------------------------------------------------
# Worlds of the fixed slice where the engines still disagree, each an open divergence of the
# Python engine that is not fixed yet (issue 8), with why: shrink one with `make differential`.
# None is open: every world of the slice agrees (the last ones were fixed with the scenarios
# eviction-of-a-queueless-workload-requeues-nothing, victim-is-back-for-the-next-cycle and the
# oracle's set-up requeue). Any disagreement fails; so would a listed world that agrees.
KNOWN_DIVERGENCES: dict[int, str] = {}


@pytest.mark.skipif(not ORACLE.is_file(), reason="kueue-oracle not built (go not on PATH)")
def test_python_engine_agrees_with_kueue_on_a_fixed_slice() -> None:
    found = {index: differences for index, differences in
             disagreeing_worlds(CI_SEED, range(CI_WORLDS), OracleEngine(ORACLE), jobs=2)}
    new = [f"world {CI_SEED}/{index}: " + "; ".join(differences[:3])
           for index, differences in sorted(found.items()) if index not in KNOWN_DIVERGENCES]
    assert new == [], (f"{len(new)} new disagreement(s) among {CI_WORLDS} worlds (reproduce and shrink with "
                       f"`make differential SEED={CI_SEED} N={CI_WORLDS}`):\n" + "\n".join(new[:20]))
    fixed = sorted(set(KNOWN_DIVERGENCES) - set(found))
    assert fixed == [], f"worlds {fixed} agree now: take them off KNOWN_DIVERGENCES"


# ---- Topology Aware Scheduling worlds through the whole engine ------------------------------
CI_TAS_SEED, CI_TAS_WORLDS = 31, 120


def test_tas_worlds_cover_what_the_engine_places() -> None:
    """The TAS worlds hold what the placement step meets: a second queue on the same nodes,
    short quota, a plain flavor beside the TAS one, running Workloads placed, every node state,
    and preemption (the victims' pods leave the nodes, the preemptor's must then be placeable)."""
    seen: Counter = Counter()
    for index in range(CI_TAS_WORLDS):
        objects = generated(CI_TAS_SEED, index, tas=True)
        kinds = Counter(o["kind"] for o in objects)
        seen["two queues"] += kinds["ClusterQueue"] > 1
        seen["plain flavor"] += kinds["ResourceFlavor"] > 1
        seen["running placed"] += any("topologyAssignment" in str(o.get("status")) for o in objects)
        queue = next(o for o in objects if o["kind"] == "ClusterQueue")
        seen["short quota"] += queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"] < 100000
        nodes = [o for o in objects if o["kind"] == "Node"]
        seen["unschedulable"] += any(n["spec"].get("unschedulable") for n in nodes)
        seen["not ready"] += any(n["status"]["conditions"][0]["status"] == "False" for n in nodes)
        seen["tainted"] += any(n["spec"].get("taints") for n in nodes)
        seen["preempting"] += "preemption" in queue["spec"]
        seen["cohort reclaim"] += "reclaimWithinCohort" in queue["spec"].get("preemption", {})
    assert min(seen.values()) >= 10 and len(seen) == 9, seen


@pytest.mark.skipif(not ORACLE.is_file(), reason="kueue-oracle not built (go not on PATH)")
def test_python_engine_agrees_with_kueue_on_tas_worlds() -> None:
    """Status, flavors, counts, topologyAssignment and Kueue's reason, byte for byte."""
    oracle = OracleEngine(ORACLE)
    found = {index: differences for index, differences in
             disagreeing_worlds(CI_TAS_SEED, range(CI_TAS_WORLDS), oracle, jobs=2, tas=True)}
    # Kueue's TAS is not deterministic on every world (Go map order where domains or victims
    # tie): a world counts as agreeing when Kueue itself answers it differently on reruns and
    # one of its answers is the engine's. Such worlds must stay rare.
    undecided = [index for index in found if kueue_varies_and_once_agrees(CI_TAS_SEED, index, oracle, True)]
    assert len(undecided) <= 2, f"Kueue answers {len(undecided)} TAS worlds differently run to run: {undecided}"
    new = [f"TAS world {CI_TAS_SEED}/{index}: " + "; ".join(differences[:3]) for index, differences in sorted(found.items())
           if index not in undecided]
    assert new == [], (f"{len(new)} disagreement(s) among {CI_TAS_WORLDS} TAS worlds (reproduce and shrink with "
                       f"`make differential TAS=1 SEED={CI_TAS_SEED} N={CI_TAS_WORLDS}`):\n" + "\n".join(new[:20]))
