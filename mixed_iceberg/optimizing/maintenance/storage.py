"""Listing, sizing and deleting files through a store's FileIO (local, S3, ...).

Everything goes through the pyarrow filesystem that the table's own ``PyArrowFileIO``
builds from its properties, so maintenance reaches exactly the storage the table writes to,
with the same credentials and endpoint.

Paths are compared by :func:`file_key`: the location without its scheme (``/abs/path`` for
local files, ``bucket/key`` for object stores), which is also how the filesystem names them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pyarrow.fs import FileSelector, FileSystem, FileType
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import PyArrowFileIO

__all__ = ["ListedFile", "Storage", "file_key"]

log = logging.getLogger(__name__)

_DELETE_THREADS = 8


def file_key(location: str) -> str:
    """A location without its scheme: ``file:///a/b`` and ``/a/b`` -> ``/a/b``; ``s3://b/k`` -> ``b/k``."""
    return PyArrowFileIO.parse_location(location)[2]


@dataclass(frozen=True, slots=True)
class ListedFile:
    """A file found on storage: its full location, its :func:`file_key`, size and age."""

    location: str
    key: str
    size: int
    mtime_ms: int | None


class Storage:
    """The filesystem behind one store's FileIO."""

    def __init__(self, io: FileIO) -> None:
        # A table configured with another FileIO (fsspec) still has the properties pyarrow needs.
        self._io = io if isinstance(io, PyArrowFileIO) else PyArrowFileIO(properties=io.properties)

    def _fs(self, location: str) -> tuple[FileSystem, str]:
        scheme, netloc, path = PyArrowFileIO.parse_location(location, self._io.properties)
        return self._io.fs_by_scheme(scheme, netloc), path

    def list_files(self, folder: str) -> Iterator[ListedFile]:
        """Every file under ``folder`` (recursively; nothing when the folder does not exist)."""
        scheme, netloc, path = PyArrowFileIO.parse_location(folder, self._io.properties)
        fs = self._io.fs_by_scheme(scheme, netloc)
        # hdfs paths come back without the name node; object-store paths start with the bucket
        prefix = f"{scheme}://{netloc}" if scheme in ("hdfs", "viewfs") else f"{scheme}://"
        for info in fs.get_file_info(FileSelector(path.rstrip("/"), recursive=True, allow_not_found=True)):
            if info.type == FileType.File:
                mtime_ns = info.mtime_ns
                mtime_ms = None if mtime_ns is None else mtime_ns // 1_000_000
                yield ListedFile(prefix + info.path, info.path, int(info.size or 0), mtime_ms)

    def sizes(self, locations: Iterable[str]) -> dict[str, int]:
        """Sizes of the given files by key; files that do not exist are left out."""
        by_fs: dict[int, tuple[FileSystem, list[str]]] = {}
        for location in locations:
            fs, path = self._fs(location)
            by_fs.setdefault(id(fs), (fs, []))[1].append(path)
        sizes = {}
        for fs, paths in by_fs.values():
            for info in fs.get_file_info(paths):
                if info.type == FileType.File:
                    sizes[info.path] = int(info.size or 0)
        return sizes

    def delete(self, locations: Mapping[str, int]) -> tuple[int, int]:
        """Delete files (location -> size); a file already gone counts as not deleted.

        Returns:
            (files deleted, bytes deleted).
        """

        def one(item: tuple[str, int]) -> int | None:
            location, size = item
            fs, path = self._fs(location)
            try:
                fs.delete_file(path)
            except FileNotFoundError:
                return None
            log.debug("deleted %s", location)
            return size

        if not locations:
            return 0, 0
        with ThreadPoolExecutor(max_workers=min(_DELETE_THREADS, len(locations))) as pool:
            done = [size for size in pool.map(one, locations.items()) if size is not None]
        return len(done), sum(done)
