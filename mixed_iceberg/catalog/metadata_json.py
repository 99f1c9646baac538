"""Table metadata JSON, serialised without re-serialising the history on every commit.

Every commit writes a new metadata file holding every snapshot, the snapshot log, the metadata
log and the statistics files: pyiceberg serialises all of them again each time (1.4 ms at 225
snapshots, growing with the history). These entries are immutable and shared between successive
metadata objects (``compat.updated_metadata`` keeps them), so each one's JSON is kept by object
identity and only new entries are serialised. The bytes are pyiceberg's own: the rest of the
metadata is serialised by pydantic with those lists empty, and the kept fragments are spliced
in where the empty lists are.

Format v1 metadata (whose snapshots are rewritten on the way out) and pyiceberg's
``legacy-current-snapshot-id`` setting take pyiceberg's path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyiceberg.io import FileIO
from pyiceberg.serializers import Compressor, ToOutputFile
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.utils.config import Config

from mixed_iceberg.caching import IdentityCache

__all__ = ["FragmentCache", "metadata_json", "write_metadata"]

_LISTS = (
    ("snapshots", "snapshots"),
    ("snapshot_log", "snapshot-log"),
    ("metadata_log", "metadata-log"),
    ("statistics", "statistics"),  # BaseStore: one Puffin file (optimized sequence) per optimizing commit
)


def _dumper(item: Any) -> Callable[[], str]:
    def dump() -> str:
        text: str = item.model_dump_json(exclude_none=True)
        return text

    return dump


class FragmentCache:
    """JSON of immutable metadata entries by object identity, the newest ``capacity`` of them."""

    def __init__(self, capacity: int = 20_000) -> None:
        self._texts: IdentityCache[str] = IdentityCache(capacity)

    @property
    def hits(self) -> int:
        return self._texts.hits

    @property
    def misses(self) -> int:
        return self._texts.misses

    def joined(self, items: list[Any]) -> str:
        """``[item, ...]`` as pydantic writes it inside the metadata."""
        texts = self._texts
        return "[" + ",".join(texts.get_or_build((item,), _dumper(item)) for item in items) + "]"

    def __len__(self) -> int:
        return len(self._texts)


_fragments = FragmentCache()


def metadata_json(metadata: TableMetadata, fragments: FragmentCache | None = None) -> str:
    """The metadata's JSON, equal to pyiceberg's ``metadata.model_dump_json(exclude_none=True)``."""
    if metadata.format_version == 1:
        return metadata.model_dump_json(exclude_none=True)
    cache = fragments if fragments is not None else _fragments
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
