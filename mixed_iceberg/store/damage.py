"""Damage to a table's files: told apart from transient I/O errors, and named.

A table's files are immutable and its metadata references each of them, so a file that is
gone, or does not parse, is damage: it stays so however often it is read. A read that meets
damage raises :class:`~mixed_iceberg.exceptions.CorruptFileError` (``MissingFileError`` for a
file that is gone) naming the table, the file and what is wrong with it, so that the damaged
table is reported as such (DESIGN.md invariant 11) and not as a bug, a conflict or an outage.
A transient error (a connection refused, a timeout) keeps its own type: a retry may succeed.

Two kinds of seam, where files are read:

* :func:`reading` wraps the read of one metadata JSON file, manifest list or manifest, which
  are read whole and then parsed: a missing file is damage, any other ``OSError`` is
  transient, and a parse error is damage.
* :func:`locating` wraps a read of many data and delete files at once (a pyarrow dataset
  scan, pyiceberg's ``ArrowScan``), whose errors do not always say which file failed, nor
  whether a connection or a file is at fault. On an error it probes the files, the one the
  error names first: is the file there, has it the size its manifest says, does its Parquet
  footer parse and count the rows its manifest says. The first damaged one is named; when
  none is (or the probe itself cannot reach the storage), the original error stands.

Messages name the table through the store's ``FileIO``: :func:`register` records, when a
store is loaded, which table (and which of its stores) reads through it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow.fs import FileSystem, FileType
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import DataFile, DataFileContent

from mixed_iceberg.exceptions import CorruptFileError, MissingFileError, MixedIcebergError

__all__ = [
    "CHANGE_FILE",
    "MANIFEST",
    "MANIFEST_LIST",
    "METADATA_FILE",
    "ExpectedFile",
    "damage_in",
    "expected",
    "locating",
    "reading",
    "register",
    "table_of",
]

METADATA_FILE = "metadata file"
MANIFEST_LIST = "manifest list"
MANIFEST = "manifest"
CHANGE_FILE = "change file"
_KINDS = {
    DataFileContent.DATA: "data file",
    DataFileContent.POSITION_DELETES: "position-delete file",
    DataFileContent.EQUALITY_DELETES: "equality-delete file",
}
#: Files probed at once when a read of many fails (each probe is a stat and a footer read).
_PROBE_THREADS = 8

_OWNERS: weakref.WeakKeyDictionary[FileIO, str] = weakref.WeakKeyDictionary()
_OWNERS_LOCK = threading.Lock()


def register(io: FileIO, table: str) -> None:
    """Record that ``io`` reads the files of ``table`` (a name, or ``"db.t, ChangeStore"``)."""
    with _OWNERS_LOCK:
        _OWNERS[io] = table


def table_of(io: FileIO | None, path: str) -> str:
    """The table ``io`` was registered for; else the folder ``path`` lies in, as its name."""
    if io is not None:
        with _OWNERS_LOCK:
            found = _OWNERS.get(io)
        if found is not None:
            return found
    for folder in ("/data/", "/metadata/"):
        if folder in path:
            return f"at {path.rsplit(folder, 1)[0]}"
    return f"of file {path}"


def _error(table: str, kind: str, path: str, problem: str, *, missing: bool = False) -> CorruptFileError:
    message = f"table {table}: {kind} {path} is damaged: {problem}"
    return MissingFileError(message, path) if missing else CorruptFileError(message, path)


@contextmanager
def reading(io: FileIO | None, kind: str, path: str, *, table: str | None = None, referenced: bool = True) -> Iterator[None]:
    """Translate the damage met while reading the one file ``path`` (metadata, manifest list,
    manifest) through ``io``; ``table`` names the table where ``io`` does not tell it.
    ``referenced=False``: the file is an older one (a metadata file a plan recorded), which
    metadata clean-up may have deleted; its absence is left a plain ``FileNotFoundError``.

    Raises:
        MissingFileError: the file is gone.
        CorruptFileError: the file does not parse.
    """
    try:
        yield
    except MixedIcebergError:
        raise
    except FileNotFoundError as exc:
        if not referenced:
            raise
        name = table or table_of(io, path)
        raise _error(name, kind, path, "expected the file its table references, found none", missing=True) from exc
    except OSError:
        raise  # transient (a connection, a timeout, a permission): not the file's fault
    except Exception as exc:
        # pyiceberg's JSON and Avro decoders fail on damaged bytes with whatever the bytes lead
        # them to (pydantic's ValidationError, UnicodeDecodeError, SystemError, EOFError,
        # IndexError, ...); the file was read whole before, so I/O is not what failed.
        problem = f"expected a readable {kind}, found bytes that do not parse ({_brief(exc)})"
        raise _error(table or table_of(io, path), kind, path, problem) from exc


def _brief(exc: BaseException) -> str:
    """The error's type and first two lines (pydantic says what failed on its second)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()][:2]
    return f"{type(exc).__name__}: {'; '.join(lines)[:300]}" if lines else type(exc).__name__


