"""The answer of `capacity` as data (the JSON document) and as tables.

The JSON document is the one source: the tables and the HTML page are drawn from it. Every
figure in it is a field of one candidate's simulation (compiler/capacity/evaluate.py).
"""

from __future__ import annotations

import hashlib
from collections import Counter

from compiler.capacity.candidate import Candidate
from compiler.capacity.evaluate import Evaluation
from compiler.core.resources import MIG_PREFIX
from compiler.capacity.search import Answer
from compiler.capacity.space import Space
from compiler.simulate.compare import human_duration

# Teams whose guarantees a label lists when two candidates' labels would be the same (else a fingerprint).
MAX_TEAMS_SHOWN = 8


def _pool_rows(space: Space, evaluation: Evaluation, baseline: Evaluation, costs: dict[str, float],
               cut: dict[str, str]) -> list[dict]:
    used, instances = {}, {}
    for row in evaluation.pools:
        if row["resource"] == "nvidia.com/gpu":
            entry = used.setdefault(row["pool"], {"usedHours": 0.0, "idleHours": 0.0})
            entry["usedHours"] += row["usedHours"]
            entry["idleHours"] += row["idleHours"]
        elif row["resource"].startswith(MIG_PREFIX):   # a MIG pool: instance-hours per profile
            instances.setdefault(row["pool"], {})[row["resource"].removeprefix(MIG_PREFIX)] = {
                "usedHours": row["usedHours"], "idleHours": row["idleHours"], "capacity": row["capacity"]}
    rows = []
    nodes, before = dict(evaluation.candidate.nodes), dict(baseline.candidate.nodes)
    for pool in space.pools:
        mig = pool.cut_in(cut)
        profiles = instances.get(pool.name, {})
        figures = used.get(pool.name) or _gpu_hours_of_instances(pool.gpu, profiles, evaluation.gpus[pool.name])
        rows.append({"pool": pool.name, "nodesBefore": before[pool.name], "nodes": nodes[pool.name],
                     "gpusPerNode": pool.gpus_per_node, "gpus": evaluation.gpus[pool.name],
                     "costPerGpuHour": costs[pool.name],
                     "costPerHour": round(evaluation.gpus[pool.name] * costs[pool.name], 6),
                     "mig": mig, "migLayouts": evaluation.mig_layouts.get(pool.name, []),
                     "usedGpuHours": round(figures["usedHours"], 3), "idleGpuHours": round(figures["idleHours"], 3),
                     "migInstanceHours": {name: {"usedHours": hours["usedHours"], "idleHours": hours["idleHours"]}
                                          for name, hours in profiles.items()},
                     "fixed": not pool.movable})
    return rows


def _gpu_hours_of_instances(model_name: str, profiles: dict[str, dict], gpus: int) -> dict[str, float]:
    """A MIG pool's figures in GPU-hours, to compare with a whole-GPU pool's: a running instance
    counts for its share of the GPU's memory slices (the slices a layout fills: a 3g.40gb instance
    is half an H100, two 1g.20gb beside it the other half), and idle is the rest of the pool's
    GPU-hours, slices no instance holds among them."""
    from compiler.mig.catalogue import load_catalogue

    model = load_catalogue().model(model_name) if profiles else None
    spans = [(hours["usedHours"] + hours["idleHours"]) / hours["capacity"]
             for hours in profiles.values() if hours["capacity"]]
    if model is None or not spans:
        return {"usedHours": 0.0, "idleHours": 0.0}
    used = sum(hours["usedHours"] * model.profiles[name].memory_slices / model.memory_slices
               for name, hours in sorted(profiles.items()) if name in model.profiles)
    return {"usedHours": used, "idleHours": max(gpus * max(spans) - used, 0.0)}


def _hours_text(team: dict) -> str:
    """A team's whole-GPU hours, and its MIG instance-hours beside them (instances of different
    profiles, and of pools of different models, are not GPUs of one size)."""
    instances = sum(team["migInstanceHours"].values())
    return f"{team['gpuHours']:,.1f}" + (f" + {instances:,.1f} MIG instance-h" if instances else "")


def _team_rows(evaluation: Evaluation, baseline: Evaluation) -> list[dict]:
    before = {t["team"]: t for t in baseline.teams}
    rows = []
    for team in evaluation.teams:
        old = before.get(team["team"], {})
        quota, old_quota = evaluation.quotas.get(team["team"], {}), baseline.quotas.get(team["team"], {})
        rows.append({"team": team["team"], "jobs": team["jobs"],
                     "guaranteedBefore": old_quota.get("guaranteed"), "guaranteed": quota.get("guaranteed"),
                     "burstBefore": old_quota.get("burst"), "burst": quota.get("burst"), "lend": quota.get("lend"),
                     "migBefore": old_quota.get("mig", {}), "mig": quota.get("mig", {}),
                     "waitBefore": old.get("wait"), "wait": team["wait"],
                     "neverStartedBefore": old.get("neverStarted"), "neverStarted": team["neverStarted"],
                     "gpuHours": team["gpuHours"], "migInstanceHours": team["migInstanceHours"],
                     "preemptionsSuffered": team["preemptionsSuffered"]})
    return rows


