"""Quota stays typed from build to report, and the faster way build parses quota entries back
gives the objects the templates describe."""

from __future__ import annotations

from fractions import Fraction

from click.testing import CliRunner

from compiler.stages.build import ClusterBuilder, FlavorQuota, cpu_memory_with, format_amount
from compiler.cli import main
from compiler.stages.pipeline import PolicySource, compile_policy
from kp_testing.policies import CLUSTER, snapshot, team, write_policy
from kp_testing import REPO_ROOT

MIG_CLUSTER = CLUSTER.replace(
    "    - {name: spot, gpu: H100-80GB, nodes: 1, gpusPerNode: 8, capacity: spot}",
    "    - {name: spot, gpu: H100-80GB, nodes: 1, gpusPerNode: 8, capacity: spot}\n"
    "    - {name: slices, gpu: H100-80GB, nodes: 1, gpusPerNode: 8, capacity: on-demand, mig: planned}")


def _policy(tmp_path):
    teams = {f"teams/t{i}.yaml": team(f"t{i}", f"""
        cohort: research
        namespaces: [t{i}]
        gpus: {{guaranteed: {1 + i % 3}, burst: 4, lend: {i % 2}}}
        mig: {{1g.10gb: {i % 2}}}
        workloads:
          - {{name: w, replicas: 1, gpus: 1}}
        """) for i in range(6)}
    return write_policy(tmp_path, {"cluster.yaml": MIG_CLUSTER, **teams})


def _compiled(folder):
    return next(iter(compile_policy(PolicySource.from_directory(folder)).clusters.values()))


def test_quota_entries_parsed_apart_equal_the_whole_template(tmp_path):
    for folder in (REPO_ROOT / "policies", _policy(tmp_path)):
        artifacts = _compiled(folder)
        # The build alone (the pipeline adds the Kueue-configuration patches after it).
        fast = ClusterBuilder(artifacts.cluster, artifacts.placement).build()
        whole = ClusterBuilder(artifacts.cluster, artifacts.placement, whole_templates=True).build()
        assert [o.obj for o in fast.objects] == [o.obj for o in whole.objects]
        # Every object owns its quota entries: changing one changes no other object.
        queues = [o.obj for o in fast.objects if o.kind == "ClusterQueue"]
        first = queues[0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
        first["nominalQuota"] = "changed"
        assert all(q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] != "changed"
                   for q in queues[1:])


def test_build_result_quota_is_typed_and_matches_the_emitted_objects(tmp_path):
    artifacts = _compiled(_policy(tmp_path))
    built = ClusterBuilder(artifacts.cluster, artifacts.placement).build()
    by_name = {(o.kind, o.name): o.obj for o in built.objects}
    checked = 0
    for team_name, flavors in built.quota.items():
        groups = by_name[("ClusterQueue", team_name)]["spec"]["resourceGroups"]
        emitted = {(f["name"], r["name"]): r for g in groups for f in g["flavors"] for r in f["resources"]}
        for flavor, resources in flavors.items():
            for resource, quota in resources.items():
                assert isinstance(quota, FlavorQuota) and isinstance(quota.nominal, Fraction)
                entry = emitted[(flavor, resource)]
                assert entry["nominalQuota"] == format_amount(resource, quota.nominal)
                assert entry.get("borrowingLimit") == format_amount(resource, quota.borrowing_limit)
                assert entry.get("lendingLimit") == format_amount(resource, quota.lending_limit)
                checked += 1
    root = by_name[("Cohort", artifacts.cluster.root_cohort)]["spec"]["resourceGroups"][0]["flavors"]
    for flavor in root:
        for entry in flavor["resources"]:
            quota = built.root_quota[flavor["name"]].get(entry["name"])
            assert entry["nominalQuota"] == (format_amount(entry["name"], quota.nominal) if quota else "0")
    assert checked > 30


def test_cpu_and_memory_that_come_with_gpus_and_mig_instances(tmp_path):
    artifacts = _compiled(_policy(tmp_path))
    cluster = artifacts.cluster
    slices = cluster.pool("slices")
    # 16 cpu / 128Gi per GPU; a 1g.10gb instance is 1 of 7 compute slices, rounded up once per
    # instance (milli-CPU, whole MiB).
    assert cpu_memory_with(cluster, None, 2) == (Fraction(32), Fraction(256 * 2**30))
    one = (Fraction(2286, 1000), Fraction(18725 * 2**20))
    assert cpu_memory_with(cluster, slices, mig={"1g.10gb": 1}) == one
    assert cpu_memory_with(cluster, slices, 1, {"1g.10gb": 3}) == (16 + 3 * one[0], 128 * 2**30 + 3 * one[1])
    assert cpu_memory_with(cluster, None, mig={"1g.10gb": 1}) == (0, 0)  # no pool: no model to ask


def test_jobs_option_gives_the_same_files_in_one_process(tmp_path):
    folder = _policy(tmp_path)
    runner = CliRunner()
    for jobs in ("1", "2"):
        result = runner.invoke(main, ["compile", str(folder), "--out", str(tmp_path / f"out{jobs}"), "--jobs", jobs])
        assert result.exit_code == 0, result.output
    assert snapshot(tmp_path / "out1") == snapshot(tmp_path / "out2")
    refused = runner.invoke(main, ["check", str(folder), "--jobs", "0"])
    assert refused.exit_code == 2 and "--jobs" in refused.output
    assert not (tmp_path / "out0").exists()


def test_each_distinct_quota_is_rounded_and_formatted_once(tmp_path):
    from compiler.stages import build as build_module
    artifacts = _compiled(_policy(tmp_path))
    build_module._emitted_quota.cache_clear()
    build_module._quota_entry.cache_clear()
    built = ClusterBuilder(artifacts.cluster, artifacts.placement).build()
    stated = {(r["name"], r["nominalQuota"], r.get("borrowingLimit"), r.get("lendingLimit"))
              for o in built.objects if o.kind in ("ClusterQueue", "Cohort")
              for g in o.obj["spec"].get("resourceGroups", []) for f in g["flavors"] for r in f["resources"]}
    entries = build_module._quota_entry.cache_info()
    assert entries.hits > 0 and entries.misses <= len(stated)
    # Callers get their own copy of a shared entry.
    quota = FlavorQuota(Fraction(3, 2))
    quota.entry("cpu")["nominal"] = "changed"
    assert quota.entry("cpu")["nominal"] == "1500m"
