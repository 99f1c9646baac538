"""Narrow, tested adjustments to pyiceberg 0.12 that Amoro's format needs.

pyiceberg 0.12 validates statistics blob types against a closed list (theta sketches and
deletion vectors). Amoro >= 0.6 attaches ``optimized-sequence`` and ``base-optimized-time``
blobs to BaseStore snapshots, so without this pyiceberg cannot even load a table that Amoro
(or we) optimized. The Iceberg spec leaves blob types open; we widen the field to ``str``.

pyiceberg 0.12 also ends every metadata update with a deep copy of the whole metadata
(iceberg-python #2673): about 30 ms at 200 snapshots, three times per commit.
:func:`updated_metadata` applies the same updates without that copy.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel
from pyiceberg.table import metadata, statistics, update
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import TableUpdate
from pyiceberg.utils.datetime import datetime_to_millis

__all__ = ["apply", "updated_metadata"]

_applied = False


def apply() -> None:
    """Widen ``BlobMetadata.type`` to any string (idempotent)."""
    global _applied
    if _applied:
        return
    statistics.BlobMetadata.model_fields["type"].annotation = str
    # Every model that embeds BlobMetadata caches a validator built from the old field.
    for module in (statistics, metadata, update):
        for value in list(vars(module).values()):
            if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == module.__name__:
                value.model_rebuild(force=True)
    _applied = True


def updated_metadata(
    base: TableMetadata, updates: tuple[TableUpdate, ...], metadata_location: str | None = None
) -> TableMetadata:
    """``base`` with ``updates`` applied, as pyiceberg's ``update_table_metadata``, minus its deep copy.

    The copy is defensive only: metadata models are frozen and every update builds new
    lists and dicts (pyiceberg 0.12's ``_apply_table_update``), so the result may share the
    unchanged parts with ``base``. ``base`` itself is returned when there is nothing to apply.
    """
    if not updates:
        return base
    context = update._TableMetadataUpdateContext()
    new = base
    for change in updates:
        new = update._apply_table_update(change, new, context)
    if context.has_changes():
        if metadata_location:
            new = update._update_table_metadata_log(new, metadata_location, base.last_updated_ms)
        if base.last_updated_ms == new.last_updated_ms:
            new = new.model_copy(update={"last_updated_ms": datetime_to_millis(datetime.now().astimezone())})
    new.spec().check_compatible(new.schema())
    new.sort_order().check_compatible(new.schema())
    return new