@dataclass(frozen=True, slots=True)
class ExpectedFile:
    """A data or delete file as the table's metadata describes it (``None``: not known)."""

    path: str
    kind: str
    size: int | None = None
    records: int | None = None


def expected(data_file: DataFile, kind: str | None = None) -> ExpectedFile:
    """What the manifest entry of ``data_file`` says of it."""
    return ExpectedFile(
        data_file.file_path,
        kind or _KINDS.get(data_file.content, "data file"),
        data_file.file_size_in_bytes,
        data_file.record_count,
    )


def _filesystem(io: FileIO, path: str) -> tuple[FileSystem, str]:
    pyarrow_io = io if isinstance(io, PyArrowFileIO) else PyArrowFileIO(io.properties)
    scheme, netloc, local = pyarrow_io.parse_location(path, pyarrow_io.properties)
    return pyarrow_io.fs_by_scheme(scheme, netloc), local


def _problem(io: FileIO, file: ExpectedFile) -> tuple[str, bool] | None:
    """What is wrong with ``file`` (and whether it is gone), or None when nothing is found.

    Raises:
        OSError: the storage could not be asked (transient).
    """
    filesystem, local = _filesystem(io, file.path)
    info = filesystem.get_file_info(local)
    if info.type == FileType.NotFound:
        return "expected the file its table references, found none", True
    size = int(info.size or 0)
    if file.size is not None and size != file.size:
        return f"expected {file.size} bytes (as its manifest says), found {size}", False
    if size < 12:
        return f"expected a Parquet file, found {size} bytes", False
    with filesystem.open_input_file(local) as stream:
        tail = stream.read_at(8, size - 8)
        length = int.from_bytes(tail[:4], "little")
        if tail[4:] != b"PAR1" or length + 12 > size:
            return "expected a Parquet file ending in its footer and PAR1, found none", False
        footer = stream.read_at(length + 8, size - length - 8)
    try:  # the footer is in memory: a failure here is its bytes', not the storage's
        rows = pq.ParquetFile(pa.BufferReader(b"PAR1" + footer)).metadata.num_rows
    except (pa.ArrowException, OSError) as exc:
        return f"expected a Parquet footer, found one that does not parse ({_brief(exc)})", False
    if file.records is not None and rows != file.records:
        return f"expected {file.records} rows (as its manifest says), found {rows}", False
    return None


def damage_in(io: FileIO, files: Iterable[ExpectedFile], hint: str = "") -> CorruptFileError | None:
    """The error naming the first damaged file of ``files`` (those ``hint`` names first), or None.

    Raises:
        OSError: the storage could not be asked (transient).
    """
    ordered = sorted({f.path: f for f in files}.values(), key=lambda f: _local(f.path) not in hint)
    if not ordered:
        return None
    with ThreadPoolExecutor(max_workers=min(_PROBE_THREADS, len(ordered))) as pool:
        for file, found in zip(ordered, pool.map(lambda f: _problem(io, f), ordered), strict=True):
            if found is not None:
                problem, missing = found
                return _error(table_of(io, file.path), file.kind, file.path, problem, missing=missing)
    return None


def _local(path: str) -> str:
    return path.split("://", 1)[-1]


@contextmanager
def locating(io: FileIO, files: Callable[[], Iterable[ExpectedFile]]) -> Iterator[None]:
    """Name the damaged file when a read of ``files`` (built only on an error) fails.

    Raises:
        MissingFileError: one of the files is gone.
        CorruptFileError: one of the files does not parse, or is not what its manifest says.
    """
    try:
        yield
    except MixedIcebergError:
        raise
    except Exception as exc:
        try:
            found = damage_in(io, files(), str(exc))
        except OSError:
            found = None  # the storage cannot be asked now: the original error stands
        if found is None:
            raise
        raise found from exc
