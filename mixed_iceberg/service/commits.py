"""Commit requirements and updates to one or several tables of a SQL catalog, all or nothing.

As Iceberg's reference ``CatalogHandlers.commit`` does, per attempt:

1. load each table's current metadata; check every requirement against it (a failed one is a
   409 ``CommitFailedException``, not retried: the client's view is stale); check the keyed
   store and warehouse rules; apply the updates with pyiceberg's ``update_table_metadata``;
2. write each changed table's new metadata file;
3. swap every table's metadata location in ONE database transaction
   (:func:`mixed_iceberg._pyiceberg.sql_swap.swap_locations`): all land or none.

When the swap loses a race (another commit moved a table first), the transaction rolled back,
so no catalog row references the files step 2 wrote: they are deleted, and the attempt starts
again from step 1 after a backoff, up to ``retries`` times. A refused commit (requirement,
rule, bad update) is refused before anything is written. An error of the database itself
leaves the outcome unknown: the files are kept (orphan cleaning removes them if unused).
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import ValidationError
from pyiceberg import exceptions as ice
from pyiceberg.catalog import Catalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.io import FileIO, load_file_io
from pyiceberg.schema import Schema
from pyiceberg.serializers import ToOutputFile
from pyiceberg.table import TableProperties
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import TableMetadata, TableMetadataV1
from pyiceberg.table.update import (
    AssertCreate,
    SetLocationUpdate,
    SetPropertiesUpdate,
    TableRequirement,
    TableUpdate,
)
from pyiceberg.utils.properties import property_as_bool

from mixed_iceberg._pyiceberg.sql_swap import LocationSwap, swap_locations
from mixed_iceberg.exceptions import RequestRefusedError
from mixed_iceberg.service.apply import apply_updates
from mixed_iceberg.service.errors import refuse
from mixed_iceberg.service.keyed import check_keyed_updates
from mixed_iceberg.service.paths import check_location, check_properties_locations
from mixed_iceberg.service.requirements import validate_requirements
from mixed_iceberg.service.updates import with_java_ids
from mixed_iceberg.service.v3 import with_row_lineage, write_v3_metadata

__all__ = ["Committed", "Committer", "TableChange"]

log = logging.getLogger(__name__)

#: Table properties that configure a FileIO (pyiceberg's ``py-io-impl`` and its filesystems').
_IO_PROPERTY_PREFIXES = ("py-io-impl", "s3.", "gcs.", "adls.", "hdfs.", "oss.", "client.")

_VERSION = re.compile(r"^(\d+)-.*\.metadata\.json$")


@dataclass(frozen=True, slots=True)
class TableChange:
    """One table's part of a commit."""

    namespace: tuple[str, ...]
    name: str
    requirements: tuple[TableRequirement, ...]
    updates: tuple[TableUpdate, ...]

    @property
    def dotted(self) -> str:
        return ".".join((*self.namespace, self.name))


@dataclass(frozen=True, slots=True)
class Committed:
    """A table's metadata after the commit, and its file."""

    metadata: TableMetadata
    metadata_location: str


@dataclass(slots=True)
class _Staged:
    change: TableChange
    base_location: str | None
    metadata: TableMetadata
    location: str
    changed: bool
    written: bool = False
    base: TableMetadata | None = None


def _next_version(location: str | None) -> int:
    if location is None:
        return 0
    found = _VERSION.match(location.rsplit("/", 1)[-1])
    return int(found.group(1)) + 1 if found else 0


def _empty_metadata() -> TableMetadata:
    """The metadata a create's updates start from (as pyiceberg: v1, upgraded by the updates)."""
    return TableMetadataV1.model_construct(last_column_id=-1, schema=Schema())  # type: ignore[call-arg]  # the alias


