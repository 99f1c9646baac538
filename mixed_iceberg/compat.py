"""Narrow, tested adjustments to pyiceberg 0.12 that Amoro's format needs.

pyiceberg 0.12 validates statistics blob types against a closed list (theta sketches and
deletion vectors). Amoro >= 0.6 attaches ``optimized-sequence`` and ``base-optimized-time``
blobs to BaseStore snapshots, so without this pyiceberg cannot even load a table that Amoro
(or we) optimized. The Iceberg spec leaves blob types open; we widen the field to ``str``.
"""

from __future__ import annotations

from pydantic import BaseModel
from pyiceberg.table import metadata, statistics, update

__all__ = ["apply"]

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
