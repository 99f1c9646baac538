"""Schema evolution of a table: ``with table.update_schema() as update: update.rename_column(...)``.

Both stores of a keyed table take the same schema, field ids included: a column keeps its
field id across renames, so every reader resolves columns by id (DESIGN.md, invariant 8) and
change files written before a rename still read under the new name.

The order is Amoro's (``KeyedSchemaUpdate``): the BaseStore, whose schema is the table's, is
committed first, through pyiceberg's ``UpdateSchema``; the ChangeStore then takes that exact
schema. A crash between the two commits leaves the ChangeStore one schema behind, and
:func:`complete_schema_change` (run by ``MixedCatalog.load_table`` and ``MixedTable.refresh``)
finishes the change: whenever the stores' current schemas differ, the BaseStore's is the one
meant, as in Amoro's ``KeyedSchemaUpdate.syncSchema``. No marker is needed, and a table Amoro's
Java client left half-evolved is repaired the same way. Readers are right in between too: they
take the BaseStore's schema and read every file by field id.

Refused, before either store changes (:class:`~mixed_iceberg.exceptions.SchemaEvolutionError`):
dropping, renaming, retyping or making optional a primary-key column, changing the identifier
fields, taking a reserved column name, dropping a partition source column, and a change that
leaves ``self-optimizing.filter`` naming a column the schema no longer has.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyiceberg.exceptions import CommitFailedException, ResolveError, ValidationError
from pyiceberg.schema import Schema
from pyiceberg.table import Table, Transaction
from pyiceberg.table.update import (
    AddSchemaUpdate,
    AssertCurrentSchemaId,
    AssertLastAssignedFieldId,
    SetCurrentSchemaUpdate,
    TableUpdate,
)
from pyiceberg.table.update.schema import UpdateSchema
from pyiceberg.types import IcebergType

from mixed_iceberg.exceptions import CommitConflictError, PropertyError, SchemaEvolutionError
from mixed_iceberg.schema import RESERVED_COLUMNS, RESERVED_PREFIX, top_level_names
from mixed_iceberg.table_properties import optimizing_filter

if TYPE_CHECKING:
    from mixed_iceberg.handle import TableHandle

__all__ = ["MixedSchemaUpdate", "complete_schema_change"]

log = logging.getLogger(__name__)

_RETRIES = 5
#: What pyiceberg's UpdateSchema raises for a change it refuses.
_REFUSED = (ValueError, ValidationError, ResolveError)


def _path(path: str | tuple[str, ...]) -> tuple[str, ...]:
    return (path,) if isinstance(path, str) else tuple(path)


class MixedSchemaUpdate:
    """pyiceberg's schema-update verbs, applied to every store of a table on exit.

    Each verb is checked at once (a key column, a reserved name) and applied to pyiceberg's
    ``UpdateSchema`` of the BaseStore, which checks the rest; the whole change is checked again,
    field id by field id, before the BaseStore commits. A commit that loses a race with another
    commit of the BaseStore is replayed on its new metadata.

    >>> with table.update_schema() as update:                           # doctest: +SKIP
    ...     update.rename_column("plan", "tier")
    ...     update.add_column("score", LongType())
    """

    def __init__(
        self,
        table: TableHandle,
        *,
        allow_incompatible_changes: bool = False,
        case_sensitive: bool = True,
        after_commit: Callable[[], object] | None = None,
    ) -> None:
        self._table = table
        self._after_commit = after_commit
        self._allow_incompatible = allow_incompatible_changes
        self._case_sensitive = case_sensitive
        self._calls: list[Callable[[UpdateSchema], Any]] = []
        self._txn, self._update = self._open()
        self._keys = set(table.primary_key)

    def _open(self) -> tuple[Transaction, UpdateSchema]:
        txn = self._table.base_store.transaction()
        return txn, txn.update_schema(self._allow_incompatible, self._case_sensitive)

    def _apply(self, verb: str, *args: Any, **kwargs: Any) -> MixedSchemaUpdate:
        def call(update: UpdateSchema) -> Any:
            return getattr(update, verb)(*args, **kwargs)

        try:
            call(self._update)
        except _REFUSED as exc:
            raise SchemaEvolutionError(f"table {self._table.name}: {verb}{args!r} refused: {exc}") from exc
        self._calls.append(call)
        return self

    def _refuse_key(self, path: str | tuple[str, ...], what: str) -> None:
        parts = _path(path)
        name = parts[0] if len(parts) == 1 else None
        if name is not None and (
            name in self._keys or (not self._case_sensitive and name.lower() in {k.lower() for k in self._keys})
        ):
            raise SchemaEvolutionError(
                f"table {self._table.name}: cannot {what} primary-key column {name!r}; "
                f"expected a value column, the key is {sorted(self._keys)}"
            )

    def _refuse_reserved(self, name: str) -> None:
        if name.lower() in RESERVED_COLUMNS or name.startswith(RESERVED_PREFIX):
            raise SchemaEvolutionError(
                f"table {self._table.name}: expected a column name other than the reserved {list(RESERVED_COLUMNS)} "
                f"and names starting with {RESERVED_PREFIX!r}, found {name!r}"
            )

    # -- pyiceberg's verbs -------------------------------------------------------------------------
    def add_column(
        self,
        path: str | tuple[str, ...],
        field_type: IcebergType,
        doc: str | None = None,
        required: bool = False,
    ) -> MixedSchemaUpdate:
        """Add a column (optional unless ``required`` and incompatible changes are allowed)."""
        if len(_path(path)) == 1:
            self._refuse_reserved(_path(path)[0])
        return self._apply("add_column", path, field_type, doc, required)

    def delete_column(self, path: str | tuple[str, ...]) -> MixedSchemaUpdate:
        """Drop a value column: its values are gone, and a column added later by its name is another column."""
        self._refuse_key(path, "drop")
        return self._apply("delete_column", path)

    def rename_column(self, path_from: str | tuple[str, ...], new_name: str) -> MixedSchemaUpdate:
        """Rename a value column; rows written before read under the new name (same field id)."""
        self._refuse_key(path_from, "rename")
        if len(_path(path_from)) == 1:
            self._refuse_reserved(new_name)
        return self._apply("rename_column", path_from, new_name)

    def update_column(
        self,
        path: str | tuple[str, ...],
        field_type: IcebergType | None = None,
        required: bool | None = None,
        doc: str | None = None,
    ) -> MixedSchemaUpdate:
        """Widen a column's type (int -> long, float -> double, decimal precision), make it
        optional, or change its doc. A key column's doc may change; nothing else of it."""
        if field_type is not None:
            self._refuse_key(path, "change the type of")
        if required is False:
            self._refuse_key(path, "make optional")
        return self._apply("update_column", path, field_type, required, doc)

    def make_column_optional(self, path: str | tuple[str, ...]) -> MixedSchemaUpdate:
        """Make a value column optional."""
        self._refuse_key(path, "make optional")
        return self._apply("make_column_optional", path)

    def move_first(self, path: str | tuple[str, ...]) -> MixedSchemaUpdate:
        """Move a column to the front."""
        return self._apply("move_first", path)

    def move_before(self, path: str | tuple[str, ...], before_path: str | tuple[str, ...]) -> MixedSchemaUpdate:
        """Move a column right before another."""
        return self._apply("move_before", path, before_path)

    def move_after(self, path: str | tuple[str, ...], after_path: str | tuple[str, ...]) -> MixedSchemaUpdate:
        """Move a column right after another."""
        return self._apply("move_after", path, after_path)

    def union_by_name(self, new_schema: Schema | pa.Schema) -> MixedSchemaUpdate:
        """Add the columns of ``new_schema`` the table lacks, and widen those it has (by name)."""
        names = new_schema.names if isinstance(new_schema, pa.Schema) else [f.name for f in new_schema.fields]
        existing = set(top_level_names(self._table.schema()))
        for name in names:
            if name not in existing:
                self._refuse_reserved(name)
        return self._apply("union_by_name", new_schema)

    # -- commit ------------------------------------------------------------------------------------
    def commit(self) -> None:
        """Commit the change to the BaseStore, then the same schema to the ChangeStore.

        Raises:
            SchemaEvolutionError: the change is refused; no store changed.
            CommitConflictError: the BaseStore's schema changed meanwhile in a way the change no
                longer applies to, or retries ran out.
        """
        table = self._table
        base = table.base_store
        for attempt in range(_RETRIES + 1):
            if attempt:
                time.sleep(min(1.0, 0.05 * 2**attempt))
                base.refresh()
                self._txn, self._update = self._open()
                try:
                    for call in self._calls:
                        call(self._update)
                except _REFUSED as exc:
                    raise CommitConflictError(
                        f"table {table.name}: the schema changed meanwhile and the change no longer applies: {exc}"
                    ) from exc
            before = base.schema()
            try:
                self._update.commit()
            except _REFUSED as exc:
                raise SchemaEvolutionError(f"table {table.name}: schema change refused: {exc}") from exc
            target = self._txn.table_metadata.schema()
            check_schema_change(table, before, target)
            if target == before:
                break
            try:
                self._txn.commit_transaction()
            except CommitFailedException as exc:
                if attempt == _RETRIES:
                    raise CommitConflictError(
                        f"table {table.name}: schema change lost {attempt + 1} races with other BaseStore commits: {exc}"
                    ) from exc
                continue
            log.info("%s: BaseStore schema %d -> %d", table.name, before.schema_id, base.schema().schema_id)
            break
        complete_schema_change(table)

    def __enter__(self) -> MixedSchemaUpdate:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
            if self._after_commit is not None:
                self._after_commit()  # the facade's refresh: its handle then has the new schema


