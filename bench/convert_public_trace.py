"""Turn a public GPU-cluster trace into a kueue-policy job trace (CSV) and a policy to replay it on.

The source is Alibaba's GPU-sharing cluster trace of 2023 (`cluster-trace-gpu-v2023`, the
"openb" trace of Weng et al., "Beware of Fragmentation", USENIX ATC '23), as published with
Apache-2.0 in hkust-adsl/kubernetes-scheduler-simulator (data/csv/) and without a licence file in
alibaba/clusterdata (cluster-trace-gpu-v2023/csv/). See bench/data/alibaba-openb/README.md.

Two inputs of that trace are read:

* a pod list (`openb_pod_list_*.csv`): one pod a row, `name, cpu_milli, memory_mib, num_gpu,
  gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time` (times in
  seconds from the trace's start);
* the node list (`openb_node_list_gpu_node.csv`): `sn, cpu_milli, memory_mib, gpu, model`.

What becomes what:

* one pod is one job of one replica; it arrives at its `creation_time` and runs from its
  `scheduled_time` to its `deletion_time` (a pod still running when the trace was taken has the
  trace's last time as its deletion time, so it runs to the end of the trace);
* its team is its QoS class (the trace has no user, group or virtual cluster): `LS`
  (latency-sensitive) -> `qos-ls`, `BE` (best effort) -> `qos-be`, `Burstable` ->
  `qos-burstable`, `Guaranteed` -> `qos-guaranteed`;
* `num_gpu` GPUs a pod; a GPU-sharing pod (`num_gpu` 1, `gpu_milli` below 1000) asks for one whole
  GPU (`--shared whole`, what Kueue counts with `nvidia.com/gpu`), or for its share of a GPU's
  memory (`--shared gpu-memory`: `gpu_milli`/1000 of `--gpu-memory-gib`, for a what-if on MIG);
* `cpu_milli` and `memory_mib` become the `cpu` and `memory` columns (`--no-cpu-memory` leaves
  them out); `gpu_spec` (the models a pod accepts, in the `gpuspec*` variants) is not carried,
  a job cannot name models;
* a pod never scheduled (`Pending`, no `scheduled_time`) has no run time and is left out; a pod
  asking for no GPU is left out unless `--cpu-only keep` (the policy has GPU pools only, and a
  CPU-only pod's quota would come out of the GPU teams' `resourcesPerGpu`).

A window (`--start-day`, `--days`) keeps the pods created in it; a pod created before the window
and still running at its start is carried in (it arrives at the window's start and runs for what
is left of it) unless `--no-carry-in`. Every pod left out is counted by reason on stderr.

    python bench/convert_public_trace.py trace openb_pod_list_default.csv --out trace.csv \\
        [--start-day 135 --days 14]
    python bench/convert_public_trace.py policy openb_node_list_gpu_node.csv \\
        --pods openb_pod_list_default.csv --out policy/ [--start-day 135 --days 14] [--scale 1]

The same inputs and options give the same bytes. A bad input (a missing file or column, a cell
that is not a number) stops with its file and line and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import collections
import csv
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, NoReturn

DAY = 86_400
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "qos", "pod_phase",
               "creation_time", "deletion_time", "scheduled_time")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
# QoS class -> (team, cohort, priority class, what it is). Kubernetes' own classes (Guaranteed,
# Burstable) and Alibaba's (LS: latency-sensitive, BE: best effort).
TEAMS: dict[str, tuple[str, str, str, str]] = {
    "LS": ("qos-ls", "online", "high", "latency-sensitive pods (serving, interactive)"),
    "Guaranteed": ("qos-guaranteed", "online", "high", "pods of Kubernetes QoS class Guaranteed"),
    "Burstable": ("qos-burstable", "offline", "standard", "pods of Kubernetes QoS class Burstable"),
    "BE": ("qos-be", "offline", "low", "best-effort pods (batch training, experiments)"),
}
SHAPE_COLUMNS = ("team", "name", "at", "duration", "replicas", "gpus", "gpuMemory", "cpu", "memory")


class BadInput(Exception):
    """A problem with an input file, said with its file and line."""


def fail(message: str) -> NoReturn:
    print(f"convert_public_trace: error: {message}", file=sys.stderr)
    raise SystemExit(1)


@dataclass(frozen=True)
class Pod:
    line: int
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    qos: str
    phase: str
    created: int
    deleted: int
    scheduled: int | None


@dataclass(frozen=True)
class Job:
    team: str
    name: str
    at: int
    duration: int
    gpus: int | None
    gpu_memory_gib: int | None
    cpu_milli: int | None
    memory_mib: int | None


def _rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line, row) for every data row of a CSV file whose header holds `required`."""
    try:
        handle = path.open(newline="", encoding="utf-8-sig")
    except OSError as error:
        raise BadInput(f"{path}: cannot read: {error.strerror or error}") from None
    with handle:
        reader = csv.DictReader(handle)
        try:
            header = reader.fieldnames or []
            missing = [c for c in required if c not in header]
            if missing:
                raise BadInput(f"{path}:1: no column {missing[0]!r} (expected {', '.join(required)})")
            for row in reader:
                if None in row or any(value is None for value in row.values()):
                    cells = sum(v is not None for k, v in row.items() if k is not None) + len(row.get(None) or [])
                    raise BadInput(f"{path}:{reader.line_num}: {cells} cells where the header has {len(header)}")
                yield reader.line_num, row
        except (csv.Error, UnicodeDecodeError) as error:
            raise BadInput(f"{path}:{reader.line_num or 1}: cannot read this CSV: {error}") from None


