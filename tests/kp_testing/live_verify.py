"""Mutants of a compiled tree judged by `verify` and by a live API server with Kueue's webhooks
(see tree_mutations.py for the mutations)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from compiler.verify import verify_objects
from kp_testing.sandbox import LiveCluster, running_sandbox
from kp_testing.tree_mutations import Mutant, mutants

# The sandbox's versions: verify is asked about the server the mutants are sent to.
LIVE_KUBERNETES, LIVE_KUEUE = "1.36", "0.19"


@dataclass(frozen=True)
class Judged:
    mutant: Mutant
    verify_refuses: bool
    verify_says: str
    live_refuses: bool
    live_says: str


class Discovery:
    """(apiVersion, kind) -> the collection path a create goes to, from the server's discovery."""

    def __init__(self, cluster: LiveCluster) -> None:
        self.cluster, self.known = cluster, {}

    def collection(self, obj: dict) -> str:
        api, kind = obj["apiVersion"], obj["kind"]
        if (api, kind) not in self.known:
            base = "/api/v1" if api == "v1" else f"/apis/{api}"
            for resource in self.cluster.get(base)["resources"]:
                if "/" not in resource["name"]:
                    self.known[(api, resource["kind"])] = (base, resource["name"], resource["namespaced"])
        base, plural, namespaced = self.known[(api, kind)]
        namespace = (obj.get("metadata") or {}).get("namespace")
        return f"{base}/namespaces/{namespace}/{plural}" if namespaced and namespace else f"{base}/{plural}"


def tree_objects(tree: Path) -> list[dict]:
    built = subprocess.run(["kubectl", "kustomize", str(tree)], capture_output=True, text=True, check=True)
    return [doc for doc in yaml.safe_load_all(built.stdout) if doc]


def judge(cluster: LiveCluster, discovery: Discovery, objects: list[dict], mutant: Mutant) -> Judged:
    from compiler.sandbox.apiclient import ApiError
    from compiler.sandbox.lifecycle import client_for
    problems = [p for p in verify_objects(objects + [mutant.obj], LIVE_KUBERNETES, LIVE_KUEUE)
                if p.index == len(objects)]
    try:
        # As kubectl sends it (--validate=strict, its default): an unknown field is an error.
        client_for(cluster.folder).request(
            "POST", discovery.collection(mutant.obj) + "?dryRun=All&fieldValidation=Strict", mutant.obj)
        live_refuses, live_says = False, ""
    except ApiError as error:
        live_refuses, live_says = True, str(error)
    return Judged(mutant, bool(problems), "; ".join(p.message for p in problems[:2]), live_refuses, live_says)


def judge_all(tree: Path, folder: Path, seed: int, count: int) -> list[Judged]:
    objects = tree_objects(tree)
    with running_sandbox(folder, tree) as cluster:
        discovery = Discovery(cluster)
        return [judge(cluster, discovery, objects, mutant) for mutant in mutants(objects, count, seed)]


def explained(judged: Judged) -> str | None:
    """The documented difference a disagreement is an instance of (docs/how-to/sandbox.md,
    "Where verify and the API server differ"), or None."""
    if not judged.verify_refuses and judged.live_refuses and "undeclared reference" in judged.live_says:
        return "cel-undeclared-identifier"
    if judged.verify_refuses and not judged.live_refuses and judged.mutant.description.endswith(" removed") \
            and "Required value" in judged.verify_says:
        return "zero-value-of-a-required-field"
    return None