class Committer:
    """Commits :class:`TableChange` lists to one SQL catalog whose files live in ``warehouse``."""

    def __init__(
        self, catalog: SqlCatalog, warehouse: str, *, retries: int = 4, min_wait: float = 0.02, max_wait: float = 1.0
    ) -> None:
        self.catalog = catalog
        self.warehouse = warehouse
        self.retries = retries
        self.min_wait = min_wait
        self.max_wait = max_wait
        #: Called after the files are written and before the swap (tests force a race with it).
        self.before_swap: Callable[[], None] | None = None
        self._ios: dict[tuple[str, tuple[tuple[str, str], ...]], FileIO] = {}

    def commit(self, changes: Sequence[TableChange], *, ours: bool = False) -> list[Committed]:
        """Commit ``changes`` all or nothing; ``ours``: the request is mixed-iceberg's own writer.

        Raises:
            CommitFailedException: a requirement failed (a 409), or every retry lost its race.
            NoSuchTableError, NoSuchNamespaceError: a table to change (or the namespace of one to
                create) does not exist.
            RequestRefusedError: an update breaks a keyed store's rule or leaves the warehouse,
                or does not apply to the metadata (400/403).
        """
        names = [change.dotted for change in changes]
        if len(set(names)) != len(names):
            refuse(f"a transaction names a table twice: {sorted(names)}")
        for attempt in range(self.retries + 1):
            staged = [self._stage(change, ours) for change in changes]
            try:
                self._write(staged)
                if self.before_swap is not None:
                    self.before_swap()
                swaps = [
                    LocationSwap(Catalog.namespace_to_string(s.change.namespace), s.change.name, s.base_location, s.location)
                    for s in staged
                    if s.changed
                ]
                if swaps:
                    swap_locations(self.catalog, swaps)
            except ice.CommitFailedException:
                # The transaction rolled back: no row points at the files this attempt wrote.
                self._delete(staged)
                if attempt == self.retries:
                    raise ice.CommitFailedException(
                        f"{', '.join(names)}: lost the race to concurrent commits {self.retries + 1} times; retry the commit"
                    ) from None
                wait = min(self.max_wait, self.min_wait * 2**attempt) * (0.5 + random.random() / 2)
                log.info("%s: a concurrent commit landed first; retrying in %.0f ms", ", ".join(names), wait * 1000)
                time.sleep(wait)
                continue
            except ice.TableAlreadyExistsError:
                self._delete(staged)  # the rollback proves nothing references them
                raise ice.CommitFailedException("Requirement failed: table already exists") from None
            except BaseException:
                # A database error: the outcome is unknown, so the files stay (orphan cleaning).
                raise
            committed = []
            for s in staged:
                if s.changed:
                    self._remember(s)
                    self._drop_old_metadata(s)
                committed.append(Committed(s.metadata, s.location))
            log.info("committed %s (attempt %d)", ", ".join(names), attempt + 1)
            return committed
        raise AssertionError("unreachable")

    def create(self, namespace: tuple[str, ...], name: str, metadata: TableMetadata, *, location: str | None = None) -> Committed:
        """Create ``namespace.name`` with ``metadata`` (written as version 0, or to ``location``
        for a registered table, which is not written again).

        Raises:
            TableAlreadyExistsError: the name is taken; the file written (if any) is deleted.
        """
        dotted = ".".join((*namespace, name))
        if not self.catalog.namespace_exists(namespace):
            raise ice.NoSuchNamespaceError(f"Namespace does not exist: {Catalog.namespace_to_string(namespace)}")
        check_location(metadata.location, self.warehouse, f"{dotted}: location")
        write = location is None
        if location is None:
            provider = load_location_provider(metadata.location, metadata.properties)
            location = provider.new_table_metadata_file_location(0)
        check_location(location, self.warehouse, f"{dotted}: metadata file")
        staged = _Staged(TableChange(namespace, name, (), ()), None, metadata, location, changed=True)
        if write:
            staged.metadata = metadata = with_row_lineage(metadata)
            self._write([staged])
        try:
            swap_locations(self.catalog, [LocationSwap(Catalog.namespace_to_string(namespace), name, None, location)])
        except ice.TableAlreadyExistsError:
            self._delete([staged])  # the rollback proves nothing references it
            raise ice.TableAlreadyExistsError(f"Table already exists: {dotted}") from None
        self._remember(staged)
        return Committed(metadata, location)

    def replace_location(
        self, namespace: tuple[str, ...], name: str, expected: str, location: str, metadata: TableMetadata
    ) -> Committed:
        """Point an existing table at another metadata file (register with ``overwrite``).

        Raises:
            CommitFailedException: the table moved on since ``expected`` was read.
        """
        swap_locations(self.catalog, [LocationSwap(Catalog.namespace_to_string(namespace), name, expected, location)])
        self._remember(_Staged(TableChange(namespace, name, (), ()), expected, metadata, location, changed=True))
        return Committed(metadata, location)

    def _stage(self, change: TableChange, ours: bool) -> _Staged:
        identifier = (*change.namespace, change.name)
        try:
            table = self.catalog.load_table(identifier)
            base: TableMetadata | None = table.metadata
            base_location: str | None = table.metadata_location
        except ice.NoSuchTableError:
            base = base_location = None
        creating = any(isinstance(r, AssertCreate) for r in change.requirements)
        if base is None and not creating:
            raise ice.NoSuchTableError(f"Table does not exist: {change.dotted}")
        validate_requirements(change.requirements, base)
        if base is None and not self.catalog.namespace_exists(change.namespace):
            raise ice.NoSuchNamespaceError(f"Namespace does not exist: {Catalog.namespace_to_string(change.namespace)}")
        if base is not None:
            check_keyed_updates(change.dotted, base, change.updates, ours=ours)
        for update in change.updates:
            if isinstance(update, SetLocationUpdate):
                check_location(update.location, self.warehouse, f"{change.dotted}: location")
            elif isinstance(update, SetPropertiesUpdate):
                check_properties_locations(update.updates, self.warehouse, change.dotted)
        updates = with_java_ids(base, change.updates)
        try:
            if base is None:
                metadata = apply_updates(_empty_metadata(), updates, creating=True, metadata_location=None)
            else:
                metadata = apply_updates(base, updates, creating=False, metadata_location=base_location)
        except (ValueError, ValidationError, ice.ValidationError) as exc:
            refuse(f"{change.dotted}: the updates do not apply: {exc}")
        if base is not None and metadata == base:
            assert base_location is not None
            return _Staged(change, base_location, base, base_location, changed=False)
        check_location(metadata.location, self.warehouse, f"{change.dotted}: location")
        provider = load_location_provider(metadata.location, metadata.properties)
        location = provider.new_table_metadata_file_location(_next_version(base_location))
        check_location(location, self.warehouse, f"{change.dotted}: metadata file")
        return _Staged(change, base_location, metadata, location, changed=True, base=base)

    def _io(self, staged: _Staged) -> FileIO:
        table_io = {k: v for k, v in staged.metadata.properties.items() if k.startswith(_IO_PROPERTY_PREFIXES)}
        properties = {**self.catalog.properties, **table_io}
        scheme = staged.location.split("://", 1)[0] if "://" in staged.location else "file"
        key = (scheme, tuple(sorted(table_io.items())))
        io = self._ios.get(key)
        if io is None:  # loading one reads pyiceberg's configuration (files, environment) each time
            io = self._ios.setdefault(key, load_file_io(properties, staged.location))
        return io

    def _write(self, staged: list[_Staged]) -> None:
        for s in staged:
            if not s.changed:
                continue
            io = self._io(s)
            writer = getattr(self.catalog, "write_metadata_file", None)
            if s.metadata.format_version >= 3:
                write_v3_metadata(s.metadata, io, s.location)
            elif writer is not None:  # our SQL catalog's hook: history serialised once
                writer(s.metadata, io, s.location)
            else:
                ToOutputFile.table_metadata(s.metadata, io.new_output(s.location))
            s.written = True

    def _delete(self, staged: list[_Staged]) -> None:
        for s in staged:
            if not s.written:
                continue
            try:
                self._io(s).delete(s.location)
            except FileNotFoundError:
                pass
            except OSError:  # best effort: orphan cleaning removes what is left
                log.warning("could not delete unused metadata file %s", s.location, exc_info=True)
            s.written = False

    def _drop_old_metadata(self, staged: _Staged) -> None:
        """As Iceberg's catalogs do after a commit: with ``write.metadata.delete-after-commit.enabled``
        the metadata files that fell off the metadata log (``write.metadata.previous-versions-max``)
        are deleted. Best effort: a file already gone (a pyiceberg client deletes them too) or
        not deletable now is left to orphan cleaning."""
        if staged.base is None or not property_as_bool(
            staged.metadata.properties, TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED, False
        ):
            return
        dropped = {e.metadata_file for e in staged.base.metadata_log} - {e.metadata_file for e in staged.metadata.metadata_log}
        io = self._io(staged)
        for location in sorted(dropped):
            try:
                check_location(location, self.warehouse, f"{staged.change.dotted}: old metadata file")
                io.delete(location)
            except FileNotFoundError:
                pass
            except (OSError, RequestRefusedError):
                log.info("%s: old metadata file %s not deleted (left to orphan cleaning)", staged.change.dotted, location)

    def _remember(self, staged: _Staged) -> None:
        cache = getattr(self.catalog, "metadata_cache", None)
        if cache is not None:  # the next load of the table parses nothing
            cache.put(staged.location, staged.metadata)