def _integer(path: Path, line: int, column: str, text: str, *, empty_ok: bool = False) -> int | None:
    text = text.strip()
    if not text and empty_ok:
        return None
    if not re.fullmatch(r"\d{1,12}", text):
        raise BadInput(f"{path}:{line}: {column}: {text!r} is not a whole number of at most 12 digits")
    return int(text)


def read_pods(path: Path) -> list[Pod]:
    pods: list[Pod] = []
    for line, row in _rows(path, POD_COLUMNS):
        def number(column: str) -> int:
            value = _integer(path, line, column, row[column])
            assert value is not None
            return value
        num_gpu = number("num_gpu")
        gpu_milli = _integer(path, line, "gpu_milli", row["gpu_milli"], empty_ok=True)
        pods.append(Pod(line=line, name=row["name"].strip(), cpu_milli=number("cpu_milli"),
                        memory_mib=number("memory_mib"), num_gpu=num_gpu,
                        gpu_milli=gpu_milli if gpu_milli is not None else 1000 * min(num_gpu, 1),
                        qos=row["qos"].strip(), phase=row["pod_phase"].strip(),
                        created=number("creation_time"), deleted=number("deletion_time"),
                        scheduled=_integer(path, line, "scheduled_time", row["scheduled_time"], empty_ok=True)))
    if not pods:
        raise BadInput(f"{path}: no pod (a header and no row)")
    return pods


@dataclass(frozen=True)
class Options:
    start: int                 # seconds into the source trace
    end: int | None            # seconds, exclusive; None: to the end
    carry_in: bool
    shared: str                # "whole" | "gpu-memory"
    gpu_memory_gib: int
    cpu_only: str              # "drop" | "keep"
    cpu_memory: bool


