"""One import, start to end: read, translate, prove by compiling back, and the files to write."""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.core import codes
from compiler.core.errors import Diagnostic, InputError, Severity
from compiler.importer.export import read_export
from compiler.importer.output import policy_files
from compiler.importer.roundtrip import round_trip
from compiler.importer.teams import team_documents
from compiler.importer.translate import ImportedPolicy, Translator


@dataclass
class ImportResult:
    files: dict[str, bytes]
    policy: ImportedPolicy
    # KP941 carried, KP942 not reproduced, KP943 guessed: every one names the object's file and line.
    notes: list[Diagnostic] = field(default_factory=list)

    @property
    def not_carried(self) -> list[Diagnostic]:
        return [note for note in self.notes if note.code == codes.IMPORT_NOT_CARRIED]


def import_cluster(paths: list[str], stdin_text: str | None = None, *, cluster_name: str | None = None,
                   kueue_version: str | None = None) -> ImportResult:
    export = read_export(paths, stdin_text)
    if not export.of("ClusterQueue") and not export.of("ResourceFlavor"):
        raise InputError([Diagnostic(codes.IMPORT_BAD_INPUT, "the export holds no ClusterQueue and no "
                                     "ResourceFlavor: nothing to import (kubectl get resourceflavors,cohorts,"
                                     "clusterqueues,localqueues,workloadpriorityclasses,topologies -o yaml)")])
    translator = Translator(export, cluster_name, kueue_version)
    teams = team_documents(translator)
    cluster = translator.cluster(teams)
    if translator.errors:
        raise InputError(translator.errors)
    for obj in export.device_classes:  # not Kueue objects: the comparison does not look at them
        translator.note(codes.IMPORT_NOT_CARRIED, f"DeviceClass {obj.name}: not emitted by the imported policy "
                        "(gpuAccess device-plugin); keep it with the DRA driver's install", obj, Severity.WARNING)
    policy = ImportedPolicy(translator.cluster_name, cluster, teams, export.configuration, translator.notes)
    files = policy_files(policy, paths)
    notes = translator.notes + round_trip(export, files, "imported", translator.reported)
    return ImportResult(files, policy, notes)
