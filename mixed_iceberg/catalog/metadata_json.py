"""Table metadata JSON, serialised without re-serialising the history on every commit.

Every commit writes a new metadata file holding every snapshot, the snapshot log, the metadata
log and the statistics files: pyiceberg serialises all of them again each time, a cost growing
with the history (the commit's components: ``.venv/bin/python -m bench.commit_profile``,
``bench/results/commit_profile-2026-12-06-4647a3f.json``). These entries are immutable and shared
between successive metadata objects (``compat.updated_metadata`` keeps them), so each one's JSON
is kept by object identity and only new entries are serialised. The bytes are pyiceberg's own: the rest of the
metadata is serialised by pydantic with those lists empty, and the kept fragments are spliced
in where the empty lists are.

Format v1 metadata (whose snapshots are rewritten on the way out) and pyiceberg's
``legacy-current-snapshot-id`` setting take pyiceberg's path.
"""

from __future__ import annotations

import threading
from itertools import islice
from typing import Any

from pyiceberg.io import FileIO
from pyiceberg.serializers import Compressor, ToOutputFile
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.utils.config import Config

__all__ = ["FragmentCache", "metadata_json", "write_metadata"]

_LISTS = (
    ("snapshots", "snapshots"),
    ("snapshot_log", "snapshot-log"),
    ("metadata_log", "metadata-log"),
    ("statistics", "statistics"),  # BaseStore: one Puffin file (optimized sequence) per optimizing commit
)


class FragmentCache:
    """JSON of immutable metadata entries by object identity, at most ``capacity`` of them.

    A plain dict of ``id(entry) -> (entry, text)``: a commit looks up every entry of the
    history (some 800 at 300 snapshots), and a general LRU's bookkeeping per lookup was a
    visible share of each commit (``.venv/bin/python -m bench.commit_profile``,
    ``bench/results/commit_profile-2026-12-06-4647a3f.json``). Holding the entry keeps its id from
    being reused. Past ``capacity``, the oldest entries by insertion go, down to three quarters
    of it (an entry still in use is serialised again once, when next asked for).
    """

    def __init__(self, capacity: int = 20_000) -> None:
        self._capacity = capacity
        self._texts: dict[int, tuple[Any, str]] = {}
        self.hits = 0
        self.misses = 0

    def joined(self, items: list[Any]) -> str:
        """``[item, ...]`` as pydantic writes it inside the metadata."""
        texts = self._texts
        parts = []
        misses = 0
        for item in items:
            found = texts.get(id(item))
            if found is not None and found[0] is item:
                parts.append(found[1])
                continue
            text: str = item.model_dump_json(exclude_none=True)
            texts[id(item)] = (item, text)
            parts.append(text)
            misses += 1
        self.misses += misses
        self.hits += len(parts) - misses
        if len(texts) > self._capacity:
            for key in list(islice(texts, len(texts) - self._capacity * 3 // 4)):
                del texts[key]
        return "[" + ",".join(parts) + "]"

    def __len__(self) -> int:
        return len(self._texts)


_fragments = FragmentCache()


class _Recent:
    """The JSON of the last few metadata objects, by identity: a commit through ``serve`` writes
    the metadata file and then answers with the same JSON (``service/routes/tables.py``)."""

    def __init__(self, capacity: int = 8) -> None:
        self._capacity = capacity
        self._texts: dict[int, tuple[TableMetadata, str]] = {}
        self._lock = threading.Lock()

    def get(self, metadata: TableMetadata) -> str | None:
        found = self._texts.get(id(metadata))
        return found[1] if found is not None and found[0] is metadata else None

    def put(self, metadata: TableMetadata, text: str) -> None:
        with self._lock:
            self._texts[id(metadata)] = (metadata, text)
            while len(self._texts) > self._capacity:
                del self._texts[next(iter(self._texts))]


_recent = _Recent()


def metadata_json(metadata: TableMetadata, fragments: FragmentCache | None = None) -> str:
    """The metadata's JSON, equal to pyiceberg's ``metadata.model_dump_json(exclude_none=True)``."""
    if metadata.format_version == 1:
        return metadata.model_dump_json(exclude_none=True)
    if fragments is None and (known := _recent.get(metadata)) is not None:
        return known  # metadata objects are never changed in place (pyiceberg copies on update)
    text = _serialised(metadata, fragments if fragments is not None else _fragments)
    if fragments is None:
        _recent.put(metadata, text)
    return text


def _serialised(metadata: TableMetadata, cache: FragmentCache) -> str:
    head = metadata.model_copy(update={field: [] for field, _ in _LISTS}).model_dump_json(exclude_none=True)
    for field, alias in _LISTS:
        empty = f'"{alias}":[]'
        # Property values and names are JSON strings, so an unescaped key followed by an empty
        # list can only be the field itself; anything else takes pyiceberg's path.
        if head.count(empty) != 1:
            return metadata.model_dump_json(exclude_none=True)
        head = head.replace(empty, f'"{alias}":{cache.joined(getattr(metadata, field))}')
    return head


def write_metadata(metadata: TableMetadata, io: FileIO, metadata_path: str) -> None:
    """Write ``metadata`` to ``metadata_path`` as pyiceberg's ``Catalog._write_metadata`` does."""
    if Config().get_bool("legacy-current-snapshot-id"):
        ToOutputFile.table_metadata(metadata, io.new_output(metadata_path))
        return
    output = io.new_output(metadata_path)
    payload = Compressor.get_compressor(output.location).bytes_compressor()(metadata_json(metadata).encode("utf-8"))
    with output.create(overwrite=False) as stream:
        stream.write(payload)