def convert(pods: list[Pod], options: Options, path: Path) -> tuple[list[Job], collections.Counter[str]]:
    """The jobs of the window, in arrival order, and the pods left out, counted by reason."""
    dropped: collections.Counter[str] = collections.Counter()
    jobs: list[Job] = []
    seen: set[str] = set()
    for pod in pods:
        if pod.name in seen:
            raise BadInput(f"{path}:{pod.line}: pod {pod.name!r} is listed twice")
        seen.add(pod.name)
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", pod.name):
            raise BadInput(f"{path}:{pod.line}: name {pod.name!r} is not a DNS label")
        if pod.qos not in TEAMS:
            raise BadInput(f"{path}:{pod.line}: qos {pod.qos!r} is none of {', '.join(TEAMS)}")
        if options.end is not None and pod.created >= options.end:
            dropped["created after the window"] += 1
            continue
        if pod.scheduled is None:
            dropped["never scheduled (Pending): no run time"] += 1
            continue
        if pod.deleted < pod.scheduled or pod.scheduled < pod.created:
            raise BadInput(f"{path}:{pod.line}: times out of order (created {pod.created}, "
                           f"scheduled {pod.scheduled}, deleted {pod.deleted})")
        if pod.num_gpu == 0 and options.cpu_only == "drop":
            dropped["asks for no GPU (CPU-only)"] += 1
            continue
        begin = pod.scheduled
        if pod.created < options.start:
            if not options.carry_in or pod.deleted <= options.start:
                dropped["created before the window"] += 1
                continue
            begin = max(pod.scheduled, options.start)   # carried in: what is left of its run
            dropped["carried in (created before the window, running in it): kept"] += 1
        duration = pod.deleted - begin
        if duration < 1:
            dropped["ran for less than a second"] += 1
            continue
        gpus: int | None = pod.num_gpu or None
        gpu_memory: int | None = None
        if pod.num_gpu == 1 and pod.gpu_milli < 1000 and options.shared == "gpu-memory":
            gpus, gpu_memory = None, max(1, math.ceil(pod.gpu_milli * options.gpu_memory_gib / 1000))
        jobs.append(Job(team=TEAMS[pod.qos][0], name=pod.name, at=max(pod.created, options.start) - options.start,
                        duration=duration, gpus=gpus, gpu_memory_gib=gpu_memory,
                        cpu_milli=pod.cpu_milli if options.cpu_memory and pod.cpu_milli else None,
                        memory_mib=pod.memory_mib if options.cpu_memory and pod.memory_mib else None))
    jobs.sort(key=lambda job: (job.at, job.name))
    return jobs, dropped


