"""Change-data TTL: drop ChangeStore files that are old and already merged into the BaseStore.

A change file goes when both hold (Amoro's ``ChangeTableMaintainer.expireFiles``):

- the snapshot that added it is older than now - ``change.data.ttl.minutes`` (or has
  itself been expired already);
- its data sequence number is at or below the optimized sequence of its partition, so
  readers already ignore it (DESIGN.md invariant 3). Partitions without an optimized
  sequence keep everything.

Old but unmerged files are never deleted: deleting them loses data that only the
ChangeStore holds (Amoro #967). Removal is a ChangeStore commit per batch of 3000 files;
the files stay on storage until snapshot expiry or orphan cleaning finds them unreferenced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyiceberg.manifest import DataFile
from pyiceberg.table import Table

from mixed_iceberg.basestore.optimized_sequence import read_optimized_sequence
from mixed_iceberg.store.commit import commit_files
from mixed_iceberg.store.manifests.live_files import LiveFile, live_files
from mixed_iceberg.store.write.layout import partition_path

__all__ = ["BATCH_SIZE", "TtlPlan", "expire_change_files", "plan_change_ttl"]

#: Files removed per ChangeStore commit, as in Amoro.
BATCH_SIZE = 3000


@dataclass(frozen=True, slots=True)
class TtlPlan:
    """ChangeStore files to delete, and how many old files were kept because they are unmerged."""

    delete: tuple[DataFile, ...]
    unmerged_kept: int

    def __post_init__(self) -> None:
        if self.unmerged_kept < 0:
            raise ValueError(f"unmerged_kept: expected >= 0, found {self.unmerged_kept}")


def plan_change_ttl(
    change: Table,
    files: list[LiveFile],
    optimized_sequence: Mapping[str, int],
    *,
    expire_before_ms: int,
) -> TtlPlan:
    """Pick the change files to delete (no I/O: live files and the optimized sequence in).

    Args:
        change: the ChangeStore, for its snapshots' times and partition specs.
        files: live files of the ChangeStore's current snapshot.
        optimized_sequence: partition path -> optimized sequence of the BaseStore.
        expire_before_ms: files added before this epoch-millisecond time are old enough.
    """
    metadata = change.metadata
    delete = []
    unmerged = 0
    for live in files:
        added = metadata.snapshot_by_id(live.snapshot_id)
        # an adding snapshot that is gone was expired; Amoro counts its files as old enough too,
        # and the sequence check below still keeps every file readers may need
        if added is not None and added.timestamp_ms >= expire_before_ms:
            continue
        floor = optimized_sequence.get(partition_path(change, live.data_file))
        if floor is not None and live.sequence_number <= floor:
            delete.append(live.data_file)
        else:
            unmerged += 1
    return TtlPlan(tuple(delete), unmerged)


@dataclass(frozen=True, slots=True)
class TtlOutcome:
    """What the TTL removed."""

    files: int
    records: int
    size: int
    unmerged_kept: int
    commits: int


def expire_change_files(base: Table, change: Table, *, expire_before_ms: int, table_name: str) -> TtlOutcome:
    """Delete merged ChangeStore files older than the TTL, 3000 per commit.

    Args:
        base: the BaseStore (holds the optimized sequence).
        change: the ChangeStore.
        expire_before_ms: files added before this epoch-millisecond time are old enough.
        table_name: for messages.

    Raises:
        CommitConflictError: a concurrent commit conflicted; batches committed before it stay.
        CommitStateUnknownError: a commit's outcome is unknown.
    """
    base.refresh()
    change.refresh()
    # Read the optimized sequence before the change files: it only grows (invariant 3), so a
    # concurrent optimizing commit can only make this view more conservative, never less.
    optimized = read_optimized_sequence(base, base.current_snapshot())
    plan = plan_change_ttl(change, live_files(change, change.current_snapshot()), optimized, expire_before_ms=expire_before_ms)
    commits = 0
    for start in range(0, len(plan.delete), BATCH_SIZE):
        batch = list(plan.delete[start : start + BATCH_SIZE])
        outcome = commit_files(change, added=[], deleted=batch, table_name=table_name)
        commits += 0 if outcome.skipped else 1
    return TtlOutcome(
        files=len(plan.delete),
        records=sum(f.record_count for f in plan.delete),
        size=sum(f.file_size_in_bytes for f in plan.delete),
        unmerged_kept=plan.unmerged_kept,
        commits=commits,
    )
