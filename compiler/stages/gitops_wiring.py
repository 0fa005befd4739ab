"""GitOps wiring written into out/ next to the clusters' manifests: how Argo CD or Flux syncs them.

Per cluster, by its `gitops:` setting (`gitops: argocd`, or an object with the tool, the Argo CD
project, the namespace of these objects, the destination and Flux's dependsOn):
- argocd: an `Application` (source `out/<cluster>`, destination the Argo CD cluster of that name
  unless the policy names another,
  sync wave after the Kueue install, `SkipDryRunOnMissingResource` because Kueue's CRDs come from
  another Application); with several Argo clusters also an `ApplicationSet` whose cluster
  generator selects the Argo cluster Secrets labelled `kueue-policy/cluster`; and once, a
  strategic-merge patch for argocd-cm (and the same as argo-cd Helm values) with Lua health checks that read ClusterQueue/LocalQueue `Active` conditions
  (Argo CD has no built-in health check for Kueue kinds, so a `FlavorNotFound` queue would show
  green) and restore the Application health check sync waves of an app-of-apps need.
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
PLACEHOLDER_URL = "https://example.invalid/REPLACE-with-your-policy-repository.git"

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

# Argo CD 1.8 stopped assessing the health of Application objects, so in an app-of-apps a lower
# sync wave (Kueue's own Application: CRDs, webhook, manager) counts as done as soon as it is
# created. With this check the parent waits for Kueue's Application to be Healthy, which needs the
# manager Deployment available, which Kueue's readiness probe holds back until its webhook serves.
ARGOCD_APPLICATION_HEALTH_LUA = """\
-- kueue-policy: an Application is as healthy as Argo CD says it is, so a later sync wave of an
-- app-of-apps (kueue-policy's queues) waits for an earlier one (Kueue itself) to be Healthy.
local hs = {status = "Progressing", message = "Waiting for the Application's health"}
if obj.status ~= nil and obj.status.health ~= nil and obj.status.health.status ~= nil then
  hs.status = obj.status.health.status
  hs.message = obj.status.health.message or ""
end
return hs
"""

GitopsTool = Literal["argocd", "flux", "kustomize"]


@dataclass(frozen=True)
class GitopsCluster:
    """One cluster's GitOps settings, as the policy's `Cluster.spec.gitops` gives them."""
    name: str
    gitops: GitopsTool
    path: str                                  # repository-relative, e.g. "out/gpu-east"
    kueue_api_version: str = "kueue.x-k8s.io/v1beta2"
    project: str = "default"                   # Argo CD AppProject
    namespace: str | None = None               # of the Application / Flux objects (tool default when None)
    destination_server: str | None = None      # Argo CD: server URL, or else ...
    destination_name: str | None = None        # ... a registered cluster name (default: the cluster's name)
    destination_namespace: str = KUEUE_NAMESPACE
    depends_on: tuple[str, ...] = (KUEUE_INSTALL_NAME,)
    repo_url: str | None = None                # per-cluster `repository:`; None = the shared one
    revision: str | None = None

    @property
    def argocd_namespace(self) -> str:
        return self.namespace or ARGOCD_NAMESPACE

    @property
    def flux_namespace(self) -> str:
        return self.namespace or FLUX_NAMESPACE

    def destination(self) -> dict:
        # Argo CD refuses a destination with both server and name.
        target = ({"server": self.destination_server} if self.destination_server
                  else {"name": self.destination_name or self.name})
        return {**target, "namespace": self.destination_namespace}

    def source(self, repo_url: str, revision: str) -> tuple[str, str]:
        return self.repo_url or repo_url, self.revision or revision


def gitops_files(clusters: list[GitopsCluster], repo_url: str | None, revision: str) -> dict[str, dict]:
    """Objects to write under out/, keyed by path relative to out/.

    `repo_url` None (not known at compile time) leaves a placeholder the user fills in once;
    `revision` is the branch Argo CD / Flux track (the default branch). A cluster's own
    repository, project, namespaces, destination and dependsOn win over these defaults."""
    source_url = repo_url or PLACEHOLDER_URL
    files: dict[str, dict] = {}
    by_tool = {tool: sorted((c for c in clusters if c.gitops == tool), key=lambda c: c.name)
               for tool in ("argocd", "flux")}
    for cluster in by_tool["argocd"]:
        files[f"argocd/{cluster.name}.application.yaml"] = argocd_application(cluster, *cluster.source(source_url, revision))
    if len(by_tool["argocd"]) > 1:
        files["argocd/clusters.applicationset.yaml"] = argocd_applicationset(
            by_tool["argocd"], *by_tool["argocd"][0].source(source_url, revision))
    if by_tool["argocd"]:
        files["argocd/argocd-cm.kueue-health.patch.yaml"] = argocd_health_patch(by_tool["argocd"][0].argocd_namespace)
        files["argocd/argocd-cm.kueue-health.values.yaml"] = argocd_health_values()
    files.update(_flux_files(by_tool["flux"], source_url, revision))
    return dict(sorted(files.items()))


def _flux_files(clusters: list[GitopsCluster], source_url: str, revision: str) -> dict[str, dict]:
    """One GitRepository when every Flux cluster reads the same source from the same namespace
    (the common case, named kueue-policy); else one per cluster, named after it."""
    sources = {(c.flux_namespace, *c.source(source_url, revision)) for c in clusters}
    files: dict[str, dict] = {}
    for cluster in clusters:
        namespace, url, ref = cluster.flux_namespace, *cluster.source(source_url, revision)
        name = FLUX_SOURCE_NAME if len(sources) == 1 else f"{APP_PREFIX}{cluster.name}"
        path = f"flux/{FLUX_SOURCE_NAME}.gitrepository.yaml" if len(sources) == 1 else f"flux/{cluster.name}.gitrepository.yaml"
        files[path] = flux_git_repository(url, ref, name=name, namespace=namespace)
        files[f"flux/{cluster.name}.kustomization.yaml"] = flux_kustomization(cluster, source_name=name)
    return files


def _application_spec(path: str, destination: dict, source_url: str, revision: str, project: str) -> dict:
    return {
        "project": project,
        "source": {"repoURL": source_url, "targetRevision": revision, "path": path},
        "destination": destination,
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
            "namespace": cluster.argocd_namespace,
            "labels": {**MANAGED_BY, CLUSTER_LABEL: cluster.name},
            # After the Kueue install (wave 0 or lower) in an app-of-apps.
            "annotations": {"argocd.argoproj.io/sync-wave": QUEUES_SYNC_WAVE},
            "finalizers": ["resources-finalizer.argocd.argoproj.io"],
        },
        "spec": _application_spec(cluster.path, cluster.destination(), source_url, revision, cluster.project),
    }


def argocd_applicationset(clusters: list[GitopsCluster], source_url: str, revision: str) -> dict:
    """One ApplicationSet for all Argo clusters, an alternative to the per-cluster Applications.

    The cluster generator iterates over Argo CD's cluster Secrets; label each Secret
    `kueue-policy/cluster: <policy cluster name>` to enrol it. Apply this OR the Applications."""
    prefix = clusters[0].path.rsplit("/", 1)[0] if "/" in clusters[0].path else "out"
    first = clusters[0]
    template_spec = _application_spec(
        f'{prefix}/{{{{index .metadata.labels "{CLUSTER_LABEL}"}}}}',
        {"name": "{{.name}}", "namespace": first.destination_namespace}, source_url, revision, first.project)
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {
            "name": "kueue-policy",
            "namespace": first.argocd_namespace,
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


HEALTH_CHECKS = {
    "resource.customizations.health.argoproj.io_Application": ARGOCD_APPLICATION_HEALTH_LUA,
    "resource.customizations.health.kueue.x-k8s.io_ClusterQueue": ARGOCD_CLUSTERQUEUE_HEALTH_LUA,
    "resource.customizations.health.kueue.x-k8s.io_LocalQueue": ARGOCD_LOCALQUEUE_HEALTH_LUA,
}


def argocd_health_patch(namespace: str = ARGOCD_NAMESPACE) -> dict:
    """A strategic-merge patch for the existing argocd-cm: it adds two keys and keeps the rest.

    Not a resource to apply (that would replace Argo CD's whole ConfigMap): list it under
    `patches:` of the kustomization that installs Argo CD, or `kubectl patch configmap argocd-cm
    -n argocd --type merge --patch-file` it."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": namespace},
        "data": dict(HEALTH_CHECKS),
    }