def check_schema_change(table: TableHandle, before: Schema, after: Schema) -> None:
    """Refuse a schema change a Mixed-Iceberg table cannot take (see the module docstring).

    Raises:
        SchemaEvolutionError: naming the column and what was expected.
    """
    name = table.name
    for key in table.primary_key:
        old = before.find_field(key)
        new = _field_by_id(after, old.field_id)
        if new is None:
            raise SchemaEvolutionError(f"table {name}: cannot drop primary-key column {key!r}")
        if new.name != old.name:
            raise SchemaEvolutionError(
                f"table {name}: cannot rename primary-key column {key!r} to {new.name!r}; "
                "the key's names are stored in mixed-format.primary-key-fields"
            )
        if new.field_type != old.field_type:
            raise SchemaEvolutionError(
                f"table {name}: primary-key column {key!r} expected type {old.field_type}, found {new.field_type}; "
                "rows are hashed into tree nodes by the key's type"
            )
        if old.required and not new.required:
            raise SchemaEvolutionError(f"table {name}: primary-key column {key!r} must stay required")
    if set(before.identifier_field_ids) != set(after.identifier_field_ids):
        raise SchemaEvolutionError(
            f"table {name}: identifier fields expected {sorted(before.identifier_field_ids)} (the primary key), "
            f"found {sorted(after.identifier_field_ids)}"
        )
    old_names = set(top_level_names(before))
    taken = [
        f.name
        for f in after.fields
        if f.name not in old_names and (f.name.lower() in RESERVED_COLUMNS or f.name.startswith(RESERVED_PREFIX))
    ]
    if taken:
        raise SchemaEvolutionError(
            f"table {name}: expected column names other than the reserved {list(RESERVED_COLUMNS)} "
            f"and names starting with {RESERVED_PREFIX!r}, found {taken}"
        )
    for partition_field in table.base_store.spec().fields:
        if _field_by_id(after, partition_field.source_id) is None:
            raise SchemaEvolutionError(
                f"table {name}: cannot drop column {before.find_column_name(partition_field.source_id)!r}, "
                f"the source of partition field {partition_field.name!r}"
            )
    try:
        optimizing_filter(table.base_store.properties, after, name)
    except PropertyError as exc:
        raise SchemaEvolutionError(f"table {name}: the change breaks self-optimizing.filter; change it first: {exc}") from exc
    change = table.change_store
    if change is not None and change.metadata.last_column_id > table.base_store.metadata.last_column_id:
        raise SchemaEvolutionError(
            f"table {name}: the ChangeStore has assigned field ids up to {change.metadata.last_column_id}, "
            f"the BaseStore only up to {table.base_store.metadata.last_column_id}; expected the BaseStore's to be "
            "the larger (new columns would reuse ids of the ChangeStore's)"
        )


