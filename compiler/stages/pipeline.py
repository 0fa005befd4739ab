"""The compile pipeline, one direction, one stage per module:

    load -> validate -> resolve -> plan -> build -> verify -> (admissibility) -> render files

`compile_policy` does everything in memory and returns every file `compile --out` would write;
writing them (`emit.write_tree`) is a separate step so that `validate`, `check`, `diff` and `pr`
share exactly the same compile and nothing touches the disk before it has all succeeded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Mapping

from compiler.stages import admissibility
from compiler.core import codes
from compiler.stages.admissibility import NEVER, Verdict
from compiler.stages.build import BuildResult, BuiltObject, add_priority_policies, build
from compiler.stages.emit import json_file, yaml_file
from compiler.stages.gitops_wiring import codeowners, gitops_cluster, gitops_files
from compiler.core.errors import Diagnostic, DiagnosticSink, PolicyError, Severity, SourcePosition
from compiler.stages.kueue_config import (add_kueue_config, default_configuration, load_outside_bases,
                                          split_configurations)
from compiler.stages.repository_files import DiskRepository, RepositoryFiles, RevisionRepository
from compiler.language.load import PolicySourceFile, discover_files, files_from_mapping, load_sources
from compiler.stages.resolved_model import ResolvedCluster
from compiler.stages.plan import Placement, plan
from compiler.stages.reach import warn_unreachable
from compiler.stages.report import build_report, render_markdown
from compiler.stages.resolve import resolve
from compiler.stages.topology import split_node_exports
from compiler.language.validate import validate_documents
from compiler.runtime.parallel import Background, side_by_side
from compiler.verify import verify_objects


@dataclass
class PolicySource:
    """Where a policy comes from: a folder on disk, or files read from a git revision."""

    files: list[PolicySourceFile]
    label: str
    # Where files the policy names outside its folder are read from (kueueConfig.base).
    repository: RepositoryFiles | None = None

    @classmethod
    def from_directory(cls, path: Path) -> "PolicySource":
        path = Path(path)
        return cls(discover_files(path), str(path), DiskRepository(path) if path.is_dir() else None)

    @classmethod
    def from_files(cls, files: Mapping[str, bytes], label: str = "") -> "PolicySource":
        return cls(files_from_mapping(files, label), label)

    @classmethod
    def at_revision(cls, files: Mapping[str, bytes], policy_folder: str,
                    repository: RepositoryFiles | None = None) -> "PolicySource":
        """The policy folder as read from a git revision, with the display paths `compile <folder>`
        shows (`policies/a.yaml`), so that generated headers and report paths do not differ
        between a revision and the disk. `repository` reads the same revision's other files."""
        source = cls.from_files(files, label=PurePosixPath(policy_folder).name)
        source.repository = repository
        return source

    @classmethod
    def in_git(cls, repo, revision: str, files: Mapping[str, bytes], policy_folder: str) -> "PolicySource":
        """`at_revision` of a GitPython repository: other files are read from the same revision."""
        from compiler.core import git_ops
        reader = RevisionRepository(lambda path: git_ops.blob_at(repo, revision, path), policy_folder, revision)
        return cls.at_revision(files, policy_folder, reader)


@dataclass
class ClusterArtifacts:
    name: str
    cluster: ResolvedCluster
    placement: Placement
    objects: list[BuiltObject]
    verdicts: list[Verdict]
    report: dict
    # Every file of out/<cluster>/, path relative to that folder -> exact text.
    files: dict[str, str] = field(default_factory=dict)
    # The Kueue Configuration this cluster's Kueue runs with, when the compile ships one.
    kueue_configuration: dict | None = None


