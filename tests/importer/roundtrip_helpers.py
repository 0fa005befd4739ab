"""The round trip as a user runs it: `import` then `compile`, both as subprocesses, and the
compiled Kueue objects read back from the files `compile` wrote."""

from __future__ import annotations

from pathlib import Path

from kp_testing import run_cli

from compiler.core import yamlio
from compiler.evaluator import configuration_forms
from compiler.importer.semantic import COMPARED_KINDS, differences

FIXTURES = Path(__file__).parent / "fixtures"


def documents(*paths: Path) -> list[dict]:
    """Every object of the files (a `kind: List` unwrapped), in file order."""
    found: list[dict] = []
    for path in paths:
        files = sorted(p for p in path.rglob("*.yaml")) if path.is_dir() else [path]
        for file in files:
            for doc in yamlio.load_all(file.read_text()):
                if isinstance(doc, dict) and doc.get("kind") == "List":
                    found.extend(doc.get("items") or [])
                elif isinstance(doc, dict):
                    found.append(doc)
    return found


def configuration_of(docs: list[dict]) -> dict | None:
    for doc in docs:
        if configuration_forms.embedded_text(doc) is not None:
            return configuration_forms.unwrap(doc, None, "ConfigMap")
    return None


def compiled(policy: Path, out: Path) -> tuple[list[dict], dict | None]:
    """The Kueue objects and the Kueue Configuration `compile policy --out out` writes."""
    result = run_cli("compile", str(policy), "--out", str(out), "--allow-inadmissible")
    assert result.returncode == 0, result.stderr
    (cluster,) = [p for p in out.iterdir() if p.is_dir() and (p / "kueue").is_dir()]
    objects = [d for d in documents(cluster / "kueue") if d.get("kind") in COMPARED_KINDS]
    patch = cluster / "kueue-config" / "kueue-manager-config.patch.yaml"
    return objects, configuration_of(documents(patch)) if patch.exists() else None


def import_then_compile(exports: list[Path], tmp: Path, *extra: str) -> tuple[list[dict], dict | None, str]:
    """Import the export (strict: nothing may be left behind) and compile the imported policy."""
    policy = tmp / "imported"
    result = run_cli("import", *map(str, exports), "--out", str(policy), "--strict", *extra)
    assert result.returncode == 0, result.stderr
    objects, configuration = compiled(policy, tmp / "recompiled")
    return objects, configuration, result.stderr


def assert_same(original: list[dict], recompiled: list[dict]) -> None:
    found = differences(original, recompiled)
    assert not found, "\n".join(d.describe() for d in found)
