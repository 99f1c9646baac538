"""``MixedTable``: a Mixed-Iceberg table (BaseStore + ChangeStore) or a plain Iceberg table.

>>> from mixed_iceberg import load_catalog                          # doctest: +SKIP
>>> table = load_catalog("local").load_table("db.orders")           # doctest: +SKIP
>>> with table.new_transaction() as txn:                            # doctest: +SKIP
...     txn.write(changes)   # user columns + _change_action (+I -U +U -D)
>>> table.scan(row_filter="id < 100").to_arrow()                   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime

import pyarrow as pa
from pyiceberg import exceptions as ice
from pyiceberg.expressions import BooleanExpression
from pyiceberg.schema import Schema
from pyiceberg.table import Table

from mixed_iceberg.basestore.bulk_load import LoadInput, bulk_load
from mixed_iceberg.changestore.transaction import ChangeTransaction
from mixed_iceberg.config.merge import MergeConfig
from mixed_iceberg.config.table import TableConfig
from mixed_iceberg.exceptions import InvalidScanError, NoSuchTableError, NotKeyedTableError
from mixed_iceberg.format import WriterIdentity
from mixed_iceberg.handle import TableHandle
from mixed_iceberg.optimizing.engine import TableOptimizing
from mixed_iceberg.optimizing.maintenance.facade import TableMaintenance
from mixed_iceberg.reader.changes import ChangeScan
from mixed_iceberg.reader.history import table_history, table_snapshots
from mixed_iceberg.reader.scan import MixedScan
from mixed_iceberg.schema_evolution import MixedSchemaUpdate, complete_schema_change
from mixed_iceberg.store.commit import CommitOutcome
from mixed_iceberg.table_properties import update_properties
from mixed_iceberg.typedef import CommitId, TableFormat

__all__ = ["MixedTable"]


def _epoch_ms(value: datetime | date | str | int | None, table: str) -> int | None:
    """``as_of`` in epoch milliseconds: a datetime or date (naive means UTC), an ISO-8601 string
    of one, or epoch milliseconds.

    Raises:
        InvalidScanError: a string that is no ISO-8601 date or time, or another type.
    """
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError as exc:
            raise InvalidScanError(
                f"{table}: as_of expected an ISO-8601 date or time such as '2024-01-01' or '2024-01-01T12:00:00+02:00', "
                f"found {value!r}"
            ) from exc
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if not isinstance(value, datetime):
        raise InvalidScanError(
            f"{table}: as_of expected a datetime, a date, an ISO-8601 string or epoch milliseconds, found {type(value).__name__}"
        )
    moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _commit_id(value: CommitId | tuple[str, int] | None) -> CommitId | None:
    if value is None or isinstance(value, CommitId):
        return value
    writer, sequence = value
    return CommitId(writer, int(sequence))


class MixedTable:
    """A table loaded through a mixed-iceberg catalog: the facade over its :class:`TableHandle`.

    Keyed Mixed-Iceberg tables have a ``change_store``; unkeyed ones and plain Iceberg
    tables are their ``base_store`` alone. The facade is the one place that refreshes: each
    refresh gives a fresh :attr:`handle` (stores, key, parsed :attr:`config`), which is what
    scans, transactions, loads, optimizing and maintenance are given.

    Raises:
        PropertyError: (at load and refresh) a layout property holds a bad value.
    """

    def __init__(
        self, name: str, table_format: TableFormat, base_store: Table, change_store: Table | None, primary_key: Sequence[str]
    ) -> None:
        self.handle = TableHandle.of(name, table_format, base_store, change_store, primary_key)

    @property
    def name(self) -> str:
        return self.handle.name

    @property
    def format(self) -> TableFormat:
        return self.handle.format

    @property
    def base_store(self) -> Table:
        return self.handle.base_store

    @property
    def change_store(self) -> Table | None:
        return self.handle.change_store

    @property
    def primary_key(self) -> tuple[str, ...]:
        return self.handle.primary_key

    @property
    def config(self) -> TableConfig:
        """The table's configuration as of the last load or refresh (layout, optimizing,
        maintenance, merge), each part parsed once."""
        return self.handle.config

    def __repr__(self) -> str:
        kind = "keyed" if self.is_keyed else "unkeyed" if self.format == TableFormat.MIXED_ICEBERG else "iceberg"
        return f"MixedTable({self.name!r}, {kind}, primary_key={list(self.primary_key)})"

    @property
    def is_keyed(self) -> bool:
        """True for Mixed-Iceberg tables with a primary key (and so a ChangeStore)."""
        return self.handle.is_keyed

    @property
    def properties(self) -> dict[str, str]:
        """Table properties (the BaseStore's, as in Amoro)."""
        return dict(self.base_store.properties)

    @property
    def merge_config(self) -> MergeConfig:
        """The table's merge engine and its options (``merge-engine``, ``sequence.field``, ...)."""
        return self.handle.merge_config

    def schema(self) -> Schema:
        """The Iceberg schema, shared by both stores."""
        return self.handle.schema()

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of merged reads."""
        return self.handle.arrow_schema()

    def refresh(self) -> MixedTable:
        """Reload both stores' metadata, and parse the configuration again.

        Raises:
            NoSuchTableError: the table was renamed or dropped since this object was loaded.
            CorruptTableError: a metadata file does not parse (``CorruptFileError``) or is gone.
        """
        handle = self.handle
        for store in (handle.base_store, handle.change_store):
            if store is None:
                continue
            try:
                store.refresh()
            except ice.NoSuchTableError as exc:
                raise NoSuchTableError(
                    f"table {self.name}: expected it in its catalog under that name, found none (renamed or dropped "
                    f"since this object was loaded); load it again by its current name"
                ) from exc
        if handle.change_store is not None:
            complete_schema_change(handle)  # a schema change cut short between the stores' commits
        self.handle = TableHandle.of(handle.name, handle.format, handle.base_store, handle.change_store, handle.primary_key)
        return self

    def refreshed(self) -> TableHandle:
        """The :data:`~mixed_iceberg.handle.Refresh` the services are given."""
        return self.refresh().handle

    def update_schema(self, *, allow_incompatible_changes: bool = False, case_sensitive: bool = True) -> MixedSchemaUpdate:
        """Evolve the schema of every store (both of a keyed table), with pyiceberg's verbs.

        Columns keep their field ids, and every read resolves columns by id: rows written
        before a rename read under the new name, a dropped column's values never come back
        under a column later added by its name, widened types read widened.

        >>> with table.update_schema() as update:                                    # doctest: +SKIP
        ...     update.rename_column("plan", "tier")
        ...     update.add_column("score", LongType())

        Raises:
            SchemaEvolutionError: the change touches a primary-key column (drop, rename, type,
                optional), takes a reserved name, drops a partition source or breaks
                ``self-optimizing.filter``; nothing changed.
            CommitConflictError: other commits kept winning; retry.
        """
        return MixedSchemaUpdate(
            self.refreshed(),
            allow_incompatible_changes=allow_incompatible_changes,
            case_sensitive=case_sensitive,
            after_commit=self.refresh,
        )

    def update_properties(self, updates: Mapping[str, str] | None = None, removals: Iterable[str] = ()) -> MixedTable:
        """Set and remove table properties, on both stores of a keyed table (as Amoro does), then refresh.

        Values are checked as at create (the option registry, ``self-optimizing.filter``
        against the schema), and reserved keys refused, before either store changes. The
        counterpart of pyiceberg's ``with table.transaction() as t: t.set_properties(...)``.

        >>> table.update_properties({"self-optimizing.quota": "0.2"}, removals=["self-optimizing.filter"])  # doctest: +SKIP

        Raises:
            PropertyError: a reserved or unknown key, a value that does not parse, or a key
                both set and removed.
            CommitConflictError: another commit changed a store at the same moment; retry.
        """
        update_properties(self.handle, updates, removals)
        return self.refresh()

    def writer_identity(self, partition_id: int = 0, task_id: int = 0) -> WriterIdentity:
        """A fresh writer identity (file-name fields) for one writer task."""
        return WriterIdentity(partition_id=partition_id, task_id=task_id)

    def new_transaction(
        self,
        commit_id: CommitId | tuple[str, int] | None = None,
        *,
        summary: Mapping[str, str] | None = None,
        writer: WriterIdentity | None = None,
    ) -> ChangeTransaction:
        """A ChangeStore transaction; committing it twice with one ``commit_id`` is a no-op.

        Raises:
            NotKeyedTableError: the table has no ChangeStore.
        """
        if not self.is_keyed:
            raise NotKeyedTableError(f"{self.name}: change transactions need a keyed table; this one has no primary key")
        # No refresh here: the commit refreshes the ChangeStore itself, right before committing.
        # Unless the stores' loaded schemas differ (the ChangeStore was refreshed by a commit
        # after a schema change): rows are checked against one and written with the other.
        if self.change_store is not None and self.change_store.schema() != self.base_store.schema():
            self.refresh()
        return ChangeTransaction(self.handle, _commit_id(commit_id), summary=summary, writer=writer)

    def bulk_load(
        self, data: LoadInput, *, overwrite: bool = False, commit_id: CommitId | tuple[str, int] | None = None
    ) -> CommitOutcome:
        """Load rows straight into the BaseStore (initial snapshot, or ``overwrite`` everything).

        ``data`` is a ``pyarrow.Table`` or ``RecordBatch``, or a stream: a ``RecordBatchReader``,
        a ``pyarrow.dataset`` Dataset or Scanner, any iterable of batches. A stream is written as
        it is read, so memory is bounded by the files being written, not by the input
        (:func:`mixed_iceberg.basestore.bulk_load.bulk_load` says how repeated keys are kept).

        >>> table.bulk_load(pyarrow.dataset.dataset("export/", format="parquet"))  # doctest: +SKIP

        Raises:
            MissingKeyError: a key column holds nulls.
            SchemaMismatchError: the columns do not match the table.
            RepeatedKeyError: a stream repeats a key of a table whose merge engine combines a key's rows.
        """
        return bulk_load(self.refreshed(), data, overwrite=overwrite, commit_id=_commit_id(commit_id))

    def scan(
        self,
        row_filter: str | BooleanExpression | None = None,
        selected_fields: Sequence[str] = ("*",),
        snapshot_id: int | None = None,
        *,
        base_snapshot_id: int | None = None,
        as_of: datetime | date | str | int | None = None,
        case_sensitive: bool = True,
        limit: int | None = None,
    ) -> MixedScan:
        """The merged state per key (one row per key, the latest change wins; see docs/semantics.md).

        Args:
            row_filter: a pyiceberg expression or its string form. Key predicates are pushed
                to every file; value predicates never let an old version resurface.
            selected_fields: columns to return.
            snapshot_id: a snapshot of either store to read as of; the other store is read as
                of that snapshot's time.
            base_snapshot_id: BaseStore snapshot to pair with ``snapshot_id`` explicitly.
            as_of: read both stores as of a time: a datetime or date (naive means UTC), an
                ISO-8601 string of one (``"2024-01-01"``), or epoch milliseconds.
            case_sensitive: how column names in ``row_filter`` are matched.
            limit: return at most this many rows (as pyiceberg's ``Table.scan(limit=...)``);
                the read stops once it has them.

        Raises:
            NoSuchSnapshotError: neither store has ``snapshot_id``.
            SnapshotExpiredError: the state of that time needs a snapshot expiry removed.
            InvalidScanError: unknown ``selected_fields``, ``as_of`` with a snapshot id or not
                a time, or a negative ``limit``.
        """
        return MixedScan(
            self.refreshed(),
            row_filter=row_filter,
            selected_fields=selected_fields,
            snapshot_id=snapshot_id,
            base_snapshot_id=base_snapshot_id,
            case_sensitive=case_sensitive,
            as_of_ms=_epoch_ms(as_of, self.name),
            limit=limit,
        )

    def snapshots(self) -> pa.Table:
        """Every retained snapshot of both stores, oldest first: store, snapshot id, parent id,
        sequence number, commit time, operation, commit writer and sequence, optimizing type."""
        return table_snapshots(self.handle)

    def history(self) -> pa.Table:
        """When each store's current snapshot changed (the stores' snapshot logs), oldest first."""
        return table_history(self.handle)

    @property
    def optimizing(self) -> TableOptimizing:
        """Self-optimizing of this table: ``evaluate()``, ``plan(type)``, ``run(type)``."""
        return TableOptimizing(self.refreshed)

    @property
    def maintenance(self) -> TableMaintenance:
        """Snapshot expiry, orphan cleaning, change-data TTL, manifest rewriting."""
        return TableMaintenance(self.refreshed)

    def changes(
        self,
        from_snapshot: int | None = None,
        to_snapshot: int | None = None,
        *,
        row_filter: str | BooleanExpression | None = None,
        selected_fields: Sequence[str] = ("*",),
        case_sensitive: bool = True,
    ) -> ChangeScan:
        """Every change of the merged view after ``from_snapshot`` up to ``to_snapshot``
        (ChangeStore ids; none: from the empty table, up to now) as CDC rows, those whose image
        matches ``row_filter``, with ``selected_fields`` and the CDC columns. BaseStore commits
        that change the view (``bulk_load``, another engine's writes) are in it: replaying
        ``changes(a, b)`` onto ``scan(snapshot_id=a)`` gives ``scan(snapshot_id=b)``
        (docs/semantics.md).

        Raises:
            InvalidFilterError: the filter does not parse or names a column the table lacks.
            InvalidScanError: unknown ``selected_fields``, or ``from_snapshot`` after ``to_snapshot``.
            NoSuchSnapshotError: the ChangeStore has no such snapshot.
            SnapshotExpiredError: (on read) the range needs history that expiry or the
                change-data TTL removed.
        """
        return ChangeScan(
            self.refreshed(),
            from_snapshot=from_snapshot,
            to_snapshot=to_snapshot,
            row_filter=row_filter,
            selected_fields=selected_fields,
            case_sensitive=case_sensitive,
        )
