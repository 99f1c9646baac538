"""Merged reads of a Mixed-Iceberg table: ``table.scan(...).to_arrow()``.

BaseStore rows (position deletes applied) plus the ChangeStore's insert rows, minus what
the ChangeStore's delete rows remove, per Amoro's LSN rule. See DESIGN.md, "Read".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import BooleanExpression
from pyiceberg.table import FileScanTask
from pyiceberg.table.snapshots import Snapshot

from mixed_iceberg.basestore.optimized_sequence import read_optimized_sequence
from mixed_iceberg.exceptions import NoSuchTableError
from mixed_iceberg.format import parse_base
from mixed_iceberg.reader.filters import split_filter
from mixed_iceberg.reader.merge import LSN, merge_latest
from mixed_iceberg.reader.plan import ChangeFileRef, PartitionIndex, plan_change_files
from mixed_iceberg.reader.read import is_maskable, read_base_rows, read_base_unmasked, read_change_rows
from mixed_iceberg.store.entries import live_files, plan_scan_tasks
from mixed_iceberg.store.equality_deletes import scan_with_equality_deletes
from mixed_iceberg.store.layout import partition_path

if TYPE_CHECKING:
    from mixed_iceberg.table import MixedTable

__all__ = ["MixedScan", "snapshot_as_of"]


def snapshot_as_of(store_snapshots: Sequence[Snapshot], timestamp_ms: int) -> Snapshot | None:
    """The newest snapshot committed at or before ``timestamp_ms``."""
    older = [s for s in store_snapshots if s.timestamp_ms <= timestamp_ms]
    return max(older, key=lambda s: (s.timestamp_ms, s.sequence_number)) if older else None


class MixedScan:
    """A planned read of the latest state per key; ``to_arrow()`` runs it."""

    def __init__(
        self,
        table: MixedTable,
        row_filter: str | BooleanExpression | None = None,
        selected_fields: Sequence[str] = ("*",),
        snapshot_id: int | None = None,
        base_snapshot_id: int | None = None,
        case_sensitive: bool = True,
    ) -> None:
        self.table = table
        self.selected_fields = tuple(selected_fields)
        self.case_sensitive = case_sensitive
        schema = table.schema()
        self.filter = split_filter(row_filter, schema, table.primary_key, case_sensitive)
        self.change_snapshot, self.base_snapshot = self._snapshots(snapshot_id, base_snapshot_id)

    def _snapshots(self, snapshot_id: int | None, base_snapshot_id: int | None) -> tuple[Snapshot | None, Snapshot | None]:
        table = self.table
        base = table.base_store
        change = table.change_store
        if change is None:
            snap_id = base_snapshot_id or snapshot_id
            return None, self._snapshot(
                base.metadata.snapshot_by_id(snap_id) if snap_id else base.current_snapshot(), snap_id, "BaseStore"
            )
        change_snapshot = change.metadata.snapshot_by_id(snapshot_id) if snapshot_id else change.current_snapshot()
        self._snapshot(change_snapshot, snapshot_id, "ChangeStore")
        if base_snapshot_id is not None:
            base_snapshot = self._snapshot(base.metadata.snapshot_by_id(base_snapshot_id), base_snapshot_id, "BaseStore")
        elif snapshot_id is not None and change_snapshot is not None:
            base_snapshot = snapshot_as_of(base.metadata.snapshots, change_snapshot.timestamp_ms)
        else:
            base_snapshot = base.current_snapshot()
        return change_snapshot, base_snapshot

    def _snapshot(self, snapshot: Snapshot | None, wanted: int | None, store: str) -> Snapshot | None:
        if wanted is not None and snapshot is None:
            raise NoSuchTableError(f"{self.table.name}: {store} has no snapshot {wanted}")
        return snapshot

    def _columns(self) -> list[str]:
        names = self.table.schema().column_names
        if self.selected_fields == ("*",):
            return names
        unknown = [f for f in self.selected_fields if f not in names]
        if unknown:
            raise NoSuchTableError(f"{self.table.name}: selected fields {unknown} are not columns; expected some of {names}")
        return [n for n in names if n in self.selected_fields]

    def to_arrow(self) -> pa.Table:
        """The merged rows, projected to ``selected_fields``."""
        table = self.table
        schema = table.schema()
        output = self._columns()
        keys = list(table.primary_key)
        needed = [n for n in schema.column_names if n in output or n in keys]
        base = table.base_store
        if table.change_store is None:
            # Unkeyed and plain Iceberg tables: Iceberg's own delete semantics, including the
            # equality deletes other engines (e.g. Flink upsert) write and pyiceberg cannot read.
            return scan_with_equality_deletes(
                base,
                self.filter.full,
                tuple(output),
                self.base_snapshot.snapshot_id if self.base_snapshot else None,
                case_sensitive=self.case_sensitive,
            ).select(output)
        partitioned = not base.spec().is_unpartitioned()
        partitions = PartitionIndex()
        base_groups: dict[tuple[int, int], list[FileScanTask]] = defaultdict(list)
        base_tasks = (
            plan_scan_tasks(base, self.base_snapshot, self.filter.full, case_sensitive=self.case_sensitive)
            if self.base_snapshot
            else []
        )
        for task in base_tasks:
            meta = parse_base(task.file.file_path)
            base_groups[(meta.transaction_id, partitions.ordinal(partition_path(base, task.file)))].append(task)
        projected = schema.select(*needed, case_sensitive=self.case_sensitive)
        groups = [(tx, part, tasks) for (tx, part), tasks in base_groups.items()]
        change = table.change_store
        refs = self._change_refs(partitions) if keys else []
        # Without change deletes nothing is removed by key: base rows need no LSN.
        merging = any(ref.is_delete for ref in refs)
        keep = None
        if merging and is_maskable([t for _, _, tasks in groups for t in tasks]):
            # Position-deleted and filtered-out rows stay in until the merge: one pass drops all.
            data, keep = read_base_unmasked(base, groups, projected, self.filter.full, with_partition=partitioned)
        else:
            data = read_base_rows(
                base, groups, projected, self.filter.full, with_partition=partitioned and merging, tagged=merging
            )
        if change is None or not refs:
            return data.select(output)
        inserts = read_change_rows(
            change.io,
            schema,
            [r for r in refs if not r.is_delete],
            needed,
            self.filter.full,
            with_partition=partitioned and merging,
        )
        if not merging:
            inserts = inserts.drop_columns([LSN])
            return pa.concat_tables([data.select(inserts.column_names), inserts], promote_options="permissive").select(output)
        deletes = read_change_rows(
            change.io, schema, [r for r in refs if r.is_delete], keys, self.filter.keys, with_partition=partitioned
        )
        if keep is not None:
            keep = np.concatenate([keep, np.ones(inserts.num_rows, dtype=bool)])
        data = pa.concat_tables([data.select(inserts.column_names), inserts], promote_options="permissive")
        return merge_latest(data, deletes, keys, keep).select(output)

    def _change_refs(self, partitions: PartitionIndex) -> list[ChangeFileRef]:
        """ChangeStore files above their partition's optimized sequence that may match the filter."""
        change = self.table.change_store
        if change is None:
            return []
        return plan_change_files(
            change,
            live_files(
                change,
                self.change_snapshot,
                self.filter.keys,
                partition_filter=self.filter.full,
                case_sensitive=self.case_sensitive,
            ),
            partitions,
            read_optimized_sequence(self.table.base_store, self.base_snapshot),
        )
