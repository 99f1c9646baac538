"""pyiceberg's SQL catalog, with table metadata parsed once per metadata file.

Overrides pyiceberg 0.12's private ``SqlCatalog`` hooks (``_write_metadata``,
``_update_and_stage_table``, ``_convert_orm_to_iceberg``, ``_resolve_table_location``) and
relies on its call order: ``commit_table`` loads the table it commits before staging it (the
thread-local ``_Attempt`` stands in for that load).

Every commit and every refresh used to re-read and re-parse the table's whole metadata JSON
(a cost growing with the snapshots), and every commit deep-copied it. Iceberg
metadata files are immutable, written once under a fresh name, so a parsed file can be kept
by its location: loading a table becomes one catalog query when its metadata is already
known, and a commit keeps the metadata it wrote. Conflict checks are unchanged: a commit
still loads the current location from the database, validates its requirements against
that metadata, and swaps the location with the database's compare-and-set.

Loading a table reads only its metadata location, through SQLAlchemy Core rather than an ORM
session (ORM work was most of a refresh that finds nothing new; the commit's components:
``.venv/bin/python -m bench.commit_profile``, ``bench/results/commit_profile-2026-12-06-4647a3f.json``).
A commit
first runs pyiceberg's commit with the committing table standing for the current one (the
commit path has just refreshed it): pyiceberg's compare-and-set on the metadata location then
proves it was current, and the SELECT pyiceberg runs first to find the current table is
skipped. When the swap finds another location, the metadata file that attempt wrote is
deleted (nothing references it) and pyiceberg's commit runs again as usual: load the current
metadata, validate the requirements against it, swap.

A SQLite catalog (the embedded default) runs in WAL mode with ``synchronous=NORMAL``: readers
and the one writer no longer block each other across processes (ingest and optimizer jobs
share the file), and a commit costs no fsync of the journal. A crash of the process loses
nothing committed; a power loss may lose the last commits but never corrupts the catalog.

A new table goes to ``<warehouse>/<db>/<table>`` unless :meth:`~SqlCatalogWithCache.location_taken`
says that folder still holds files; then to ``<warehouse>/<db>/<table>-<uuid>``.

The seam imports nothing of ours: what the layers above decide (whether a folder is taken, how
metadata JSON is written, how a damaged metadata file is reported, which table a ``FileIO``
reads) are public hook methods with plain defaults, overridden by
:class:`mixed_iceberg.catalog.sql.MixedSqlCatalog`.
"""

from __future__ import annotations

import logging
import threading
import uuid
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from pyiceberg.catalog import Catalog
from pyiceberg.catalog.sql import ICEBERG_TABLE_TYPE, IcebergTables, SqlCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.io import FileIO, load_file_io
from pyiceberg.serializers import FromInputFile
from pyiceberg.table import CommitTableResponse, StagedTable, Table
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import TableRequirement, TableUpdate
from pyiceberg.typedef import Identifier
from sqlalchemy import Select, bindparam, event, select

from mixed_iceberg._pyiceberg import apply_patches
from mixed_iceberg._pyiceberg.patches import updated_metadata
from mixed_iceberg.caching import LruCache

__all__ = ["MetadataCache", "SqlCatalogWithCache", "metadata_locations"]

log = logging.getLogger(__name__)


class MetadataCache(LruCache[str, TableMetadata]):
    """Parsed table metadata by metadata file location, the newest ``capacity`` entries."""

    def __init__(self, capacity: int = 64) -> None:
        super().__init__(capacity)


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


