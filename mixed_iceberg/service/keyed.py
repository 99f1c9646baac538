"""What a plain REST client may change on a keyed table's stores.

A Mixed-Iceberg keyed table is two Iceberg tables (BaseStore ``db.t``, ChangeStore
``db.t_change_``) that hold one row per key only together: a row appended to either store by
a plain engine has no transaction id or file offset, is not routed to its tree node, and would
read back as a duplicate. So, on either store of a keyed table:

* a snapshot must carry mixed-iceberg's writer marker, the snapshot-summary property
  ``mixed-iceberg.commit.writer`` every commit of this library with a commit id sets
  (``store/commit.py``), or come in a request with the header ``X-Mixed-Iceberg-Writer``
  (mixed-iceberg's own REST client sends it on every request, for its commits without an id:
  bulk loads, optimizing, maintenance); else it is refused (403);
* moving a branch to a snapshot the commit does not add (a rollback, a cherry-pick) is refused:
  it would move one store without the other;
* schema, partition spec, sort order and location changes, and any change to Amoro's linking
  properties (``table-format``, ``mixed-format.*``), are refused unless the request carries the
  header ``X-Mixed-Iceberg-Writer`` (mixed-iceberg's own REST client): the two stores must change
  together, and a key column must not change;
* everything else passes: other properties (``self-optimizing.*``), snapshot expiry,
  statistics, tags, and branches other than ``main``.

The marker protects against mistakes, not against a client that fakes it (tokens do that).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSnapshotUpdate,
    AddSortOrderUpdate,
    RemovePartitionSpecsUpdate,
    RemovePropertiesUpdate,
    RemoveSchemasUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    SetLocationUpdate,
    SetPropertiesUpdate,
    SetSnapshotRefUpdate,
    TableUpdate,
)

from mixed_iceberg.catalog.markers import TABLE_FORMAT, WRITER_HEADER, primary_key_of, table_format_of
from mixed_iceberg.service.errors import refuse
from mixed_iceberg.store.commit import COMMIT_WRITER
from mixed_iceberg.typedef import TableFormat

__all__ = ["WRITER_HEADER", "WRITER_MARKER", "check_keyed_updates", "is_keyed_store"]

#: The snapshot-summary property that marks a snapshot as mixed-iceberg's own.
WRITER_MARKER = COMMIT_WRITER

_STRUCTURAL = (
    AddSchemaUpdate,
    SetCurrentSchemaUpdate,
    AddPartitionSpecUpdate,
    SetDefaultSpecUpdate,
    AddSortOrderUpdate,
    SetDefaultSortOrderUpdate,
    RemoveSchemasUpdate,
    RemovePartitionSpecsUpdate,
    SetLocationUpdate,
)


def is_keyed_store(properties: Mapping[str, str]) -> bool:
    """Whether a table with these properties is a store of a keyed Mixed-Iceberg table."""
    return table_format_of(properties) == TableFormat.MIXED_ICEBERG and bool(primary_key_of(properties))


def _linking(key: str) -> bool:
    return key == TABLE_FORMAT or key.startswith("mixed-format.")


def check_keyed_updates(name: str, base: TableMetadata, updates: Sequence[TableUpdate], *, ours: bool) -> None:
    """Refuse (403) what a plain client may not change on a keyed table's store ``name``."""
    if not is_keyed_store(base.properties):
        return
    added = {update.snapshot.snapshot_id for update in updates if isinstance(update, AddSnapshotUpdate)}
    for update in updates:
        if isinstance(update, AddSnapshotUpdate) and ours:
            continue  # mixed-iceberg's own client (the header): its commits without an id carry no marker
        if isinstance(update, AddSnapshotUpdate) and update.snapshot.summary is not None:
            if update.snapshot.summary[WRITER_MARKER] is None:
                refuse(
                    f"{name} is a store of a keyed Mixed-Iceberg table: a snapshot without mixed-iceberg's writer "
                    f"marker (summary property {WRITER_MARKER}) would break one row per key; write through "
                    f"mixed-iceberg (MixedTable) instead",
                    "forbidden",
                )
        elif isinstance(update, AddSnapshotUpdate):
            refuse(f"{name} is a store of a keyed Mixed-Iceberg table: a snapshot without a summary is refused", "forbidden")
        elif isinstance(update, SetSnapshotRefUpdate) and update.snapshot_id not in added and not ours:
            current = base.refs.get(update.ref_name)
            if update.ref_name == MAIN_BRANCH and (current is None or current.snapshot_id != update.snapshot_id):
                refuse(
                    f"{name} is a store of a keyed Mixed-Iceberg table: moving branch {update.ref_name} to "
                    f"snapshot {update.snapshot_id} would move one store without the other",
                    "forbidden",
                )
        elif isinstance(update, _STRUCTURAL) and not ours:
            refuse(
                f"{name} is a store of a keyed Mixed-Iceberg table: {update.action} must change both stores together; "
                f"use mixed-iceberg's MixedTable API (update_schema) or its REST client",
                "forbidden",
            )
        elif (isinstance(update, SetPropertiesUpdate) and not ours and any(_linking(k) for k in update.updates)) or (
            isinstance(update, RemovePropertiesUpdate) and not ours and any(_linking(k) for k in update.removals)
        ):
            refuse(
                f"{name} is a store of a keyed Mixed-Iceberg table: its table-format and mixed-format.* properties are fixed",
                "forbidden",
            )
