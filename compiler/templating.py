"""The Jinja2 templates in `templates/`: every emitted object kind and the cluster report.

Objects are rendered to YAML text and parsed back into dicts, so each template is the single
readable description of what its kind looks like, while the verify and emit stages work on data.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2

from compiler import yamlio

# `compiler/templates` links to the repository's top-level templates/, so a checkout and an
# installed wheel (where the link's files are packaged as package data) find the same files.
TEMPLATES_DIR = Path(__file__).parent / "templates"


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             autoescape=False)
    # JSON is YAML: every value a template writes goes through this filter, so a name such as
    # `no` or `0123` is a quoted string, whatever it looks like (a test lints the templates).
    env.filters["tojson"] = yamlio.flow
    return env


def render_text(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def render_object(template: str, **context: Any) -> dict[str, Any]:
    # Read back with the one YAML 1.2 reader, so a name such as `no` stays the string it was.
    return yamlio.load(render_text(template, **context))
