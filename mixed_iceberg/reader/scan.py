"""Merged reads of a Mixed-Iceberg table: ``table.scan(...).to_arrow()``.

BaseStore rows (position deletes applied) and the ChangeStore's unmerged rows (the tail):
of all rows of a key, the latest by LSN decides it (:mod:`mixed_iceberg.merge.latest`).
See DESIGN.md, "Read".
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.visitors import bind, extract_field_ids
from pyiceberg.manifest import DataFile, DataFileContent
from pyiceberg.schema import Schema, prune_columns
from pyiceberg.table import FileScanTask, Table
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.types import IcebergType

from mixed_iceberg._pyiceberg.arrow_filters import arrow_filter
from mixed_iceberg._pyiceberg.scan import ScanEvaluators
from mixed_iceberg.basestore.optimized_sequence import merged_through, read_optimized_sequence
from mixed_iceberg.exceptions import InvalidScanError, NoSuchSnapshotError, SnapshotExpiredError
from mixed_iceberg.format import parse_base, parse_change
from mixed_iceberg.merge.group import Settled, Tail, delete_columns, merge_group, needs_whole_rows
from mixed_iceberg.merge.latest import LSN, keep_rows
from mixed_iceberg.reader.file_reads import read_positional
from mixed_iceberg.reader.filters import split_filter
from mixed_iceberg.reader.groups import BaseFileInfo, ChangeFileInfo, FileGroup, group_files, keys_stay_in_partition
from mixed_iceberg.reader.key_nodes import node_admits, pinned_key_hashes
from mixed_iceberg.reader.merge_task import MergeTask
from mixed_iceberg.reader.plan import ChangeFileRef, PartitionIndex, plan_change_files
from mixed_iceberg.reader.read import base_lsn, is_maskable, read_base_keyed, read_base_rows, read_change_rows
from mixed_iceberg.schema import arrow_schema, selected_columns, top_level_names
from mixed_iceberg.store.equality_deletes import scan_with_equality_deletes
from mixed_iceberg.store.manifests.live_files import live_files
from mixed_iceberg.store.manifests.scan_tasks import plan_scan_tasks
from mixed_iceberg.store.write.layout import partition_path

if TYPE_CHECKING:
    import duckdb
    import pandas as pd  # type: ignore[import-untyped]
    import polars as pl

    from mixed_iceberg.handle import TableHandle

__all__ = ["MixedScan", "history_expired", "snapshot_as_of"]


def history_expired(store_snapshots: Sequence[Snapshot], timestamp_ms: int) -> bool:
    """Whether the store may have had a state at ``timestamp_ms`` that expiry removed: the oldest
    snapshot left is younger and is not the store's first (sequence numbers start at 1). It may
    refuse a read whose expired snapshots were all younger too; it never lets one through."""
    if not store_snapshots:
        return False
    oldest = min(store_snapshots, key=lambda s: (s.sequence_number, s.timestamp_ms))
    return oldest.timestamp_ms > timestamp_ms and (oldest.sequence_number or 0) > 1


def snapshot_as_of(store_snapshots: Sequence[Snapshot], timestamp_ms: int) -> Snapshot | None:
    """The newest snapshot committed at or before ``timestamp_ms``."""
    older = [s for s in store_snapshots if s.timestamp_ms <= timestamp_ms]
    return max(older, key=lambda s: (s.timestamp_ms, s.sequence_number)) if older else None


def _require(module: str, extra: str) -> ModuleType:
    """Import an optional integration, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"{module} is not installed; expected it for this call: pip install 'mixed-iceberg[{extra}]'", name=module
        ) from exc


def _field_type(schema: Schema, field_id: int) -> IcebergType | None:
    try:
        return schema.find_field(field_id).field_type
    except ValueError:
        return None