def _point(evaluation: Evaluation, label: str, is_answer: bool) -> dict:
    return {"candidate": label, "answer": is_answer, "cost": evaluation.cost, "meets": evaluation.meets,
            "worstP95Wait": evaluation.worst_wait, "misses": evaluation.misses, "measured": evaluation.measured,
            "stoppedAt": evaluation.stopped_at}


def _labels(evaluations: list[Evaluation]) -> dict[Candidate, str]:
    """Each candidate's label, made unique: two candidates with the same nodes and the same total
    guarantee (the descent from demand's guarantees and the one from the policy's, say) also
    show each team's guarantee, or a fingerprint of them when there are many teams."""
    plain = {e.candidate: e.candidate.label() for e in evaluations}
    counts = Counter(plain.values())
    labels = {}
    for candidate, label in plain.items():
        if counts[label] > 1 and candidate.quotas is not None:
            quotas = candidate.quotas
            if len(quotas) <= MAX_TEAMS_SHOWN:
                label += " (" + ", ".join(f"{q.team} {q.guaranteed}" for q in quotas) + ")"
            else:
                label += f" (guarantees #{hashlib.sha256(repr(quotas).encode()).hexdigest()[:6]})"
        labels[candidate] = label
    return labels


def _hours(evaluation: Evaluation) -> float:
    """The hours of a candidate's own run: its cost over the trace is over them (a smaller
    cluster's backlog runs longer)."""
    return evaluation.run.get("makespan", 0) / 3600.0 if evaluation.run else 0.0


def document(answer: Answer, space: Space, costs: dict[str, float], cluster: str, trace: str, targets: list[str],
             workers: int) -> dict:
    best = answer.best
    chosen = best.answer.candidate if best is not None and best.answer is not None else None
    labels = _labels([answer.baseline, *answer.evaluations, *(best.neighbours if chosen is not None else [])])
    result = {
        "cluster": cluster, "trace": trace, "targets": targets, "workers": workers,
        "evaluated": len(answer.evaluations),
        "baseline": {"candidate": labels[answer.baseline.candidate], "costPerHour": answer.baseline.cost,
                     "meets": answer.baseline.meets, "misses": answer.baseline.misses,
                     # (its own cut among those compared: else `--mig` kept it from competing)
                     "competes": () in space.cuts},
        "cuts": [{"mig": {p.name: p.cut_in(dict(r.cut)) for p in space.pools}, "costPerHour": r.answer.cost if r.answer else None,
                  "largestMeets": r.largest.meets, "largestMisses": r.largest.misses} for r in answer.cuts],
        "answer": None, "proof": [], "proofAcrossPools": None,
        "candidates": [_point(e, labels[e.candidate], e.candidate == chosen) for e in answer.evaluations],
    }
    if chosen is None:
        return result
    chosen = best.answer
    result["answer"] = {
        "candidate": labels[chosen.candidate], "costPerHour": chosen.cost,
        "costOverTrace": round(chosen.cost * _hours(chosen), 3),
        "costOverTraceBefore": round(answer.baseline.cost * _hours(answer.baseline), 3),
        "guarantees": best.guarantees_note,
        "pools": _pool_rows(space, chosen, answer.baseline, costs, dict(best.cut)),
        "teams": _team_rows(chosen, answer.baseline), "run": chosen.run, "measured": chosen.measured,
    }
    result["proof"] = [{"candidate": labels[n.candidate], "costPerHour": n.cost, "meets": n.meets,
                        "misses": n.misses} for n in best.neighbours]
    across = best.across
    result["proofAcrossPools"] = {"proved": across.proved, "checked": across.checked, "left": across.left,
                                  "everyCheaper": across.every_cheaper,
                                  # (what a proof short of every cheaper candidate rests on, said in the JSON too)
                                  "assumes": None if across.every_cheaper else MONOTONE_WAITS}
    return result


def _wait_text(wait: dict | None) -> str:
    if not wait:
        return "-"
    return f"{human_duration(wait['p50'])} / {human_duration(wait['p95'])} / {human_duration(wait['max'])}"


