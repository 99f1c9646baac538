"""A store's folder: whether a new table may take it, and emptying it when a table is purged.

Every store lives in a folder of its own, ``<warehouse>/<db>/<table>`` as Amoro lays them out.
A folder that still holds files (a table dropped without purge, a create that failed halfway)
is not reused: the new table gets ``<warehouse>/<db>/<table>-<uuid>`` instead, so that it never
mistakes the old files for its own (orphan cleaning would delete files an old table, were it
registered again, still references).

Purging a store deletes what its metadata references (pyiceberg's ``purge_table``: data,
delete, manifest, manifest-list and metadata files), the statistics files it lists (Puffin
files such as the BaseStore's optimized sequence, which pyiceberg leaves), and then whatever
else its folder holds (statistics of expired snapshots, files of failed commits), folder
included.
"""

from __future__ import annotations

import contextlib
import logging

from pyarrow.fs import FileSelector, FileSystem, FileType
from pyiceberg.catalog import Catalog
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.table import Table
from pyiceberg.typedef import Properties

__all__ = ["location_taken", "purge_store"]

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


def purge_store(catalog: Catalog, store: Table) -> None:
    """Drop ``store`` from ``catalog`` and delete every file of it, its folder included.

    Raises:
        pyiceberg.exceptions.NoSuchTableError: the store is not in the catalog.
    """
    statistics = [s.statistics_path for s in store.metadata.statistics]
    statistics += [s.statistics_path for s in store.metadata.partition_statistics]
    catalog.purge_table(store.name())  # drops it first, then deletes the files it references
    properties = store.io.properties
    for path in statistics:
        fs, key = _filesystem(path, properties)
        with contextlib.suppress(FileNotFoundError):
            fs.delete_file(key)
    fs, folder = _filesystem(store.location(), properties)
    with contextlib.suppress(FileNotFoundError):
        fs.delete_dir(folder)
    log.info("purged %s: deleted its folder %s", ".".join(store.name()), store.location())