class SqlCatalogWithCache(SqlCatalog):
    """A :class:`SqlCatalog` that parses each metadata file once and commits without deep copies.

    The public hooks (:meth:`location_taken`, :meth:`write_metadata_file`,
    :meth:`reading_metadata`, :meth:`opened`) behave as pyiceberg does; a subclass above the
    seam gives them this package's behaviour.
    """

    def __init__(self, name: str, **properties: str) -> None:
        apply_patches()
        super().__init__(name, **properties)
        self.metadata_cache = MetadataCache()
        self._location_query = self._build_location_query()
        self._attempts = threading.local()  # the commit attempt of this thread, if any
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
            self.engine.dispose()  # pooled connections were opened before the listener

    def _resolve_table_location(self, location: str | None, database_name: str, table_name: str) -> str:
        """pyiceberg's default location, or a fresh one beside it when that folder holds files."""
        resolved = super()._resolve_table_location(location, database_name, table_name)
        if location or not self.location_taken(resolved):
            return resolved
        fresh = f"{resolved}-{uuid.uuid4().hex}"
        log.info("%s.%s: folder %s holds files of another table; created at %s", database_name, table_name, resolved, fresh)
        return fresh

    def table_location(self, location: str | None, namespace: str, table: str) -> str:
        """Where a new table ``namespace.table`` goes: ``location`` if given, else the default
        (beside a folder that still holds files), without creating anything."""
        return self._resolve_table_location(location, namespace, table)

    def location_taken(self, location: str) -> bool:
        """Hook: whether a new table must not go to ``location`` (pyiceberg: never)."""
        return False

    def write_metadata_file(self, metadata: TableMetadata, io: FileIO, metadata_path: str) -> None:
        """Hook: write a new metadata file (pyiceberg's writer)."""
        SqlCatalog._write_metadata(metadata, io, metadata_path)

    def reading_metadata(self, io: FileIO, location: str, table: str) -> AbstractContextManager[object]:
        """Hook: wraps the read of ``table``'s metadata file ``location`` (its errors unchanged)."""
        return nullcontext()

    def opened(self, io: FileIO, table: str) -> None:
        """Hook: ``io`` now reads the files of ``table`` (nothing to do)."""

    def _write_metadata(self, metadata: TableMetadata, io: FileIO, metadata_path: str) -> None:  # type: ignore[override]
        self.write_metadata_file(metadata, io, metadata_path)  # pyiceberg calls it on the instance

    def _build_location_query(self) -> Select[str | None]:
        query = select(IcebergTables.metadata_location).where(
            IcebergTables.catalog_name == self.name,
            IcebergTables.table_namespace == bindparam("namespace"),
            IcebergTables.table_name == bindparam("name"),
        )
        if self._schema_version == "v1":  # as pyiceberg's load_table: views are not tables
            query = query.where((IcebergTables.iceberg_type == ICEBERG_TABLE_TYPE) | (IcebergTables.iceberg_type.is_(None)))
        return query

    def load_table(self, identifier: str | Identifier) -> Table:
        """Load a table: one query for its metadata location, parsed metadata from the cache."""
        attempt: _Attempt | None = getattr(self._attempts, "current", None)
        if attempt is not None and not attempt.loaded and attempt.table.name() == Catalog.identifier_to_tuple(identifier):
            attempt.loaded = True  # pyiceberg's commit_table loading the table it commits
            return attempt.table
        location = self.metadata_location(identifier)
        if not location:
            return super().load_table(identifier)  # pyiceberg's path raises its NoSuchTableError
        namespace = Catalog.namespace_to_string(Catalog.namespace_from(identifier))
        return self._table_at(namespace, Catalog.table_name_from(identifier), location)

    def _convert_orm_to_iceberg(self, orm_table: IcebergTables) -> Table:
        location = orm_table.metadata_location
        if not location or not orm_table.table_namespace or not orm_table.table_name:
            return super()._convert_orm_to_iceberg(orm_table)  # raises the usual NoSuchTableError
        return self._table_at(orm_table.table_namespace, orm_table.table_name, location)

    def _table_at(self, namespace: str, name: str, location: str) -> Table:
        """The table whose current metadata file is ``location``.

        Raises:
            Exception: what :meth:`reading_metadata` makes of a metadata file that is gone or
                does not parse (``MissingFileError``, ``CorruptFileError`` in a subclass above).
        """
        metadata = self.metadata_cache.get(location)
        if metadata is None:
            io = load_file_io(properties=self.properties, location=location)
            with self.reading_metadata(io, location, f"{namespace}.{name}"):
                metadata = FromInputFile.table_metadata(io.new_input(location))
            self.metadata_cache.put(location, metadata)
        table = Table(
            identifier=(*Catalog.identifier_to_tuple(namespace), name),
            metadata=metadata,
            metadata_location=location,
            io=self._load_file_io(metadata.properties, location),
            catalog=self,
        )
        self.opened(table.io, f"{namespace}.{name}")
        return table

    def table_exists(self, identifier: str | Identifier) -> bool:
        """Whether the catalog has the table: one query, the metadata file not parsed (pyiceberg
        loads the table, so a table whose metadata is damaged would not exist)."""
        return self.metadata_location(identifier) is not None

    def metadata_location(self, identifier: str | Identifier) -> str | None:
        """The current metadata file of a table, as the catalog records it (None: no such
        table); read without parsing the file, so a table whose metadata is damaged has one."""
        namespace = Catalog.namespace_to_string(Catalog.namespace_from(identifier))
        name = Catalog.table_name_from(identifier)
        with self.engine.connect() as connection:
            location = connection.execute(self._location_query, {"namespace": namespace, "name": name}).scalar()
        return location or None

    def _update_and_stage_table(
        self,
        current_table: Table | None,
        table_identifier: Identifier,
        requirements: tuple[TableRequirement, ...],
        updates: tuple[TableUpdate, ...],
    ) -> StagedTable:
        if current_table is None:  # a new table: pyiceberg's path, with its full validation
            return super()._update_and_stage_table(current_table, table_identifier, requirements, updates)
        for requirement in requirements:
            requirement.validate(current_table.metadata)
        metadata = updated_metadata(current_table.metadata, updates, current_table.metadata_location)
        version = self._parse_metadata_version(current_table.metadata_location) + 1
        provider = load_location_provider(metadata.location, metadata.properties)
        location = provider.new_table_metadata_file_location(version)
        attempt: _Attempt | None = getattr(self._attempts, "current", None)
        if attempt is not None and current_table is attempt.table:
            attempt.staged_location = location
        return StagedTable(
            identifier=table_identifier,
            metadata=metadata,
            metadata_location=location,
            io=self._load_file_io(properties=metadata.properties, location=location),
            catalog=self,
        )

    def commit_table(
        self, table: Table, requirements: tuple[TableRequirement, ...], updates: tuple[TableUpdate, ...]
    ) -> CommitTableResponse:
        response = self._commit_on_top_of(table, requirements, updates)
        if response is None:
            response = super().commit_table(table, requirements, updates)
        self.metadata_cache.put(response.metadata_location, response.metadata)
        return response

    def _commit_on_top_of(
        self, table: Table, requirements: tuple[TableRequirement, ...], updates: tuple[TableUpdate, ...]
    ) -> CommitTableResponse | None:
        """pyiceberg's commit, with ``table`` standing for the current table; None if it is not.

        None when the swap finds another metadata location, when a requirement fails against
        ``table``'s metadata, or when the updates change nothing (then no swap proves that
        ``table`` is current): pyiceberg's path then loads the current metadata and judges the
        requirements against it.
        """
        if not table.metadata_location or not updates or isinstance(table, StagedTable):
            return None  # a staged table (create transaction) is not in the catalog yet
        attempt = _Attempt(table)
        previous = getattr(self._attempts, "current", None)
        self._attempts.current = attempt
        try:
            response = super().commit_table(table, requirements, updates)
        except CommitFailedException:
            if attempt.staged_location is not None:
                # The swap proves that no catalog row points at the file it wrote (if any).
                _delete_quietly(table.io, attempt.staged_location)
            return None
        finally:
            self._attempts.current = previous
        if not attempt.loaded or response.metadata_location != attempt.staged_location:
            return None
        return response


