"""`kueue-policy schema`: the policy language as JSON Schema, generated from the typed models.

The models in compiler/language/policy.py are the one definition of the language; this command only
serialises them, so the schema an editor checks against cannot drift from what `validate`
accepts (a test compares the committed schemas/ with a fresh run). Output is deterministic:
pydantic's field order, two-space indentation, a trailing newline.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import click
from pydantic.json_schema import models_json_schema

from compiler.language.policy import API_VERSION, ClusterDocument, TeamDocument

DRAFT = "https://json-schema.org/draft/2020-12/schema"
# File names under schemas/ (the policies' yaml-language-server modelines point at them).
FILE_NAMES = {"cluster": "cluster.schema.json", "team": "team.schema.json", "policy": "policy.schema.json"}
_MODELS = {"cluster": ClusterDocument, "team": TeamDocument}


def _header(title: str, description: str) -> dict[str, Any]:
    return {"$schema": DRAFT, "title": title, "description": description}


@lru_cache(maxsize=None)
def kind_schema(kind: str) -> dict[str, Any]:
    """The schema of one document kind ("cluster" or "team")."""
    model = _MODELS[kind]
    body = model.model_json_schema(mode="validation")
    title = f"kueue-policy {model.__name__.removesuffix('Document')} ({API_VERSION})"
    return {**_header(title, (model.__doc__ or "").strip()), **{k: v for k, v in body.items() if k != "title"}}


@lru_cache(maxsize=None)
def policy_schema() -> dict[str, Any]:
    """A schema for a policy file that may hold either kind (one document is one of them)."""
    refs, definitions = models_json_schema([(ClusterDocument, "validation"), (TeamDocument, "validation")],
                                           ref_template="#/$defs/{model}")
    one_of = [refs[(model, "validation")] for model in (ClusterDocument, TeamDocument)]
    description = "A kueue-policy document: a Cluster or a Team."
    return {**_header(f"kueue-policy document ({API_VERSION})", description), "oneOf": one_of, **definitions}


def schema_for(name: str) -> dict[str, Any]:
    return policy_schema() if name == "policy" else kind_schema(name)


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


@click.command("schema")
@click.option("--kind", type=click.Choice(sorted(_MODELS)), default=None,
              help="Only this kind (default: a schema that accepts either kind; with --out, every file).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write " + ", ".join(FILE_NAMES.values()) + " into this folder instead of printing.")
def schema(kind: str | None, out_dir: Path | None) -> None:
    """Print the JSON Schema of the policy language (Cluster and Team documents)."""
    if out_dir is None:
        click.echo(render(schema_for(kind or "policy")), nl=False)
        return
    names = [kind] if kind else list(FILE_NAMES)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in names:
            (out_dir / FILE_NAMES[name]).write_text(render(schema_for(name)), encoding="utf-8")
    except OSError as error:
        click.echo(f"error: cannot write the schema into {out_dir}: {error.strerror or error}", err=True)
        raise SystemExit(3) from None
    for name in names:
        click.echo(str(out_dir / FILE_NAMES[name]))