def argocd_health_values() -> dict:
    """The same health checks for Argo CD installed by its Helm chart (argo-cd: `configs.cm`)."""
    return {"configs": {"cm": dict(HEALTH_CHECKS)}}


def flux_git_repository(source_url: str, revision: str, *, name: str = FLUX_SOURCE_NAME,
                        namespace: str = FLUX_NAMESPACE) -> dict:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)},
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


def flux_kustomization(cluster: GitopsCluster, source_name: str = FLUX_SOURCE_NAME) -> dict:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {
            "name": f"{APP_PREFIX}{cluster.name}",
            "namespace": cluster.flux_namespace,
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
            "sourceRef": {"kind": "GitRepository", "name": source_name},
            # Kueue (CRDs + webhook) must be installed and ready before its queues are applied.
            **({"dependsOn": [{"name": name} for name in cluster.depends_on]} if cluster.depends_on else {}),
            "healthCheckExprs": [
                _active_expressions(cluster.kueue_api_version, "ClusterQueue"),
                _active_expressions(cluster.kueue_api_version, "LocalQueue"),
            ],
        },
    }


def gitops_cluster(cluster, path: str) -> GitopsCluster:
    """The GitOps settings of a resolved cluster (`Cluster.spec.gitops` and `.repository`)."""
    spec = cluster.spec
    settings = spec.gitops
    return GitopsCluster(
        cluster.name, settings.tool, path, cluster.kueue_api_version, project=settings.project,
        namespace=settings.namespace, destination_server=settings.destination.server,
        destination_name=settings.destination.name, destination_namespace=settings.destination.namespace,
        depends_on=tuple(settings.dependsOn), repo_url=spec.repository.url if spec.repository else None,
        revision=spec.repository.revision if spec.repository else None)


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
