"""GitOps wiring written into out/ next to the clusters' manifests: how Argo CD or Flux syncs them.

Per cluster, by its `gitops:` setting:
- argocd: an `Application` (source `out/<cluster>`, destination the Argo CD cluster of that name,
  sync wave after the Kueue install, `SkipDryRunOnMissingResource` because Kueue's CRDs come from
  another Application); with several Argo clusters also an `ApplicationSet` whose cluster
  generator selects the Argo cluster Secrets labelled `kueue-policy/cluster`; and once, the
  argocd-cm patch with Lua health checks that read ClusterQueue/LocalQueue `Active` conditions
  (Argo CD has no built-in health check for Kueue kinds, so a `FlavorNotFound` queue would show
  green).
- flux: a `Kustomization` that `dependsOn` the Kueue install, prunes, and waits on CEL health
  expressions for the Kueue kinds (optional-field form, so a missing status is "in progress"
  rather than an error), plus the `GitRepository` it reads when the repository URL is known.
- kustomize: nothing more (out/<cluster>/kustomization.yaml is always written by emit).

Every object is a plain dict; the emit stage serialises it. Output is deterministic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ARGOCD_NAMESPACE = "argocd"
FLUX_NAMESPACE = "flux-system"
KUEUE_NAMESPACE = "kueue-system"
APP_PREFIX = "kueue-policy-"
CLUSTER_LABEL = "kueue-policy/cluster"
MANAGED_BY = {"app.kubernetes.io/managed-by": "kueue-policy"}
# Kueue's own Application (or Flux Kustomization) is expected at a lower wave / as a dependency.
QUEUES_SYNC_WAVE = "10"
KUEUE_INSTALL_NAME = "kueue"
FLUX_SOURCE_NAME = "kueue-policy"

ARGOCD_CLUSTERQUEUE_HEALTH_LUA = """\
-- kueue-policy: a ClusterQueue is healthy when Kueue says it is Active.
-- Kueue sets Active=False with a reason (FlavorNotFound, CohortNotFound, ...) when it cannot use the queue.
local hs = {status = "Progressing", message = "Waiting for Kueue to report the Active condition"}
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, condition in ipairs(obj.status.conditions) do
    if condition.type == "Active" then
      local detail = (condition.reason or "") .. ": " .. (condition.message or "")
      if condition.status == "True" then
        hs.status = "Healthy"
      elseif condition.status == "False" then
        hs.status = "Degraded"
      end
      hs.message = detail
      return hs
    end
  end
end
return hs
"""

# LocalQueues carry the same Active condition (False while their ClusterQueue is missing).
ARGOCD_LOCALQUEUE_HEALTH_LUA = ARGOCD_CLUSTERQUEUE_HEALTH_LUA.replace("a ClusterQueue", "a LocalQueue")

GitopsTool = Literal["argocd", "flux", "kustomize"]


@dataclass(frozen=True)
class GitopsCluster:
    name: str
    gitops: GitopsTool
    path: str                                  # repository-relative, e.g. "out/gpu-east"
    kueue_api_version: str = "kueue.x-k8s.io/v1beta2"


def gitops_files(clusters: list[GitopsCluster], repo_url: str | None, revision: str) -> dict[str, dict]:
    """Objects to write under out/, keyed by path relative to out/.

    `repo_url` None (not known at compile time) leaves a placeholder the user fills in once;
    `revision` is the branch Argo CD / Flux track (the default branch)."""
    source_url = repo_url or "https://example.invalid/REPLACE-with-your-policy-repository.git"
    files: dict[str, dict] = {}
    by_tool = {tool: sorted((c for c in clusters if c.gitops == tool), key=lambda c: c.name)
               for tool in ("argocd", "flux")}
    for cluster in by_tool["argocd"]:
        files[f"argocd/{cluster.name}.application.yaml"] = argocd_application(cluster, source_url, revision)
    if len(by_tool["argocd"]) > 1:
        files["argocd/clusters.applicationset.yaml"] = argocd_applicationset(
            by_tool["argocd"], source_url, revision)
    if by_tool["argocd"]:
        files["argocd/argocd-cm.kueue-health.yaml"] = argocd_health_patch()
    if by_tool["flux"]:
        files["flux/kueue-policy.gitrepository.yaml"] = flux_git_repository(source_url, revision)
    for cluster in by_tool["flux"]:
        files[f"flux/{cluster.name}.kustomization.yaml"] = flux_kustomization(cluster)
    return dict(sorted(files.items()))


def _application_spec(path: str, destination_name: str, source_url: str, revision: str) -> dict:
    return {
        "project": "default",
        "source": {"repoURL": source_url, "targetRevision": revision, "path": path},
        "destination": {"name": destination_name, "namespace": KUEUE_NAMESPACE},
        "syncPolicy": {
            "automated": {"prune": True, "selfHeal": True},
            # Kueue's CRDs are installed by another Application: without this the dry run of our
            # ClusterQueues fails on a fresh cluster before Kueue's CRDs exist.
            "syncOptions": ["SkipDryRunOnMissingResource=true", "PruneLast=true"],
            "retry": {"limit": 5, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}},
        },
    }


def argocd_application(cluster: GitopsCluster, source_url: str, revision: str) -> dict:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": f"{APP_PREFIX}{cluster.name}",
            "namespace": ARGOCD_NAMESPACE,
            "labels": {**MANAGED_BY, CLUSTER_LABEL: cluster.name},
            # After the Kueue install (wave 0 or lower) in an app-of-apps.
            "annotations": {"argocd.argoproj.io/sync-wave": QUEUES_SYNC_WAVE},
            "finalizers": ["resources-finalizer.argocd.argoproj.io"],
        },
        "spec": _application_spec(cluster.path, cluster.name, source_url, revision),
    }


def argocd_applicationset(clusters: list[GitopsCluster], source_url: str, revision: str) -> dict:
    """One ApplicationSet for all Argo clusters, an alternative to the per-cluster Applications.

    The cluster generator iterates over Argo CD's cluster Secrets; label each Secret
    `kueue-policy/cluster: <policy cluster name>` to enrol it. Apply this OR the Applications."""
    prefix = clusters[0].path.rsplit("/", 1)[0] if "/" in clusters[0].path else "out"
    template_spec = _application_spec(
        f'{prefix}/{{{{index .metadata.labels "{CLUSTER_LABEL}"}}}}', "{{.name}}", source_url, revision)
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {
            "name": "kueue-policy",
            "namespace": ARGOCD_NAMESPACE,
            "labels": dict(MANAGED_BY),
            "annotations": {"kueue-policy/usage": "apply either this ApplicationSet or the "
                                                  "argocd/<cluster>.application.yaml files, not both"},
        },
        "spec": {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"clusters": {"selector": {"matchExpressions": [{
                "key": CLUSTER_LABEL, "operator": "In", "values": [c.name for c in clusters]}]}}}],
            "template": {
                "metadata": {
                    "name": f'{APP_PREFIX}{{{{index .metadata.labels "{CLUSTER_LABEL}"}}}}',
                    "labels": {**MANAGED_BY, CLUSTER_LABEL: f'{{{{index .metadata.labels "{CLUSTER_LABEL}"}}}}'},
                    "annotations": {"argocd.argoproj.io/sync-wave": QUEUES_SYNC_WAVE},
                },
                "spec": template_spec,
            },
        },
    }


def argocd_health_patch() -> dict:
    """A strategic-merge patch for argocd-cm (apply with kustomize or `kubectl patch`)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "argocd-cm",
            "namespace": ARGOCD_NAMESPACE,
            "labels": {"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"},
        },
        "data": {
            "resource.customizations.health.kueue.x-k8s.io_ClusterQueue": ARGOCD_CLUSTERQUEUE_HEALTH_LUA,
            "resource.customizations.health.kueue.x-k8s.io_LocalQueue": ARGOCD_LOCALQUEUE_HEALTH_LUA,
        },
    }