def _burst_text(before: int | None, after: int | None) -> str:
    def one(burst: int | None) -> str:
        return "unlimited" if burst is None else str(burst)

    return one(after) if before == after else f"{one(before)} -> {one(after)}"


def print_tables(data: dict, console) -> None:
    from rich.table import Table

    def say(text: str) -> None:   # (a line is never wrapped: a candidate's label stays whole, for grep)
        console.print(text, soft_wrap=True)

    answer = data["answer"]
    baseline = data["baseline"]
    say(f"{data['cluster']}: {data['evaluated']} candidates simulated on {data['workers']} worker(s); "
                  f"the policy as it is costs {baseline['costPerHour']:,.2f}/h and "
                  + ("meets every target" if baseline["meets"] else
                     "misses: " + "; ".join(baseline["misses"][:3])
                     + (f"; and {len(baseline['misses']) - 3} more" if len(baseline["misses"]) > 3 else "")))
    if answer is None:
        return
    say(f"cheapest candidate meeting every target: {answer['candidate']}: {answer['costPerHour']:,.2f}/h "
                  f"({answer['costOverTrace']:,.2f} over the trace, before {answer['costOverTraceBefore']:,.2f})")
    say(f"guarantees: {answer['guarantees']}")
    if baseline["meets"] and not baseline["competes"] and baseline["costPerHour"] < answer["costPerHour"]:
        say("the policy as it is costs less and meets every target, but its MIG cut is not among those --mig "
            "compares")
    pools = Table(title="per pool", title_justify="left")
    for column in ("pool", "nodes", "GPUs", "cost/GPU-h", "cost/h", "MIG", "used GPU-h", "idle GPU-h"):
        pools.add_column(column)
    for p in answer["pools"]:
        layouts = ", ".join(f"{l['count']}x{{" + ", ".join(f"{k}: {v}" for k, v in l["profiles"].items()) + "}"
                            for l in p["migLayouts"]) or p["mig"]
        pools.add_row(p["pool"], f"{p['nodesBefore']} -> {p['nodes']}" + (" (fixed)" if p["fixed"] else ""),
                      str(p["gpus"]), f"{p['costPerGpuHour']:g}", f"{p['costPerHour']:,.2f}", layouts,
                      f"{p['usedGpuHours']:,.1f}", f"{p['idleGpuHours']:,.1f}")
    console.print(pools)
    teams = Table(title="per team (wait p50 / p95 / max)", title_justify="left")
    for column in ("team", "jobs", "guaranteed", "burst", "MIG guaranteed", "wait before", "wait after",
                   "never started", "GPU-hours"):
        teams.add_column(column)
    for t in answer["teams"]:
        mig = ", ".join(f"{k}: {v}" for k, v in t["mig"].items()) or "-"
        teams.add_row(t["team"], str(t["jobs"]), f"{t['guaranteedBefore']} -> {t['guaranteed']}",
                      _burst_text(t["burstBefore"], t["burst"]), mig,
                      _wait_text(t["waitBefore"]), _wait_text(t["wait"]),
                      f"{t['neverStartedBefore']} -> {t['neverStarted']}", _hours_text(t))
    console.print(teams)
    say("why not smaller: each candidate one step smaller in one pool (a node, or a top-level domain), "
        "simulated:")
    for item in data["proof"]:
        say(f"  {item['candidate']}: {item['costPerHour']:,.2f}/h fails: " + "; ".join(item["misses"][:3]))
    if not data["proof"]:
        say("  (every pool is at its minimum or fixed)")
    say(_across_text(data["proofAcrossPools"]))


# What the proofs rest on unless every cheaper candidate was simulated (search.py).
MONOTONE_WAITS = "fewer nodes never shorten a wait"


def _across_text(across: dict) -> str:
    """The proof across pools, said (search.py `_across_pools`)."""
    scope = "within the bounds (with the answer's MIG cut and kind of guarantees)"
    if across["everyCheaper"]:
        if not across["checked"]:
            return f"no candidate costs less {scope}"
        return f"no cheaper candidate {scope} meets the targets: every one was simulated ({across['checked']})"
    if across["proved"]:
        shown = f"{across['checked']} simulated for it" if across["checked"] else "none left to simulate"
        return (f"no cheaper node counts {scope} meet the targets: each, moving nodes between pools or not, is at or "
                f"below a candidate that fails ({shown}; taking it that {MONOTONE_WAITS})")
    if across["left"] is None:
        return ("not proved across pools: too many pools can move to list every cheaper candidate that moves "
                "nodes between them (bound or fix some pools to prove it)")
    return (f"not proved across pools: {across['left']} cheaper candidate(s) moving nodes between pools left "
            f"unsimulated ({across['checked']} simulated; raise --proof-budget to prove it)")
