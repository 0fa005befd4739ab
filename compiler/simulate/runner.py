"""One simulation from a policy source and a trace file: compile, read the trace, run, summarize.

`simulate` runs it once, `simulate --compare REV` twice (the policy at REV and the working
tree, the same trace), and `diff`/`pr` run it for `Cluster.spec.whatIf.trace`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from compiler.core import codes
from compiler.core.errors import Diagnostic, PolicyError, SourcePosition
from compiler.evaluator import load_manifests
from compiler.runtime.parallel import Outcome, beside
from compiler.runtime.garbage_collection import few_collections
from compiler.stages.pipeline import ClusterArtifacts, PolicySource, compile_policy
from compiler.simulate import metrics
from compiler.simulate.driver import MomentWatch, Simulation, SimulationRun
from compiler.simulate.node_fit import stranded_pods
from compiler.simulate.trace import (Trace, TraceNotes, export_documents, export_jobs, from_export, read_bytes,
                                     read_trace)


@dataclass
class SimulationReport:
    cluster: str
    summary: dict            # metrics.summarize's answer, plus "notes"
    run: SimulationRun
    artifacts: ClusterArtifacts


def compiled_cluster(source: PolicySource, cluster: str | None) -> ClusterArtifacts:
    result = compile_policy(source, cluster=cluster)
    if len(result.clusters) != 1:
        raise PolicyError([Diagnostic(codes.UNKNOWN_CLUSTER, "the policy has several clusters: choose one with "
                                      "--cluster", SourcePosition(source.label or "."))])
    return next(iter(result.clusters.values()))


def load_trace(path: Path, artifacts: ClusterArtifacts) -> tuple[Trace, TraceNotes]:
    """The trace in whichever form the file has: YAML jobs, CSV, or a Kueue export."""
    content = read_bytes(path)
    documents = export_documents(path, content)
    if documents is not None:
        team_of = {ns: team.name for team in artifacts.cluster.teams for ns in team.namespaces}
        priorities = {p.name for p in artifacts.cluster.priorities}
        return from_export(export_jobs(documents), team_of, priorities, str(path))
    return read_trace(path), TraceNotes()


def simulate_policy(source: PolicySource, trace_path: Path, cluster: str | None = None) -> SimulationReport:
    with few_collections():  # compile, run and summary all build large long-lived graphs
        return _simulate(source, trace_path, cluster)


def simulate_both(before: PolicySource, after: PolicySource, trace_path: Path,
                  cluster: str | None = None) -> tuple[Outcome[dict], Outcome[SimulationReport]]:
    """One trace through two policies (`--compare`, the what-if of a pull request): the summary
    of `before`'s run and `after`'s whole report, each with the error its run met. On two CPUs
    the runs go side by side (compiler/runtime/parallel.py), with the answers of one after the other."""
    return beside(lambda: simulate_policy(before, trace_path, cluster).summary,
                  lambda: simulate_policy(after, trace_path, cluster))


def _simulate(source: PolicySource, trace_path: Path, cluster: str | None) -> SimulationReport:
    artifacts = compiled_cluster(source, cluster)
    trace, notes = load_trace(trace_path, artifacts)
    return simulate_compiled(artifacts, trace, notes, str(trace_path))


def simulate_compiled(artifacts: ClusterArtifacts, trace: Trace, notes: TraceNotes, trace_label: str,
                      watch: MomentWatch | None = None) -> SimulationReport:
    """One run of an already read trace through an already compiled cluster: `capacity` reads
    the trace once and runs it through many candidate policies, with the very code of `simulate`.
    `watch` may stop the run early (`capacity`'s certain misses); a run it stops has no
    summary (its figures would be those of part of the trace)."""
    objects = [o.obj for o in artifacts.objects]
    simulation = Simulation(artifacts.cluster, objects, trace, trace_label, artifacts.kueue_configuration)
    run = simulation.run(watch=watch)
    if run.stopped is not None:
        return SimulationReport(artifacts.name, {}, run, artifacts)
    run.stranded = stranded_pods(run.runs, artifacts.cluster)
    run.warnings += [Diagnostic(codes.TRACE_BAD, stranded.message()) for stranded in run.stranded]
    weights = {team.name: float(team.weight) for team in artifacts.cluster.teams}
    summary = metrics.summarize(run, load_manifests(simulation.base), weights)
    summary["cluster"] = artifacts.name
    summary["notes"] = notes.to_json()
    summary["notes"]["warnings"] = [d.message for d in run.warnings]   # (the run's own, the trace's among them)
    return SimulationReport(artifacts.name, summary, run, artifacts)