def flux_git_repository(source_url: str, revision: str) -> dict:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": FLUX_SOURCE_NAME, "namespace": FLUX_NAMESPACE, "labels": dict(MANAGED_BY)},
        "spec": {"interval": "5m", "url": source_url, "ref": {"branch": revision}},
    }


def _active_expressions(api_version: str, kind: str) -> dict:
    conditions = "status.?conditions.orValue([])"
    return {
        "apiVersion": api_version,
        "kind": kind,
        "current": f"{conditions}.exists(c, c.type == 'Active' && c.status == 'True')",
        "failed": f"{conditions}.exists(c, c.type == 'Active' && c.status == 'False')",
    }


def flux_kustomization(cluster: GitopsCluster) -> dict:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {
            "name": f"{APP_PREFIX}{cluster.name}",
            "namespace": FLUX_NAMESPACE,
            "labels": {**MANAGED_BY, CLUSTER_LABEL: cluster.name},
        },
        "spec": {
            "interval": "10m",
            "retryInterval": "1m",
            "timeout": "5m",
            "path": f"./{cluster.path}",
            "prune": True,
            # wait: health-check everything applied, with the expressions below for Kueue kinds.
            "wait": True,
            "sourceRef": {"kind": "GitRepository", "name": FLUX_SOURCE_NAME},
            # Kueue (CRDs + webhook) must be installed and ready before its queues are applied.
            "dependsOn": [{"name": KUEUE_INSTALL_NAME}],
            "healthCheckExprs": [
                _active_expressions(cluster.kueue_api_version, "ClusterQueue"),
                _active_expressions(cluster.kueue_api_version, "LocalQueue"),
            ],
        },
    }


_OWNER = re.compile(r"^(@[A-Za-z0-9][A-Za-z0-9-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?|[^@\s]+@[^@\s]+\.[^@\s]+)$")


def codeowners(team_files: dict[str, tuple[str, list[str]]]) -> str:
    """A CODEOWNERS file giving each team's policy file to that team's owners.

    `team_files`: team -> (repository-relative policy path, owners such as "@org/team-alpha" or an
    e-mail). Teams without owners are listed as a comment, so the gap is visible in review."""
    owners_by_path: dict[str, set[str]] = {}
    teams_by_path: dict[str, list[str]] = {}
    for team, (path, owners) in sorted(team_files.items()):
        bad = [o for o in owners if not _OWNER.match(o)]
        if bad:
            raise ValueError(f"team {team}: {', '.join(bad)} is not a GitHub/GitLab owner "
                             "(@user, @org/team or an e-mail address)")
        pattern = "/" + path.lstrip("/").replace(" ", "\\ ")
        # Several teams in one file share it: in CODEOWNERS the last matching line wins, so one
        # line per file with every owner, never one line per team.
        owners_by_path.setdefault(pattern, set()).update(owners)
        teams_by_path.setdefault(pattern, []).append(team)
    lines = ["# Code generated by kueue-policy; DO NOT EDIT.",
             "# Each team owns its policy file; put rules for the rest of the repository above this block.",
             ""]
    for pattern in sorted(owners_by_path):
        owners = owners_by_path[pattern]
        if owners:
            lines.append(f"{pattern} {' '.join(sorted(owners))}")
        else:
            lines.append(f"# {pattern}: team {', '.join(teams_by_path[pattern])} declares no owners")
    return "\n".join(lines) + "\n"