def _cpu(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def write_trace(jobs: list[Job], out: Path) -> None:
    columns = [c for c in SHAPE_COLUMNS
               if (c != "gpuMemory" or any(j.gpu_memory_gib for j in jobs))
               and (c not in ("cpu", "memory") or any(j.cpu_milli or j.memory_mib for j in jobs))]
    lines = [",".join(columns)]
    for job in jobs:
        cells = {"team": job.team, "name": job.name, "at": str(job.at), "duration": str(job.duration),
                 "replicas": "1", "gpus": str(job.gpus) if job.gpus else "",
                 "gpuMemory": f"{job.gpu_memory_gib}Gi" if job.gpu_memory_gib else "",
                 "cpu": _cpu(job.cpu_milli) if job.cpu_milli else "",
                 "memory": f"{job.memory_mib}Mi" if job.memory_mib else ""}
        lines.append(",".join(cells[c] for c in columns))
    _write(out, "\n".join(lines) + "\n")


def _write(out: Path, text: str) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    except OSError as error:
        raise BadInput(f"{out}: cannot write: {error.strerror or error}") from None


@dataclass(frozen=True)
class PoolShape:
    model: str
    gpus_per_node: int
    nodes: int
    cpu_milli: int     # the most common node's
    memory_mib: int


def read_pools(path: Path) -> list[PoolShape]:
    """One pool per (GPU model, GPUs a node), largest nodes first, then most GPUs."""
    shapes: dict[tuple[str, int], collections.Counter[tuple[int, int]]] = collections.defaultdict(collections.Counter)
    for line, row in _rows(path, NODE_COLUMNS):
        gpus = _integer(path, line, "gpu", row["gpu"])
        model = row["model"].strip()
        if not gpus:
            continue     # a CPU-only node (openb_node_list_all_node.csv has them)
        if not re.fullmatch(r"[A-Za-z0-9][-A-Za-z0-9_.]{0,62}", model):
            raise BadInput(f"{path}:{line}: model {model!r} is not a GPU model name")
        cpu, memory = _integer(path, line, "cpu_milli", row["cpu_milli"]), _integer(path, line, "memory_mib", row["memory_mib"])
        assert cpu is not None and memory is not None
        shapes[(model, gpus)][(cpu, memory)] += 1
    if not shapes:
        raise BadInput(f"{path}: no GPU node")
    pools = [PoolShape(model, gpus, sum(c.values()), *c.most_common(1)[0][0]) for (model, gpus), c in shapes.items()]
    pools.sort(key=lambda p: (-p.gpus_per_node, -p.nodes * p.gpus_per_node, p.model))
    return pools


def write_policy(pools: list[PoolShape], jobs: list[Job], out: Path, *, scale: float, span: int) -> None:
    """cluster.yaml (one whole-GPU pool per node shape, the fleet times `scale`) and one team a
    QoS class, guaranteed its mean GPU load over the window (rounded up), borrowing the rest."""
    total_gpus = sum(p.nodes * p.gpus_per_node for p in pools)
    cpu_per_gpu = sum(p.nodes * p.cpu_milli for p in pools) // total_gpus // 1000
    memory_per_gpu = sum(p.nodes * p.memory_mib for p in pools) // total_gpus // 1024
    lines = [
        "# A policy for the Alibaba GPU-sharing trace of 2023 (cluster-trace-gpu-v2023, \"openb\"),",
        "# written by bench/convert_public_trace.py: one whole-GPU pool per node shape of the trace's",
        f"# fleet ({sum(p.nodes for p in pools)} GPU nodes, {total_gpus} GPUs) times {scale:g};"
        " G1-G3 are Alibaba's undisclosed GPU codes.",
        "# No prices are published: every GPU hour costs 1, so `capacity` minimizes GPUs.",
        "apiVersion: kueue-policy/v1alpha1", "kind: Cluster", "metadata:", "  name: openb", "spec:",
        '  kubernetesVersion: "1.34"', '  kueueVersion: "0.19"', "  gitops: argocd",
        "  # The fleet's own ratio of CPU and memory to GPUs (GPU nodes only).",
        f"  resourcesPerGpu: {{cpu: \"{cpu_per_gpu}\", memory: {memory_per_gpu}Gi}}", "  pools:"]
    for p in pools:
        nodes = max(1, math.ceil(p.nodes * scale))
        lines.append(f"    - {{name: {p.model.lower()}-x{p.gpus_per_node}, gpu: {p.model}, nodes: {nodes}, "
                     f"gpusPerNode: {p.gpus_per_node}, allocatable: {{cpu: \"{_cpu(p.cpu_milli)}\", "
                     f"memory: {p.memory_mib}Mi}}}}")
    lines += ["  cohorts:", "    - name: online", "    - name: offline", "  priorities:",
              "    - {name: high, value: 1000, description: \"LS and Guaranteed pods\"}",
              "    - {name: standard, value: 100, default: true}",
              "    - {name: low, value: 0, description: \"Best-effort pods: preempted first\"}",
              "  preemption:", "    withinClusterQueue: LowerPriority", "    reclaimWithinCohort: Any",
              "    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}",
              "  fairSharing: {enabled: true}"]
    _write(out / "cluster.yaml", "\n".join(lines) + "\n")
    load: dict[str, float] = collections.defaultdict(float)
    counts: collections.Counter[str] = collections.Counter(job.team for job in jobs)
    for job in jobs:
        load[job.team] += (job.gpus or 1) * job.duration
    # Models in the pools' order: the largest nodes first, so that Kueue tries them first.
    models = list(dict.fromkeys(p.model for p in pools))
    for qos, (team, cohort, priority, what) in TEAMS.items():
        if not counts[team]:
            continue
        guaranteed = math.ceil(load[team] / max(span, 1))
        text = (f"# {what}: {counts[team]} pods of QoS class {qos} in the converted trace.\n"
                "apiVersion: kueue-policy/v1alpha1\nkind: Team\nmetadata:\n"
                f"  name: {team}\nspec:\n  cohort: {cohort}\n  namespaces: [{team}]\n"
                f"  gpus: {{guaranteed: {guaranteed}}}   # its mean GPU load over the window, rounded up\n"
                f"  models: [{', '.join(models)}]\n  priority: {priority}\n")
        _write(out / "teams" / f"{team}.yaml", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    trace = commands.add_parser("trace", help="pods -> a kueue-policy CSV trace")
    trace.add_argument("pods", type=Path, help="openb_pod_list_*.csv")
    policy = commands.add_parser("policy", help="nodes (and pods, for the guarantees) -> a policy folder")
    policy.add_argument("nodes", type=Path, help="openb_node_list_gpu_node.csv")
    policy.add_argument("--pods", type=Path, required=True, help="the pod list the trace is made from")
    policy.add_argument("--scale", type=float, default=1.0, help="pool sizes: the fleet's nodes times this")
    for command in (trace, policy):
        command.add_argument("--out", type=Path, required=True)
        command.add_argument("--start-day", type=float, default=0.0, help="window start, days into the source")
        command.add_argument("--days", type=float, default=None, help="window length in days (default: to the end)")
        command.add_argument("--no-carry-in", dest="carry_in", action="store_false",
                             help="leave out pods created before the window, even those still running in it")
        command.add_argument("--shared", choices=("whole", "gpu-memory"), default="whole",
                             help="a GPU-sharing pod asks for one whole GPU, or for its share of a GPU's memory")
        command.add_argument("--gpu-memory-gib", type=int, default=16,
                             help="with --shared gpu-memory: the memory of the GPU shared (GiB)")
        command.add_argument("--cpu-only", choices=("drop", "keep"), default="drop")
        command.add_argument("--no-cpu-memory", dest="cpu_memory", action="store_false",
                             help="leave the cpu and memory columns out")
    args = parser.parse_args(argv)
    if not (0 <= args.start_day < 1e5) or (args.days is not None and not (0 < args.days < 1e5)):
        fail("--start-day must be at least 0 and --days above 0 (both under 100000)")
    if not (0 < getattr(args, "scale", 1.0) <= 100) or not (1 <= args.gpu_memory_gib <= 1024):
        fail("--scale must be in (0, 100] and --gpu-memory-gib in 1..1024")
    start = round(args.start_day * DAY)
    options = Options(start=start, end=None if args.days is None else start + round(args.days * DAY),
                      carry_in=args.carry_in, shared=args.shared, gpu_memory_gib=args.gpu_memory_gib,
                      cpu_only=args.cpu_only, cpu_memory=args.cpu_memory)
    try:
        pods_path = args.pods
        pods = read_pods(pods_path)
        jobs, dropped = convert(pods, options, pods_path)
        if not jobs:
            raise BadInput(f"{pods_path}: no pod is left in the window")
        if args.command == "trace":
            write_trace(jobs, args.out)
        else:
            last = max(pod.deleted for pod in pods)
            span = (options.end if options.end is not None else last) - options.start
            write_policy(read_pools(args.nodes), jobs, args.out, scale=args.scale, span=span)
    except BadInput as error:
        fail(str(error))
    teams = collections.Counter(job.team for job in jobs)
    print(f"{len(jobs)} jobs ({', '.join(f'{t} {n}' for t, n in sorted(teams.items()))}) -> {args.out}", file=sys.stderr)
    for reason, count in sorted(dropped.items()):
        print(f"  {'' if reason.endswith(': kept') else 'left out: '}{count} pods {reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
