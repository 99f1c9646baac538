"""Gather a table's file metadata for the evaluator and planner (the I/O edge of planning).

Reads manifests, never data: live base data files with the delete files that apply to them
(:class:`~mixed_iceberg.store.manifests.delete_index.DeleteIndex`), visible change files above
each partition's optimized sequence, and the optimizing history kept in BaseStore snapshot
summaries and statistics. The one exception: a position-delete file several data files share
(the optimizer writes one per tree node) is read, through the process cache of deleted
positions, for which data files it holds rows and how many; so a segment's delete count and
its duplicate ratio are exact, not the shared file's total.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyiceberg.expressions import BooleanExpression
from pyiceberg.manifest import DataFileContent
from pyiceberg.table import Table
from pyiceberg.typedef import Record

from mixed_iceberg.basestore.optimized_sequence import BASE_OPTIMIZED_TIME, merged_through, read_optimized_sequence
from mixed_iceberg.caching import LruCache
from mixed_iceberg.format import parse_base, parse_change
from mixed_iceberg.optimizing.model import BaseFile, ChangeFile, PartitionFiles
from mixed_iceberg.reader.file_reads import positions_by_file
from mixed_iceberg.store.ancestry import ancestors
from mixed_iceberg.store.manifests.delete_index import DeleteIndex
from mixed_iceberg.store.manifests.live_files import LiveFile, live_files
from mixed_iceberg.store.write.layout import partition_path
from mixed_iceberg.store.write.position_deletes import referenced_data_file
from mixed_iceberg.typedef import DataFileType

if TYPE_CHECKING:
    from mixed_iceberg.handle import TableHandle

__all__ = ["OPTIMIZING_TYPE", "CollectedTable", "collect"]

#: Summary key of BaseStore snapshots written by the optimizer (minor, major, full).
OPTIMIZING_TYPE = "mixed-iceberg.optimizing.type"


@dataclass(slots=True)
class CollectedTable:
    """Pure metadata for planning plus the handles the executor needs to act on it."""

    partitions: list[PartitionFiles]
    last_full_ms: int
    base_snapshot_id: int | None
    change_snapshot_id: int | None
    #: When the optimizer last committed (0: never), for ``self-optimizing.min-plan-interval``.
    last_optimized_ms: int = 0
    data_files: dict[str, LiveFile] = field(default_factory=dict)
    delete_files: dict[str, LiveFile] = field(default_factory=dict)
    change_files: dict[str, LiveFile] = field(default_factory=dict)
    records: dict[str, tuple[int, Record]] = field(default_factory=dict)


def _created_ms(table: Table) -> int:
    raw = table.properties.get("table.create-timestamp")
    if raw and raw.isdigit():
        return int(raw)
    snapshots = table.metadata.snapshots
    return min((s.timestamp_ms for s in snapshots), default=table.metadata.last_updated_ms)


def _last_full_ms(base: Table, default: int) -> int:
    for snapshot in ancestors(base.metadata):
        if snapshot.summary is not None and snapshot.summary.get(OPTIMIZING_TYPE) == "full":
            return snapshot.timestamp_ms
    return default


def _base_files(base: Table, files: list[LiveFile], collected: CollectedTable) -> dict[str, list[BaseFile]]:
    deletes = [f for f in files if f.data_file.content != DataFileContent.DATA]
    collected.delete_files.update((d.data_file.file_path, d) for d in deletes)
    index = DeleteIndex.build(base.metadata.specs(), deletes)
    shared = [
        d.data_file
        for d in deletes
        if d.data_file.content == DataFileContent.POSITION_DELETES and referenced_data_file(d.data_file) is None
    ]
    held = positions_by_file(base, shared) if shared else {}
    result: dict[str, list[BaseFile]] = defaultdict(list)
    for live in files:
        if live.data_file.content != DataFileContent.DATA:
            continue
        path = partition_path(base, live.data_file)
        own = live.data_file.file_path
        collected.data_files[own] = live
        collected.records.setdefault(path, (live.data_file.spec_id, live.data_file.partition))
        pos: list[tuple[str, int]] = []
        for d in index.position_deletes(live):
            by_target = held.get(d.data_file.file_path)
            if by_target is None:
                pos.append((d.data_file.file_path, d.data_file.record_count))
            elif own in by_target:
                pos.append((d.data_file.file_path, len(by_target[own])))
        eq = index.equality_deletes(live).files
        meta = parse_base(own)
        result[path].append(
            BaseFile(
                path=own,
                size=live.data_file.file_size_in_bytes,
                records=live.data_file.record_count,
                transaction_id=meta.transaction_id,
                node=meta.node,
                pos_delete_files=tuple(p for p, _ in pos),
                pos_delete_records=sum(n for _, n in pos),
                eq_delete_files=tuple(d.data_file.file_path for d in eq),
            )
        )
    return result


@dataclass(frozen=True, slots=True)
class _BaseState:
    """What :func:`collect` gathers from the BaseStore alone: the same for the same metadata."""

    by_partition: dict[str, list[BaseFile]]
    data_files: dict[str, LiveFile]
    delete_files: dict[str, LiveFile]
    records: dict[str, tuple[int, Record]]
    created_ms: int
    last_full_ms: int
    last_commit_ms: int | None
    optimized: dict[str, int]
    optimized_at: dict[str, int]


#: BaseStore states by (table uuid, metadata file, filter): an optimizer asked
#: again before the BaseStore changed (each ChangeStore commit of a stream that has not yet
#: reached a trigger) plans from the change alone. Values are shared: callers copy the dicts.
_BASE_STATES: LruCache[tuple[object, ...], _BaseState] = LruCache(16)


def _base_state(base: Table, partition_filter: BooleanExpression | None, keyed_change: bool) -> _BaseState:
    snapshot = base.current_snapshot()
    metadata = base.metadata
    # The metadata file names one version of the metadata (a commit or a property change);
    # the uuid guards against a table dropped and created again at the same location.
    key = (str(metadata.table_uuid), base.metadata_location, repr(partition_filter), keyed_change)

    def build() -> _BaseState:
        scratch = CollectedTable([], 0, None, None)
        created = _created_ms(base)
        by_partition = _base_files(base, live_files(base, snapshot, partition_filter=partition_filter), scratch)
        return _BaseState(
            by_partition=by_partition,
            data_files=scratch.data_files,
            delete_files=scratch.delete_files,
            records=scratch.records,
            created_ms=created,
            last_full_ms=_last_full_ms(base, created),
            last_commit_ms=_last_optimizer_commit_ms(base),
            optimized=read_optimized_sequence(base, snapshot) if keyed_change else {},
            optimized_at=read_optimized_sequence(base, snapshot, BASE_OPTIMIZED_TIME) if keyed_change else {},
        )

    return _BASE_STATES.get_or_build(key, build)


def collect(table: TableHandle, partition_filter: BooleanExpression | None = None) -> CollectedTable:
    """Everything the optimizer needs to know about ``table``'s current snapshots.

    ``partition_filter`` (``self-optimizing.filter``) limits it to partitions that may hold
    matching rows; it prunes by partition only, never by column statistics.
    """
    base = table.base_store
    change = table.change_store
    base_snapshot = base.current_snapshot()
    state = _base_state(base, partition_filter, change is not None)
    collected = CollectedTable(
        [],
        state.last_full_ms,
        base_snapshot.snapshot_id if base_snapshot else None,
        None,
        data_files=dict(state.data_files),
        delete_files=dict(state.delete_files),
        records=dict(state.records),
    )
    base_by_partition = state.by_partition
    optimized, optimized_at = state.optimized, state.optimized_at
    change_by_partition: dict[str, list[ChangeFile]] = defaultdict(list)
    if change is not None:
        change_snapshot = change.current_snapshot()
        collected.change_snapshot_id = change_snapshot.snapshot_id if change_snapshot else None
        above = merged_through(change, optimized)
        for live in live_files(change, change_snapshot, partition_filter=partition_filter, above_sequence=above):
            path = partition_path(change, live.data_file)
            if live.sequence_number <= optimized.get(path, -1):
                continue
            meta = parse_change(live.data_file.file_path, live.sequence_number)
            collected.change_files[live.data_file.file_path] = live
            collected.records.setdefault(path, (live.data_file.spec_id, live.data_file.partition))
            change_by_partition[path].append(
                ChangeFile(
                    path=live.data_file.file_path,
                    size=live.data_file.file_size_in_bytes,
                    records=live.data_file.record_count,
                    sequence_number=live.sequence_number,
                    transaction_id=meta.transaction_id,
                    is_delete=meta.file_type is DataFileType.EQ_DELETE_FILE,
                )
            )
    last_commit = state.last_commit_ms
    collected.last_optimized_ms = last_commit or 0
    last_optimized = last_commit if last_commit is not None else state.created_ms
    for path in sorted(set(base_by_partition) | set(change_by_partition)):
        collected.partitions.append(
            PartitionFiles(
                path=path,
                base=tuple(base_by_partition.get(path, [])),
                change=tuple(change_by_partition.get(path, [])),
                optimized_sequence=optimized.get(path, 0),
                last_optimized_ms=optimized_at.get(path, last_optimized),
            )
        )
    return collected


def _last_optimizer_commit_ms(base: Table) -> int | None:
    """When the optimizer last committed to the BaseStore, if ever."""
    for snapshot in ancestors(base.metadata):
        if snapshot.summary is not None and snapshot.summary.get(OPTIMIZING_TYPE):
            return snapshot.timestamp_ms
    return None