class MixedScan:
    """A planned read of the latest state per key; ``to_arrow()`` runs it."""

    def __init__(
        self,
        table: TableHandle,
        *,
        row_filter: str | BooleanExpression | None = None,
        selected_fields: Sequence[str] = ("*",),
        snapshot_id: int | None = None,
        base_snapshot_id: int | None = None,
        case_sensitive: bool = True,
        as_of_ms: int | None = None,
        snapshots: tuple[Snapshot | None, Snapshot | None] | None = None,
        limit: int | None = None,
        change_to_sequence: int | None = None,
    ) -> None:
        self.table = table
        self.row_filter = row_filter
        self.selected_fields = tuple(selected_fields)
        self.case_sensitive = case_sensitive
        if limit is not None and limit < 0:
            raise InvalidScanError(f"{table.name}: limit expected >= 0, found {limit}")
        self.limit = limit
        self.change_to_sequence = change_to_sequence  # change rows above it are left out (changes())
        self._planned: dict[int, list[FileScanTask]] = {}
        self._refs: list[ChangeFileRef] | None = None
        self._partitions = PartitionIndex()
        schema = table.schema()
        self.filter = split_filter(row_filter, schema, table.primary_key, case_sensitive)
        #: The hashes of the keys a key-equality filter pins (None: any key): a point lookup
        #: reads only the files of the tree nodes that hold them (reader/key_nodes.py).
        self.key_hashes = self._pinned_key_hashes(schema)
        if snapshots is not None:
            self.change_snapshot, self.base_snapshot = snapshots
        else:
            self.change_snapshot, self.base_snapshot = self._snapshots(snapshot_id, base_snapshot_id, as_of_ms)

    def _pinned_key_hashes(self, schema: Schema) -> npt.NDArray[np.int64] | None:
        table = self.table
        if table.change_store is None or isinstance(self.filter.keys, AlwaysTrue):
            return None
        # Files are placed by the hash of the key as it was typed when written: a key column
        # whose type changed (int -> long hashes differently) may have rows in other nodes.
        ids = [schema.find_field(name).field_id for name in table.primary_key]
        current = [schema.find_field(i).field_type for i in ids]
        for store in (table.base_store, table.change_store):
            if any([_field_type(old, i) for i in ids] != current for old in store.metadata.schemas):
                return None
        return pinned_key_hashes(
            self.filter.keys, schema, table.primary_key, arrow_schema(schema), case_sensitive=self.case_sensitive
        )

    def _snapshots(
        self, snapshot_id: int | None, base_snapshot_id: int | None, as_of_ms: int | None = None
    ) -> tuple[Snapshot | None, Snapshot | None]:
        """The (ChangeStore, BaseStore) snapshots a read sees.

        ``snapshot_id`` may name a snapshot of either store; the other store is read as of that
        snapshot's time. ``as_of_ms`` reads both stores as of a time. A store whose snapshot of
        that time expiry removed raises instead of answering from what is left.
        """
        table = self.table
        base = table.base_store
        change = table.change_store
        if as_of_ms is not None and (snapshot_id is not None or base_snapshot_id is not None):
            raise InvalidScanError(f"{table.name}: expected either as_of or a snapshot id, found both")
        if change is None:
            if as_of_ms is not None:
                return None, self._as_of(base, as_of_ms, "BaseStore")
            wanted = base_snapshot_id or snapshot_id
            return None, self._snapshot(base.metadata.snapshot_by_id(wanted) if wanted else base.current_snapshot(), wanted)
        if as_of_ms is not None:
            return self._as_of(change, as_of_ms, "ChangeStore"), self._as_of(base, as_of_ms, "BaseStore")
        if snapshot_id is not None and change.metadata.snapshot_by_id(snapshot_id) is None:
            if base_snapshot_id is not None or base.metadata.snapshot_by_id(snapshot_id) is None:
                self._snapshot(None, snapshot_id)
            # a BaseStore snapshot: the ChangeStore as of its time
            base_snapshot = base.metadata.snapshot_by_id(snapshot_id)
            assert base_snapshot is not None
            return self._as_of(change, base_snapshot.timestamp_ms, "ChangeStore"), base_snapshot
        change_snapshot = change.metadata.snapshot_by_id(snapshot_id) if snapshot_id else change.current_snapshot()
        if base_snapshot_id is not None:
            return change_snapshot, self._snapshot(base.metadata.snapshot_by_id(base_snapshot_id), base_snapshot_id)
        if snapshot_id is not None and change_snapshot is not None:
            return change_snapshot, self._as_of(
                base, change_snapshot.timestamp_ms, "BaseStore", f"ChangeStore snapshot {snapshot_id}"
            )
        return change_snapshot, base.current_snapshot()

    def _as_of(self, store: Table, timestamp_ms: int, name: str, what: str | None = None) -> Snapshot | None:
        snapshots = store.metadata.snapshots
        if history_expired(snapshots, timestamp_ms):
            raise SnapshotExpiredError(
                f"{self.table.name}: reading as of {what or f'{timestamp_ms} ms'} needs the {name} snapshot of that time "
                f"({timestamp_ms} ms); expected one retained, found the oldest at "
                f"{min(s.timestamp_ms for s in snapshots)} ms (expired by snapshot.keep.*)"
            )
        return snapshot_as_of(snapshots, timestamp_ms)

    def _snapshot(self, snapshot: Snapshot | None, wanted: int | None) -> Snapshot | None:
        if wanted is not None and snapshot is None:
            raise NoSuchSnapshotError(
                f"{self.table.name}: expected a snapshot {wanted} of the ChangeStore or the BaseStore, found none"
            )
        return snapshot

    def output_schema(self) -> pa.Schema:
        """The Arrow schema of what the scan returns (``selected_fields`` in table order)."""
        arrow = self.table.arrow_schema()
        return pa.schema([arrow.field(name) for name in self._columns()])

    def _columns(self) -> list[str]:
        return selected_columns(
            self.table.schema(), self.selected_fields, case_sensitive=self.case_sensitive, table=self.table.name
        )

    def to_arrow(self) -> pa.Table:
        """The merged rows, projected to ``selected_fields`` (at most ``limit`` of them).

        Raises:
            SnapshotExpiredError: a time-travel read needs files that maintenance deleted.
        """
        if self.limit is not None:
            return self.to_arrow_batch_reader().read_all()
        return self.read_group(None)

    def read_group(self, group: FileGroup | None) -> pa.Table:
        """The merged rows of one :class:`FileGroup` of this scan (``None``: all of them).

        Raises:
            SnapshotExpiredError: a time-travel read needs files that maintenance deleted.
        """
        try:
            return self._merged(group)
        except FileNotFoundError as exc:
            if self.change_snapshot is self._current_change() and self.base_snapshot is self.table.base_store.current_snapshot():
                raise
            raise SnapshotExpiredError(
                f"{self.table.name}: reading as of ChangeStore snapshot "
                f"{getattr(self.change_snapshot, 'snapshot_id', None)} needs a file that maintenance deleted "
                f"(change.data.ttl.minutes or snapshot expiry): {exc}"
            ) from exc

    def file_groups(self) -> list[FileGroup]:
        """The scan's files split into groups that merge independently (one per partition and
        tree node where the table allows it; see :func:`mixed_iceberg.reader.tasks.group_files`)."""
        table = self.table
        base = table.base_store
        tasks = self._base_tasks(self.filter.keys)
        refs = self._change_refs()
        if table.change_store is None:
            if any(d.content == DataFileContent.EQUALITY_DELETES for t in tasks for d in t.delete_files):
                return [FileGroup.whole(tasks)]  # equality deletes may hit any file: one group
            return [FileGroup(frozenset([t.file.file_path]), frozenset()) for t in tasks]
        return group_files(
            [BaseFileInfo(t.file.file_path, partition_path(base, t.file)) for t in tasks],
            [ChangeFileInfo(r.path, self._partitions.path(r.partition), r.sequence_number) for r in refs],
            by_partition=keys_stay_in_partition(table),
        )

    def plan_tasks(self) -> list[MergeTask]:
        """The scan as independent, picklable merge tasks, one per file group; run each with
        :func:`mixed_iceberg.reader.tasks.execute_task`, in any process that reaches the files.
        The union of their outputs is ``to_arrow()`` (``limit`` aside). See docs/reading.md."""
        table = self.table
        base = table.base_store
        change = table.change_store
        return [
            MergeTask(
                table=table.name,
                table_format=table.format,
                primary_key=table.primary_key,
                base_metadata=base.metadata_location,
                change_metadata=change.metadata_location if change is not None else None,
                base_snapshot_id=self.base_snapshot.snapshot_id if self.base_snapshot is not None else None,
                change_snapshot_id=self.change_snapshot.snapshot_id if self.change_snapshot is not None else None,
                base_files=tuple(sorted(group.base_paths)),
                change_files=tuple(sorted(group.change_paths)),
                row_filter=self.row_filter,
                selected_fields=self.selected_fields,
                case_sensitive=self.case_sensitive,
                partition=group.partition,
                node=(group.node.mask, group.node.index) if group.node is not None else None,
                io_properties=dict(base.io.properties),
            )
            for group in self.file_groups()
        ]

    def to_arrow_batch_reader(self) -> pa.RecordBatchReader:
        """The merged rows as a stream, read and merged one :class:`FileGroup` at a time.

        Memory is bounded by the largest group (a partition's tree node) instead of the table;
        a table partitioned by a non-key column groups by tree node across partitions, and an
        unkeyed table with equality deletes (another engine's) is read as one group. Rows come
        group by group, so not in the order of :meth:`to_arrow`.

        >>> for batch in table.scan().to_arrow_batch_reader():         # doctest: +SKIP
        ...     handle(batch)
        """
        schema = self.output_schema()
        return pa.RecordBatchReader.from_batches(schema, self._batches(schema))

    def _batches(self, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        left = self.limit
        if left == 0:
            return
        for group in self.file_groups():
            rows = self.read_group(group)
            if left is not None:
                rows = rows.slice(0, left)
                left -= rows.num_rows
            if rows.schema != schema:
                rows = rows.cast(schema)
            yield from rows.to_batches()
            if left == 0:
                return

    def count(self) -> int:
        """How many rows the scan returns (merged: one per live key that passes the filter);
        reads key columns only, group by group."""
        table = self.table
        keys = list(table.primary_key) or top_level_names(table.schema())[:1]
        narrow = MixedScan(
            table,
            row_filter=self.row_filter,
            selected_fields=keys,
            case_sensitive=self.case_sensitive,
            snapshots=(self.change_snapshot, self.base_snapshot),
            limit=self.limit,
        )
        return sum(batch.num_rows for batch in narrow.to_arrow_batch_reader())

    def to_pandas(self, **kwargs: Any) -> pd.DataFrame:
        """The merged rows as a pandas DataFrame (``kwargs`` go to ``pyarrow.Table.to_pandas``).

        Raises:
            ModuleNotFoundError: pandas is not installed (``pip install 'mixed-iceberg[pandas]'``).
        """
        _require("pandas", "pandas")
        return self.to_arrow().to_pandas(**kwargs)

    def to_polars(self) -> pl.DataFrame:
        """The merged rows as a Polars DataFrame.

        Raises:
            ModuleNotFoundError: polars is not installed (``pip install 'mixed-iceberg[polars]'``).
        """
        _require("polars", "polars")
        import polars

        frame = polars.from_arrow(self.to_arrow())
        assert isinstance(frame, polars.DataFrame)  # a Table gives a DataFrame (a Series only from an Array)
        return frame

    def to_duckdb(self, table_name: str, connection: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
        """Register the merged rows as ``table_name`` in a DuckDB ``connection`` (a new in-memory
        one by default) and return the connection, as pyiceberg's ``DataScan.to_duckdb`` does.

        Raises:
            ModuleNotFoundError: duckdb is not installed (``pip install 'mixed-iceberg[duckdb]'``).
        """
        duckdb_module = _require("duckdb", "duckdb")
        con = connection if connection is not None else duckdb_module.connect(database=":memory:")
        con.register(table_name, self.to_arrow())
        return con

    def _current_change(self) -> Snapshot | None:
        change = self.table.change_store
        return change.current_snapshot() if change is not None else None

    def _merged(self, group: FileGroup | None = None) -> pa.Table:
        """The merged rows of the whole scan, or of the files of one ``group`` (whose keys no
        file outside it holds: see :mod:`mixed_iceberg.reader.tasks`)."""
        table = self.table
        schema = table.schema()
        output = self._columns()
        keys = list(table.primary_key)
        needed = [n for n in top_level_names(schema) if n in output or n in keys]
        base = table.base_store
        if table.change_store is None and group is not None:
            # One data file (and its position deletes) of a table without equality deletes.
            tasks = self._base_tasks(self.filter.full, group)
            projected = schema.select(*output, case_sensitive=self.case_sensitive)
            return read_base_rows(base, tasks, [0] * len(tasks), projected, self.filter.full, tagged=False).select(output)
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
        change = table.change_store
        refs = self._change_refs(group) if self.change_snapshot is not None else []
        if not refs:
            tasks = self._base_tasks(self.filter.full, group)
            transaction_ids = [parse_base(t.file.file_path).transaction_id for t in tasks]
            projected = schema.select(*needed, case_sensitive=self.case_sensitive)
            return read_base_rows(base, tasks, transaction_ids, projected, self.filter.full, tagged=False).select(output)
        config = table.merge_config
        # The tail: every visible change row of the keys the key predicates admit. Value
        # predicates may not prune it (a newer row that fails them still hides an older one),
        # nor the BaseStore's rows where a key's merged row depends on all its rows.
        whole = needs_whole_rows(config)
        sequence = [config.sequence_field] if config.sequence_field else []
        columns = [n for n in top_level_names(schema) if n in {*needed, *sequence, *self._filter_only(needed)}]
        base_columns = columns if whole else needed
        base_filter = self.filter.keys if whole else self.filter.full
        tasks = self._base_tasks(base_filter, group)
        transaction_ids = [parse_base(t.file.file_path).transaction_id for t in tasks]
        projected = schema.select(*base_columns, case_sensitive=self.case_sensitive)
        history = change.metadata.schemas
        inserts = read_change_rows(
            change.io, schema, [r for r in refs if not r.is_delete], columns, self.filter.keys, schemas=history
        )
        deletes = read_change_rows(
            change.io,
            schema,
            [r for r in refs if r.is_delete],
            delete_columns(config, keys, columns),
            self.filter.keys,
            schemas=history,
        )
        if is_maskable(tasks):
            data, live, lsn = read_base_keyed(base, tasks, transaction_ids, projected, base_filter)
        else:
            tagged = read_base_rows(base, tasks, transaction_ids, projected, base_filter)
            data, live, lsn = tagged.drop_columns([LSN]), None, tagged.column(LSN).to_numpy()
        # Read by the value filter, the BaseStore may leave out a newer row that hides a change row.
        conflicts = [] if whole else self._conflicting_base(refs, keys, group)
        settled = [*conflicts, Settled(data.select(base_columns), lsn, live)]
        merged = merge_group(config, keys, settled, Tail(inserts, deletes))
        # The value filter has judged the BaseStore rows read by it, not the tail's rows (nor,
        # under a merge engine, any merged row).
        judged, unjudged = ([], merged.rows) if whole else (merged.rows[:-1], merged.rows[-1:])
        rows = [*judged, *(keep_rows(part, self._matches(part, schema)) for part in unjudged)]
        return pa.concat_tables([part.select(output) for part in rows], promote_options="permissive")

    def _base_tasks(self, row_filter: BooleanExpression, group: FileGroup | None = None) -> list[FileScanTask]:
        """BaseStore tasks that ``row_filter`` may match (planned once per scan), of ``group`` only when given."""
        if self.base_snapshot is None:
            return []
        planned = self._planned.get(id(row_filter))
        if planned is None:
            planned = plan_scan_tasks(self.table.base_store, self.base_snapshot, row_filter, case_sensitive=self.case_sensitive)
            if self.key_hashes is not None:
                planned = [t for t in planned if node_admits(parse_base(t.file.file_path).node, self.key_hashes)]
            self._planned[id(row_filter)] = planned
        return planned if group is None else [t for t in planned if t.file.file_path in group.base_paths]

    def _filter_only(self, needed: Sequence[str]) -> list[str]:
        """Columns the row filter reads that the output does not need."""
        schema = self.table.schema()
        if isinstance(self.filter.full, AlwaysTrue):
            return []
        ids = extract_field_ids(bind(schema, self.filter.full, case_sensitive=self.case_sensitive))
        names = {f.name for f in prune_columns(schema, ids, select_full_types=True).fields}  # a struct's field: its column
        return [n for n in top_level_names(schema) if n in names and n not in needed]

    def _matches(self, rows: pa.Table, schema: Schema) -> npt.NDArray[np.bool_]:
        """Which ``rows`` pass the whole row filter (the tail was read by key predicates only)."""
        if isinstance(self.filter.full, AlwaysTrue) or rows.num_rows == 0:
            return np.ones(rows.num_rows, dtype=bool)
        condition = arrow_filter(bind(schema, self.filter.full, case_sensitive=self.case_sensitive), schema)
        match = (
            ds.dataset(rows.drop_columns([c for c in (LSN,) if c in rows.column_names]))
            .to_table(columns={"m": condition})
            .column("m")
        )
        matched: npt.NDArray[np.bool_] = pc.fill_null(match, False).to_numpy(zero_copy_only=False)
        return matched

    def _conflicting_base(self, refs: Sequence[ChangeFileRef], keys: list[str], group: FileGroup | None = None) -> list[Settled]:
        """Keys of base rows that may be newer than tail rows (a base file whose transaction id
        is not below the tail's), whatever the value filter: such a row hides an older change
        row even when the filter drops it. Written only by engines that load the BaseStore
        while the ChangeStore holds unmerged rows; none of ours does."""
        oldest = min(r.transaction_id for r in refs)
        base = self.table.base_store
        # From the cached manifest entries first: planning again is only worth it when some file may conflict.
        if not any(
            live.data_file.content == DataFileContent.DATA and parse_base(live.data_file.file_path).transaction_id >= oldest
            for live in live_files(base, self.base_snapshot)
        ):
            return []
        candidates = [
            t for t in self._base_tasks(self.filter.keys, group) if parse_base(t.file.file_path).transaction_id >= oldest
        ]
        if not candidates:
            return []
        schema = self.table.schema().select(*keys, case_sensitive=self.case_sensitive)
        rows, counts = read_positional(self.table.base_store, candidates, schema)
        lsn = np.repeat(base_lsn([parse_base(t.file.file_path).transaction_id for t in candidates]), counts)
        return [Settled(rows.select(keys), lsn, emit=False)]

    def _admits_change_file(self) -> Callable[[DataFile], bool] | None:
        """Whether a change file's partition and key metrics may match the key predicates."""
        change = self.table.change_store
        if change is None or isinstance(self.filter.keys, AlwaysTrue):
            return None
        evaluators = ScanEvaluators(change.metadata, change.io, self.filter.keys, case_sensitive=self.case_sensitive)
        hashes = self.key_hashes

        def admit(data_file: DataFile) -> bool:
            # The node from the file's name first (a string parse): cheaper than its metrics.
            if hashes is not None and not node_admits(parse_change(data_file.file_path, 0).node, hashes):
                return False
            return evaluators.partition(data_file.spec_id)(data_file) and evaluators.metrics(data_file)

        return admit

    def _change_refs(self, group: FileGroup | None = None) -> list[ChangeFileRef]:
        """ChangeStore files above their partition's optimized sequence that the key predicates admit.

        Partitions are pruned by key predicates only: a key may move between partitions of a
        table partitioned by a non-key column, and its newer row elsewhere still hides the old."""
        change = self.table.change_store
        if change is None or self.change_snapshot is None:
            return []
        if self._refs is None:
            optimized = read_optimized_sequence(self.table.base_store, self.base_snapshot)
            self._refs = plan_change_files(
                change,
                live_files(change, self.change_snapshot, above_sequence=merged_through(change, optimized)),
                self._partitions,
                optimized,
                to_sequence=self.change_to_sequence,
                admit=self._admits_change_file(),
            )
        return self._refs if group is None else [r for r in self._refs if r.path in group.change_paths]