def _field_by_id(schema: Schema, field_id: int) -> Any:
    try:
        return schema.find_field(field_id)
    except ValueError:
        return None


def _set_schema(store: Table, target: Schema) -> None:
    """Make ``target`` (field ids as they are) ``store``'s current schema, in one commit."""
    meta = store.metadata
    existing = next((s for s in meta.schemas if s == target), None)
    updates: tuple[TableUpdate, ...]
    if existing is not None:
        updates = (SetCurrentSchemaUpdate(schema_id=existing.schema_id),)
    else:
        taken = {s.schema_id for s in meta.schemas}
        schema_id = target.schema_id if target.schema_id not in taken else max(taken) + 1
        updates = (
            AddSchemaUpdate(schema_=target.model_copy(update={"schema_id": schema_id})),
            SetCurrentSchemaUpdate(schema_id=-1),
        )
    requirements = (
        AssertCurrentSchemaId(current_schema_id=meta.current_schema_id),
        AssertLastAssignedFieldId(last_assigned_field_id=meta.last_column_id),
    )
    store.catalog.commit_table(store, requirements, updates)
    store.refresh()


def complete_schema_change(table: TableHandle) -> bool:
    """Give the ChangeStore the BaseStore's schema when they differ (a schema change cut short
    between its two commits); True when it had to. Compares the stores' loaded metadata only.

    Raises:
        CommitConflictError: retries ran out against other ChangeStore commits.
    """
    change = table.change_store
    if change is None:
        return False
    target = table.base_store.schema()
    if change.schema() == target:
        return False
    for attempt in range(_RETRIES + 1):
        try:
            _set_schema(change, target)
            break
        except CommitFailedException as exc:
            change.refresh()
            if change.schema() == target:
                break
            if attempt == _RETRIES:
                raise CommitConflictError(
                    f"table {table.name}: ChangeStore schema sync lost {attempt + 1} races with other commits: {exc}"
                ) from exc
            time.sleep(min(1.0, 0.05 * 2**attempt))
    log.info("%s: ChangeStore schema set to the BaseStore's (schema %d)", table.name, target.schema_id)
    return True
