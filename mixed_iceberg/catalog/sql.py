"""The SQL catalog as mixed-iceberg runs it: the seam's cached SQL catalog with this package's hooks.

:class:`~mixed_iceberg._pyiceberg.sql_catalog.SqlCatalogWithCache` (the seam) overrides pyiceberg's
private hooks and exposes public ones; this subclass fills those in: a new table goes beside a
folder that still holds files (:mod:`mixed_iceberg.catalog.locations`), metadata JSON is written
with the history serialised once (:mod:`mixed_iceberg.catalog.metadata_json`), and a metadata
file that is gone or does not parse is damage named after its table (:mod:`mixed_iceberg.store.damage`).
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from pyiceberg.io import FileIO
from pyiceberg.table.metadata import TableMetadata

from mixed_iceberg._pyiceberg.sql_catalog import SqlCatalogWithCache
from mixed_iceberg.catalog.locations import location_taken
from mixed_iceberg.catalog.metadata_json import write_metadata
from mixed_iceberg.store.damage import METADATA_FILE, reading, register

__all__ = ["MixedSqlCatalog"]


class MixedSqlCatalog(SqlCatalogWithCache):
    """The SQL catalog behind ``type: sql`` in ``conf/catalogs.yaml``."""

    def location_taken(self, location: str) -> bool:
        return location_taken(location, self.properties)

    def write_metadata_file(self, metadata: TableMetadata, io: FileIO, metadata_path: str) -> None:
        write_metadata(metadata, io, metadata_path)  # pyiceberg's bytes, history serialised once

    def reading_metadata(self, io: FileIO, location: str, table: str) -> AbstractContextManager[object]:
        """Raises ``MissingFileError`` (gone) or ``CorruptFileError`` (does not parse), naming ``table``."""
        return reading(io, METADATA_FILE, location, table=table)

    def opened(self, io: FileIO, table: str) -> None:
        register(io, table)  # names the table in the errors of damaged files
