"""Apply a commit's updates to a table's metadata: pyiceberg's ``update_table_metadata``, with an
``upgrade-format-version`` to 3 done first by :func:`.v3.upgraded_to_v3` (pyiceberg refuses that
one update, and applies the others to a v3 table; Java clients send the upgrade first)."""

from __future__ import annotations

from collections.abc import Sequence

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import TableUpdate, UpgradeFormatVersionUpdate, update_table_metadata

from mixed_iceberg._pyiceberg.patches import updated_metadata
from mixed_iceberg.service.v3 import upgraded_to_v3, with_row_lineage

__all__ = ["apply_updates"]


def apply_updates(
    base: TableMetadata, updates: Sequence[TableUpdate], *, creating: bool, metadata_location: str | None
) -> TableMetadata:
    """``base`` with ``updates`` applied; ``creating``: validate the result as a whole (a new table).

    Raises:
        ValueError, ValidationError: an update does not apply.
    """
    to_v3 = any(isinstance(u, UpgradeFormatVersionUpdate) and u.format_version >= 3 for u in updates)
    rest = tuple(u for u in updates if not (isinstance(u, UpgradeFormatVersionUpdate) and u.format_version >= 3))
    metadata = upgraded_to_v3(base) if to_v3 else base
    if rest and creating:
        metadata = update_table_metadata(metadata, rest, enforce_validation=True)
    elif rest:  # the seam's copy-free equal of update_table_metadata (most of a commit's CPU was its deep copy)
        metadata = updated_metadata(metadata, rest, metadata_location)
    return with_row_lineage(metadata)
