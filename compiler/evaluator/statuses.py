"""The engine's statuses and kinds, as enums: a workload's status (what `evaluate` reports), a
cycle entry's status (what processing did with a head), and the kind of a reading (what a
nomination asked of the cluster's state). Not compiled: the compiled modules compare members,
which are the same objects either way."""

from __future__ import annotations

from enum import Enum, StrEnum


class WorkloadStatus(StrEnum):
    """A workload's status as the engine tracks it; the values are what `evaluate --format
    json` prints (a StrEnum: it is the string it prints, so output and callers comparing with
    strings see no difference)."""

    PENDING = "pending"
    INADMISSIBLE = "inadmissible"
    RUNNING = "running"            # held quota in the input
    ADMITTED = "admitted"          # admitted by this run
    PREEMPTED = "preempted"
    FINISHED = "finished"          # its job finished (simulate's live API)


class EntryStatus(Enum):
    """What processing a cycle's entry (a nominated head) did with it (Kueue's entry.status,
    and why it was not admitted)."""

    UNPROCESSED = "unprocessed"    # not processed yet (or a namespace mismatch, never processed)
    NO_FIT = "nofit"               # no flavor fits, even with preemption
    NO_CANDIDATES = "nocandidates" # would fit by preempting, and found no targets
    SKIPPED = "skipped"            # another entry of the cycle took its room or its targets
    PREEMPTING = "preempting"      # its targets are being evicted
    ADMITTED = "admitted"


class ReadingKind(Enum):
    """The kind of a reading, one answer a nomination took from the cluster's state (see
    docs/engine.md): a quota answer of the tree, an answer of the preemption oracle, a
    preemption search of the nomination itself."""

    QUOTA = "quota"
    ORACLE = "oracle"
    TARGETS = "targets"
