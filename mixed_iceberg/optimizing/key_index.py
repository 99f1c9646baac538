"""The key index of one BaseStore data file: where given keys sit in it, without reading it. Pure.

A minor optimizing must retire the segment rows whose keys the change upserts or deletes. Found
by reading every segment's key column, that costs the table's size per run; found here it costs
the change's: the index holds the file's key hashes (Amoro's key hash, the one that routes keys
to tree nodes) sorted, each with its row position and its key values. A lookup of the change's
hashes (``np.searchsorted``) gives the candidate rows: every row whose key the change holds, and
the rare row whose hash merely collides. Candidates go to the merge kernel with their real keys,
which matches them exactly, so a collision costs one more comparison, never a wrong row.

An index belongs to one file, named by path, size and record count (Iceberg never rewrites a
file in place). Its serialized form carries that identity and a CRC-32 of its body: an index of
another file, or a damaged one, is refused on load (:meth:`SegmentIndex.parse` returns None),
and the caller rebuilds it from the data file. A missing or refused index costs speed, never
correctness.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from mixed_iceberg.exceptions import CorruptTableError
from mixed_iceberg.format.javahash import key_hash
from mixed_iceberg.sorting import stable_order

__all__ = ["IndexedFile", "SegmentIndex", "probe_hashes"]

Column: TypeAlias = pa.Array | pa.ChunkedArray

_MAGIC = b"MIKEYIDX"
_VERSION = 1
_HASH, _POSITION = "__hash", "__pos"


@dataclass(frozen=True, slots=True)
class IndexedFile:
    """The data file an index describes, as its manifest entry names it."""

    path: str
    size: int
    records: int


def probe_hashes(columns: Sequence[Column]) -> npt.NDArray[np.int32]:
    """The distinct, sorted key hashes of some rows (the change's keys), ready for :meth:`SegmentIndex.find`."""
    return np.unique(key_hash(columns))


class SegmentIndex:
    """Key hashes of one data file, sorted, with each row's position and key values."""

    __slots__ = ("file", "hashes", "keys", "positions")

    def __init__(self, file: IndexedFile, hashes: npt.NDArray[np.int32], positions: npt.NDArray[np.int64], keys: pa.Table):
        self.file = file
        self.hashes = hashes
        self.positions = positions
        self.keys = keys

    @classmethod
    def build(cls, file: IndexedFile, keys: pa.Table) -> SegmentIndex:
        """The index of ``file`` from its key columns, every row in file order (position-deleted ones too).

        Raises:
            CorruptTableError: ``keys`` holds another number of rows than ``file``'s manifest says.
        """
        if keys.num_rows != file.records:
            raise CorruptTableError(f"{file.path} holds {keys.num_rows} rows; its manifest says {file.records}")
        hashes = key_hash(keys.columns) if keys.num_rows else np.empty(0, np.int32)
        order = stable_order(hashes)
        return cls(file, hashes[order], order.astype(np.int64), keys.take(pa.array(order)))

    @property
    def nbytes(self) -> int:
        return int(self.hashes.nbytes + self.positions.nbytes + self.keys.nbytes)

    def find(
        self, probe: npt.NDArray[np.int32], dead: npt.NDArray[np.bool_] | None = None
    ) -> tuple[npt.NDArray[np.int64], pa.Table]:
        """Rows whose key hash is in ``probe`` (from :func:`probe_hashes`): their positions, ascending,
        and their key columns in that order, leaving out the positions ``dead`` marks (a mask over
        the file's rows: those its position deletes removed). Costs the smaller side times the
        log of the larger."""
        if len(self.hashes) <= len(probe):  # a small segment: look its hashes up in the probe
            at = np.minimum(np.searchsorted(probe, self.hashes), max(len(probe) - 1, 0))
            entries = np.flatnonzero(probe[at] == self.hashes) if len(probe) else np.empty(0, np.int64)
        else:
            low = np.searchsorted(self.hashes, probe, side="left")
            hit = self.hashes[np.minimum(low, len(self.hashes) - 1)] == probe
            # The end of each hit's run of equal hashes: searched for the hits alone (few, as a
            # change touches a small part of a big segment), not for the whole probe again.
            low = low[hit]
            counts = np.searchsorted(self.hashes, probe[hit], side="right") - low
            # Every index in [low, low + count) of every hit: the range starts repeated, plus offsets.
            starts = np.repeat(low - np.cumsum(counts) + counts, counts)
            entries = starts + np.arange(int(counts.sum()), dtype=np.int64)
        positions = self.positions[entries]
        if dead is not None and len(positions):
            alive = ~dead[positions]
            entries, positions = entries[alive], positions[alive]
        order = np.argsort(positions)  # positions are distinct: any sort is stable
        return positions[order], self.keys.take(pa.array(entries[order]))

    # -- serialized form -------------------------------------------------------------------------

    def serialize(self) -> bytes:
        """``MAGIC, header length, JSON header (identity, CRC-32), Arrow IPC body``."""
        body = pa.BufferOutputStream()
        table = self.keys.append_column(_HASH, pa.array(self.hashes)).append_column(_POSITION, pa.array(self.positions))
        with pa.ipc.new_stream(body, table.schema) as writer:
            writer.write_table(table)
        payload: bytes = body.getvalue().to_pybytes()
        header = json.dumps(
            {
                "version": _VERSION,
                "path": self.file.path,
                "size": self.file.size,
                "records": self.file.records,
                "crc32": zlib.crc32(payload),
                "body": len(payload),
            }
        ).encode()
        return _MAGIC + len(header).to_bytes(4, "big") + header + payload

    @classmethod
    def parse(cls, data: bytes, file: IndexedFile, key_names: Sequence[str]) -> SegmentIndex | None:
        """The index in ``data`` if it is intact and describes ``file`` with ``key_names``; None otherwise."""
        try:
            if not data.startswith(_MAGIC):
                return None
            length = int.from_bytes(data[len(_MAGIC) : len(_MAGIC) + 4], "big")
            start = len(_MAGIC) + 4
            header = json.loads(data[start : start + length])
            payload = data[start + length :]
            identity = IndexedFile(str(header["path"]), int(header["size"]), int(header["records"]))
            if header.get("version") != _VERSION or identity != file:
                return None
            if len(payload) != header["body"] or zlib.crc32(payload) != header["crc32"]:
                return None
            table = pa.ipc.open_stream(payload).read_all()
        except (ValueError, KeyError, TypeError, pa.ArrowException):
            return None
        if table.column_names != [*key_names, _HASH, _POSITION] or table.num_rows != file.records:
            return None
        hashes = table.column(_HASH).to_numpy()
        positions = table.column(_POSITION).to_numpy()
        if hashes.dtype != np.int32 or positions.dtype != np.int64:
            return None
        return cls(file, hashes, positions, table.select(list(key_names)))