def metadata_locations(catalog: Catalog) -> dict[str, str] | None:
    """The current metadata file of every table of a SQL catalog, by dotted name, read in one
    query of pyiceberg's ``iceberg_tables`` (namespace, name, metadata location) without
    parsing a file; None for a catalog of another kind, which cannot tell without loading.

    Every commit swaps a table's row to a new metadata file, so a location that did not move
    is a table that did not change.
    """
    if not isinstance(catalog, SqlCatalog):
        return None
    query = select(IcebergTables.table_namespace, IcebergTables.table_name, IcebergTables.metadata_location).where(
        IcebergTables.catalog_name == catalog.name
    )
    if (views_out := catalog._iceberg_type_filter()) is not None:  # as pyiceberg's list_tables
        query = query.where(views_out)
    with catalog.engine.connect() as connection:
        rows = connection.execute(query).all()
    return {f"{namespace}.{name}": location for namespace, name, location in rows if location}


@dataclass(slots=True)
class _Attempt:
    """One commit attempt on top of ``table``: whether pyiceberg loaded it, where it staged."""

    table: Table
    loaded: bool = False
    staged_location: str | None = None


def _delete_quietly(io: FileIO, location: str) -> None:
    try:
        io.delete(location)
    except FileNotFoundError:  # the requirements failed before anything was written
        pass
    except OSError:  # best effort: orphan cleaning removes what is left
        log.warning("could not delete unused metadata file %s", location, exc_info=True)
