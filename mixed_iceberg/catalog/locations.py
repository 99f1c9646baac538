"""A store's folder: whether a new table may take it, and emptying it when a table is purged.

Every store lives in a folder of its own, ``<warehouse>/<db>/<table>`` as Amoro lays them out.
A folder that still holds files (a table dropped without purge, a create that failed halfway)
is not reused: the new table gets ``<warehouse>/<db>/<table>-<uuid>`` instead, so that it never
mistakes the old files for its own (orphan cleaning would delete files an old table, were it
registered again, still references).

Purging a store drops it from the catalog, then deletes what its metadata references
(pyiceberg's ``purge_table``: data, delete, manifest, manifest-list and metadata files), the
statistics files it lists (Puffin files such as the BaseStore's optimized sequence, which
pyiceberg leaves), and then whatever else its folder holds (statistics of expired snapshots,
files of failed commits), folder included. Files inside the folder go with it; only those
elsewhere are deleted one by one.

A damaged store is purged too. A manifest list or manifest that does not parse hides the
files it lists, so only those outside the folder can be left behind (each one logged). A
current metadata file that does not parse hides the folder itself: it is taken from the
newest older metadata file beside it that parses and places that file in its folder, or,
with none, from the metadata file's own path when its folder is a ``metadata`` folder whose
parent holds nothing but ``metadata`` and ``data`` (Iceberg's layout of a table folder).
Otherwise the folder is kept and said so.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

from pyarrow.fs import FileSelector, FileSystem, FileType
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.io import FileIO, load_file_io
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.serializers import FromInputFile
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.typedef import Properties

from mixed_iceberg.exceptions import CorruptFileError
from mixed_iceberg.store.damage import MANIFEST, MANIFEST_LIST, METADATA_FILE, reading

__all__ = ["PurgeTarget", "load_for_purge", "location_taken", "purge_loaded", "purge_store"]

log = logging.getLogger(__name__)


def _filesystem(location: str, properties: Properties) -> tuple[FileSystem, str]:
    # A catalog or table configured with another FileIO (fsspec) has the properties pyarrow needs.
    io = PyArrowFileIO(properties=properties)
    scheme, netloc, path = PyArrowFileIO.parse_location(location, properties)
    return io.fs_by_scheme(scheme, netloc), path.rstrip("/")


def location_taken(location: str, properties: Properties) -> bool:
    """True when the folder ``location`` holds a file, at any depth.

    Empty folders do not count: an object store may keep the folders of deleted keys.
    """
    fs, path = _filesystem(location, properties)
    try:
        found = fs.get_file_info(FileSelector(path, recursive=True, allow_not_found=True))
    except NotADirectoryError:  # a file of that name
        return True
    return any(info.type == FileType.File for info in found)


@dataclass(frozen=True, slots=True)
class PurgeTarget:
    """A store as :func:`load_for_purge` read it, before anything was dropped."""

    identifier: str
    metadata: TableMetadata | None  # None: its current metadata file is damaged
    metadata_location: str
    properties: dict[str, str]


def load_for_purge(catalog: Catalog, identifier: str) -> PurgeTarget:
    """Read what purging the store ``identifier`` needs (its metadata, where it is); a damaged store too.

    Raises:
        pyiceberg.exceptions.NoSuchTableError: the store is not in the catalog.
    """
    try:
        store = catalog.load_table(identifier)
        return PurgeTarget(identifier, store.metadata, store.metadata_location, dict(store.io.properties))
    except CorruptFileError as exc:  # its current metadata file is damaged
        return PurgeTarget(identifier, None, exc.path, dict(catalog.properties))


def purge_store(catalog: Catalog, identifier: str) -> None:
    """Drop the store ``identifier`` from ``catalog`` and delete every file of it, its folder
    included; a damaged store too (see the module docstring).

    Raises:
        pyiceberg.exceptions.NoSuchTableError: the store is not in the catalog.
        OSError: the storage failed (the store is dropped; run the purge's deletes again by hand).
    """
    purge_loaded(catalog, load_for_purge(catalog, identifier))


def purge_loaded(catalog: Catalog, target: PurgeTarget, *, dropped_already: bool = False) -> None:
    """:func:`purge_store` of a store read before by :func:`load_for_purge`. ``dropped_already``:
    the store may be gone from the catalog by now (a REST server that drops a keyed table's
    ChangeStore with its BaseStore, as ``mixed-iceberg serve`` does): its files are deleted all
    the same.

    Raises:
        pyiceberg.exceptions.NoSuchTableError: the store is not in the catalog (and may not be gone).
        OSError: the storage failed (the store is dropped; run the purge's deletes again by hand).
    """
    identifier, metadata, metadata_location, properties = (
        target.identifier, target.metadata, target.metadata_location, target.properties
    )  # fmt: skip
    try:
        catalog.drop_table(identifier)
    except NoSuchTableError:
        if not dropped_already:
            raise
    io = load_file_io(properties, metadata_location)
    if metadata is None:
        metadata = _older_metadata(io, metadata_location, properties)
    folder = metadata.location.rstrip("/") if metadata is not None else _table_folder(metadata_location, properties)
    files = {metadata_location, *(_referenced(io, metadata, identifier) if metadata is not None else ())}
    for path in sorted(f for f in files if folder is None or not f.startswith(f"{folder}/")):
        fs, key = _filesystem(path, properties)
        with contextlib.suppress(FileNotFoundError):
            fs.delete_file(key)
    if folder is None:
        log.warning(
            "purged %s: its metadata file %s does not parse and names no folder; its files in %s were kept",
            identifier, metadata_location, metadata_location.rsplit("/", 1)[0],
        )  # fmt: skip
        return
    fs, path = _filesystem(folder, properties)
    with contextlib.suppress(FileNotFoundError):
        fs.delete_dir(path)
    log.info("purged %s: deleted its folder %s", identifier, folder)


def _referenced(io: FileIO, metadata: TableMetadata, identifier: str) -> set[str]:
    """Every file ``metadata`` references that can be read: those of a damaged manifest list or
    manifest are unknown (logged)."""
    found = {s.statistics_path for s in metadata.statistics}
    found |= {s.statistics_path for s in metadata.partition_statistics}
    found |= {entry.metadata_file for entry in metadata.metadata_log}
    for snapshot in metadata.snapshots:
        found.add(snapshot.manifest_list)
        try:
            with reading(io, MANIFEST_LIST, snapshot.manifest_list, table=identifier):
                manifests = snapshot.manifests(io)
            for manifest in manifests:
                found.add(manifest.manifest_path)
                with reading(io, MANIFEST, manifest.manifest_path, table=identifier):
                    entries = manifest.fetch_manifest_entry(io, discard_deleted=False)
                found.update(entry.data_file.file_path for entry in entries)
        except CorruptFileError as exc:
            log.warning("purging %s: the files listed by a damaged file are unknown: %s", identifier, exc)
    return found


#: Older metadata files tried for the folder of a store whose current one does not parse.
_OLDER_TRIED = 8


def _older_metadata(io: FileIO, metadata_location: str, properties: Properties) -> TableMetadata | None:
    """The newest metadata file beside ``metadata_location`` that parses and whose folder
    holds it (an older version of the same store), if any."""
    fs, folder = _filesystem(metadata_location.rsplit("/", 1)[0], properties)
    try:
        infos = fs.get_file_info(FileSelector(folder, allow_not_found=True))
    except NotADirectoryError:
        return None
    scheme = metadata_location.split("://", 1)[0] + "://" if "://" in metadata_location else ""
    names = sorted((i.path for i in infos if i.path.endswith(".metadata.json")), reverse=True)
    for path in names[:_OLDER_TRIED]:
        location = f"{scheme}{path}" if scheme and not path.startswith(scheme) else path
        if location == metadata_location:
            continue
        try:
            with reading(io, METADATA_FILE, location):
                older = FromInputFile.table_metadata(io.new_input(location))
        except CorruptFileError:
            continue
        if _local(metadata_location).startswith(_local(older.location).rstrip("/") + "/"):
            return older
    return None


def _table_folder(metadata_location: str, properties: Properties) -> str | None:
    """``<folder>`` of ``<folder>/metadata/<file>`` when ``<folder>`` holds nothing but
    ``metadata`` and ``data`` (Iceberg's layout of one table's folder); else None."""
    parent, _, _ = metadata_location.rpartition("/")
    folder, _, name = parent.rpartition("/")
    if name != "metadata" or not folder:
        return None
    fs, path = _filesystem(folder, properties)
    children = {info.base_name for info in fs.get_file_info(FileSelector(path, allow_not_found=True))}
    return folder if children <= {"metadata", "data"} else None


def _local(location: str) -> str:
    return location.split("://", 1)[-1]
