"""mixed-iceberg: Mixed-Iceberg streaming-upsert tables and their self-optimizing, in Python."""

from __future__ import annotations

from mixed_iceberg._pyiceberg import apply_patches as patch_pyiceberg
from mixed_iceberg.catalog import MixedCatalog, load_catalog
from mixed_iceberg.exceptions import MixedIcebergError
from mixed_iceberg.table import MixedTable
from mixed_iceberg.typedef import ChangeAction, CommitId, DataFileType, TableFormat

__all__ = [
    "ChangeAction",
    "CommitId",
    "DataFileType",
    "MixedCatalog",
    "MixedIcebergError",
    "MixedTable",
    "TableFormat",
    "load_catalog",
    "patch_pyiceberg",
]
