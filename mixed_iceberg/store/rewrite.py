"""Row-delta and manifest-rewrite snapshots with this package's manifest reads and options.

The seam (:mod:`mixed_iceberg._pyiceberg.row_delta`, :mod:`~mixed_iceberg._pyiceberg.rewrite_manifests`)
builds the snapshots on pyiceberg's private producers and imports nothing of ours; this module
hands it what it needs: reads that name damage (:mod:`mixed_iceberg.store.damage`), the cached
live entries of :mod:`mixed_iceberg.store.manifests.live_files`, and the table's manifest-merge
options read through the option registry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyiceberg.manifest import DataFile
from pyiceberg.table import Transaction
from pyiceberg.table.snapshots import Operation
from pyiceberg.typedef import EMPTY_DICT

from mixed_iceberg._pyiceberg import row_delta
from mixed_iceberg._pyiceberg.access import ManifestAccess, ManifestMerge
from mixed_iceberg._pyiceberg.transaction import transaction_table
from mixed_iceberg.config.registry import MANIFEST_MERGE_ENABLED, MANIFEST_MIN_COUNT_TO_MERGE, MANIFEST_TARGET_SIZE
from mixed_iceberg.store.damage import MANIFEST, MANIFEST_LIST, reading
from mixed_iceberg.store.manifests.live_files import manifest_entries, remember_entries

__all__ = ["MANIFEST_ACCESS", "manifest_merge", "stage_rewrite"]

#: Manifest reads for the seam's producers: damage named, live entries cached by path.
MANIFEST_ACCESS = ManifestAccess(
    manifest_list=lambda io, location: reading(io, MANIFEST_LIST, location),
    manifest=lambda io, location: reading(io, MANIFEST, location),
    live_entries=manifest_entries,
    remember=remember_entries,
)


def manifest_merge(properties: Mapping[str, str], table: str) -> ManifestMerge:
    """The table's manifest-merge options, read through the option registry: Iceberg's defaults
    (pyiceberg's merge default is off, Java's is on), and a zero or bad value is the registry's
    ``PropertyError``, not a default."""
    return ManifestMerge(
        enabled=MANIFEST_MERGE_ENABLED.read(properties, table),
        min_count=MANIFEST_MIN_COUNT_TO_MERGE.read(properties, table),
        target_size=MANIFEST_TARGET_SIZE.read(properties, table),
    )


def stage_rewrite(
    txn: Transaction,
    *,
    add_data: Sequence[DataFile] = (),
    remove_data: Sequence[DataFile] = (),
    add_deletes: Sequence[DataFile] = (),
    remove_deletes: Sequence[DataFile] = (),
    snapshot_properties: Mapping[str, str] = EMPTY_DICT,
    operation: Operation | None = None,
) -> int:
    """Stage one snapshot that adds and removes data and delete files (see
    :func:`mixed_iceberg._pyiceberg.row_delta.stage_rewrite`); the id of the staged snapshot."""
    name = ".".join(transaction_table(txn).name())
    return row_delta.stage_rewrite(
        txn,
        access=MANIFEST_ACCESS,
        merge=manifest_merge(txn.table_metadata.properties, name),
        add_data=add_data,
        remove_data=remove_data,
        add_deletes=add_deletes,
        remove_deletes=remove_deletes,
        snapshot_properties=snapshot_properties,
        operation=operation,
    )
