"""The proof an import is faithful: compile the imported policy, compare with the export.

Run by `import` itself before anything is written, so every field the policy does not reproduce
is listed (KP942) with the object's file and line, and by the tests on every fixture and on the
compiled output of every test policy.
"""

from __future__ import annotations

from typing import Any, Mapping

from compiler.core import codes
from compiler.core.errors import Diagnostic, PolicyError, Severity
from compiler.importer.export import ClusterExport
from compiler.importer.semantic import COMPARED_KINDS, Difference, differences, mapping_differences, object_key
from compiler.stages.pipeline import PolicySource, compile_policy


def compiled_objects(files: Mapping[str, bytes], label: str) -> tuple[list[dict[str, Any]], dict | None]:
    """The Kueue objects (and the Kueue Configuration) a policy folder's files compile to."""
    result = compile_policy(PolicySource.from_files(dict(files), label))
    objects: list[dict[str, Any]] = []
    configuration = None
    for artifacts in result.clusters.values():
        objects.extend(built.obj for built in artifacts.objects if built.obj.get("kind") in COMPARED_KINDS
                       and not built.is_patch)
        configuration = artifacts.kueue_configuration or configuration
    return objects, configuration


def configuration_differences(original: dict | None, compiled: dict | None) -> list[Difference]:
    """The manager Configuration the compile ships against the export's, key by key."""
    if original is None:
        return []
    return mapping_differences("Configuration", "controller_manager_config.yaml", original, compiled or {})


def round_trip(export: ClusterExport, files: Mapping[str, bytes], label: str,
               reported: set[tuple[str, str]] = frozenset()) -> list[Diagnostic]:
    """KP942 warnings for every difference between the export and what `files` compile to (but
    for the objects in `reported`, already said).
    A policy that does not compile at all raises PolicyError (import's own failure to report)."""
    try:
        objects, configuration = compiled_objects(files, label)
    except PolicyError as error:
        raise PolicyError([Diagnostic(codes.IMPORT_NOT_CARRIED, f"the imported policy does not compile "
                                      f"({d.code}, in the file import would write): {d.message}", d.position)
                           for d in error.diagnostics]) from None
    originals = [obj.doc for objs in export.kueue.values() for obj in objs]
    where = {object_key(obj.doc): obj.where for objs in export.kueue.values() for obj in objs}
    found = differences(originals, objects) + configuration_differences(export.configuration, configuration)
    return [Diagnostic(codes.IMPORT_NOT_CARRIED, d.describe(),
                       where.get((d.kind, d.name), export.configuration_where), Severity.WARNING) for d in found
            if (d.kind, d.name) not in reported]