@dataclass
class CompileResult:
    clusters: dict[str, ClusterArtifacts]
    # Files at the top of out/ (GitOps wiring), path relative to out/ -> text.
    shared_files: dict[str, str]
    warnings: list[Diagnostic]
    # True when every cluster of the policy was compiled (not `--cluster X`): emit may then
    # remove the folders of clusters that no longer exist.
    complete: bool = True

    @property
    def files(self) -> dict[str, str]:
        merged = {f"{name}/{rel}": text for name, c in self.clusters.items() for rel, text in c.files.items()}
        merged.update(self.shared_files)
        return dict(sorted(merged.items()))

    @property
    def reports(self) -> dict[str, dict]:
        return {name: c.report for name, c in self.clusters.items()}

    @property
    def verdicts(self) -> list[Verdict]:
        return [v for c in self.clusters.values() for v in c.verdicts]

    def never_diagnostics(self) -> list[Diagnostic]:
        found = []
        for artifacts in self.clusters.values():
            teams = {t.name: t for t in artifacts.cluster.teams}
            for verdict in artifacts.verdicts:
                if verdict.verdict != NEVER:
                    continue
                team = teams[verdict.team]
                index = next(w.index for w in team.workloads if w.spec.name == verdict.workload)
                found.append(Diagnostic(
                    codes.NEVER_ADMISSIBLE,
                    f"workload '{verdict.workload}' of team '{verdict.team}' would never be admitted: {verdict.reason}",
                    team.located.position("spec", "workloads", index)))
        return found


def _verify(artifacts_objects: list[BuiltObject], cluster: ResolvedCluster, sink: DiagnosticSink) -> None:
    spec = cluster.spec
    problems = verify_objects([o.obj for o in artifacts_objects], spec.kubernetesVersion, spec.kueueVersion)
    for problem in problems:
        built = artifacts_objects[problem.index]
        where = f"{built.kind} {built.name}"
        field_text = f" at {problem.field_path}" if problem.field_path else ""
        sink.error(problem.code, f"{where}{field_text}: {problem.message}", built.origin.position)


def _kustomization(objects: list[BuiltObject]) -> dict:
    ordered = sorted((o for o in objects if not o.is_patch), key=lambda o: (o.wave, o.relpath))
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": [o.relpath for o in ordered]}


def _kueue_config_component(objects: list[BuiltObject]) -> dict | None:
    """A kustomize Component the Kueue installation includes to receive this policy's settings."""
    patches = sorted(o.relpath for o in objects if o.is_patch)
    if not patches:
        return None
    prefix = "kueue-config/"
    return {"apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component",
            "patches": [{"path": p[len(prefix):]} for p in patches]}


def _object_files(objects: list[BuiltObject], cluster: ResolvedCluster) -> dict[str, str]:
    files: dict[str, str] = {}
    for built in objects:
        files[built.relpath] = yaml_file(built.obj, built.origin.file)
    files["kustomization.yaml"] = yaml_file(_kustomization(objects), cluster.located.path)
    component = _kueue_config_component(objects)
    if component is not None:
        files["kueue-config/kustomization.yaml"] = yaml_file(component, cluster.located.path)
    return files


def _report_files(report: dict) -> dict[str, str]:
    return {"report.json": json_file(report), "REPORT.md": render_markdown(report)}


# Below this many objects rendering the files takes well under a second: no second process.
PARALLEL_MIN_OBJECTS = 300


def _second_process(jobs: int | None, objects: int) -> bool:
    """Worth a second process: allowed (`--jobs` is not 1), a second core, a large policy."""
    return jobs != 1 and objects >= PARALLEL_MIN_OBJECTS and side_by_side()


