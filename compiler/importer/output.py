"""The imported policy as files, and their atomic write.

Files: `cluster.yaml`, `teams/<team>.yaml`, and the manager Configuration the cluster file names
as its `kueueConfig.base`. Same input, same bytes: documents are dumped with sorted maps where
order means nothing and the export's order where it does (flavors, resources). The folder is
built beside the target and swapped in whole, so a failed import leaves nothing behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from compiler.core import yamlio
from compiler.core.errors import EnvironmentFailure
from compiler.importer.translate import CONFIG_FILE, ImportedPolicy
from compiler.stages.emit import canonical



def _document(doc: dict[str, Any], sources: str) -> str:
    return f"# Imported by `kueue-policy import` from {sources}.\n" + yamlio.dump(canonical(doc))


def policy_files(policy: ImportedPolicy, sources: list[str]) -> dict[str, bytes]:
    """Relative path -> bytes of every file of the imported policy folder."""
    said = ", ".join(sources) or "stdin"
    files = {"cluster.yaml": _document(policy.cluster, said)}
    for name, team in sorted(policy.teams.items()):
        files[f"teams/{name}.yaml"] = _document(team, said)
    if policy.configuration is not None:
        files[CONFIG_FILE] = _document(policy.configuration, said)
    return {path: text.encode("utf-8") for path, text in sorted(files.items())}


def is_empty_dir(path: Path) -> bool:
    return path.is_dir() and not any(path.iterdir())


def write_folder(target: Path, files: dict[str, bytes]) -> None:
    """Make `target` hold exactly `files`: written beside it, then swapped in."""
    target = target.absolute()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.import-", dir=target.parent))
    except OSError as error:
        raise EnvironmentFailure(f"cannot write {target}: {error.strerror or error}") from error
    try:
        for rel, data in files.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        if target.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            retired.rmdir()
            os.replace(target, retired)
            os.replace(staging, target)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, target)
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise EnvironmentFailure(f"cannot write {target}: {error.strerror or error}") from error