def _compile_cluster(resolved: ResolvedCluster, sink: DiagnosticSink, jobs: int | None,
                     kueue_configs: dict) -> ClusterArtifacts | None:
    """plan -> build -> verify -> admissibility -> files, for one cluster (None after errors).

    The files (pure rendering of the built objects, the largest single cost left) are rendered
    in a second process on a large policy while this one verifies and asks the admission engine;
    they are thrown away if verify finds errors."""
    placement = plan(resolved, sink)
    if sink.errors:
        return None
    built: BuildResult = build(resolved, placement)
    warn_unreachable(resolved, built, sink)
    add_kueue_config(built, resolved, kueue_configs, sink)  # before the files are rendered
    add_priority_policies(built, resolved, placement,
                          default_configuration(resolved.spec.kueueVersion) if resolved.spec.kueueConfig.base is None
                          else None)
    rendering = Background(lambda: _object_files(built.objects, resolved),
                           fork=_second_process(jobs, len(built.objects)))
    try:
        _verify(built.objects, resolved, sink)
        if sink.errors:
            return None
        verdicts = admissibility.judge(resolved, built, placement)
        files = {**rendering.outcome().get(), **built.extra_files}
    finally:
        rendering.close()
    report = build_report(resolved, placement, built, verdicts)
    artifacts = ClusterArtifacts(resolved.name, resolved, placement, built.objects, verdicts, report)
    artifacts.files = dict(sorted({**files, **_report_files(report)}.items()))
    artifacts.kueue_configuration = built.kueue_configuration
    return artifacts


def compile_policy(source: PolicySource, *, cluster: str | None = None, jobs: int | None = None) -> CompileResult:
    """Compile a policy completely, in memory. Raises PolicyError with every diagnostic found.

    `never` verdicts are not errors here: callers decide (compile refuses them unless
    --allow-inadmissible; check and diff report them). `jobs`: processes a large policy may
    use (1: one process; None: a second one where it pays, see _compile_cluster).
    """
    sink = DiagnosticSink()
    if not source.files:
        raise PolicyError([Diagnostic(codes.EMPTY_POLICY,
                                      f"no *.yaml or *.yml policy files found in '{source.label}'",
                                      SourcePosition(source.label or "."))])
    documents, kueue_configs = split_configurations(load_sources(source.files, sink))
    documents, node_exports = split_node_exports(documents)
    policy = validate_documents(documents, sink)
    if not sink.errors and not policy.clusters and not policy.teams:
        sink.error(codes.EMPTY_POLICY, f"'{source.label}' holds no policy documents (only empty files)",
                   SourcePosition(source.label or "."))
    clusters = resolve(policy, sink, node_exports)
    load_outside_bases(clusters, kueue_configs, source.repository, sink)
    sink.raise_if_errors()
    if cluster is not None:
        selected = [c for c in clusters if c.name == cluster]
        if not selected:
            raise PolicyError([Diagnostic(codes.UNKNOWN_CLUSTER,
                                          f"--cluster {cluster}: the policy defines "
                                          + (", ".join(c.name for c in clusters) or "no clusters"))])
        clusters = selected
    results: dict[str, ClusterArtifacts] = {}
    for resolved in clusters:
        artifacts = _compile_cluster(resolved, sink, jobs, kueue_configs)
        if artifacts is not None:
            results[resolved.name] = artifacts
    sink.raise_if_errors()
    shared = _shared_files(list(results.values())) if cluster is None else {}
    return CompileResult(results, shared, [d for d in sink.items if d.severity is not Severity.ERROR],
                         complete=cluster is None)


def _shared_files(artifacts: list[ClusterArtifacts]) -> dict[str, str]:
    """GitOps wiring and CODEOWNERS at the top of out/. Paths assume out/ sits at the repository
    root, as `make demo` and the workflows lay it out, so the bytes do not depend on --out."""
    gitops = [gitops_cluster(a.cluster, f"out/{a.name}") for a in artifacts]
    repository = next((a.cluster.spec.repository for a in artifacts if a.cluster.spec.repository), None)
    files = {rel: yaml_file(obj, None)
             for rel, obj in gitops_files(gitops, repository.url if repository else None,
                                          repository.revision if repository else "main").items()}
    owners = {f"{a.name}/{team.name}": (team.located.path, list(team.spec.owners))
              for a in artifacts for team in a.cluster.teams}
    if owners:
        files["CODEOWNERS"] = codeowners(owners)
    return files
