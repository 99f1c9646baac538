"""The merge-on-read kernel: the latest row per key, from settled rows and a change tail. Pure.

A key's rows are ordered by LSN, ``(transaction id, file offset)`` packed into one int64
(transaction id in the high 32 bits); base rows carry the maximum offset. The latest row of a
key decides it: a data row (``+I``/``+U``, a base row) is the key's state, a delete (``-D``, or a
``-U`` not followed by its ``+U``) means the key is absent. A data row and a delete with the
same LSN are an update pair (``-U``/``+U`` share an offset): the data row wins. Rows equal in
both (duplicates another engine wrote into a BaseStore) resolve to the later row.

Work is proportional to the tail: *settled* rows (the BaseStore, at most one live row per key)
take part only when their key occurs in the *tail* (unmerged change rows); the others are kept
without a probe beyond one hash lookup. Amoro's Java reader instead keeps every data row no
strictly newer delete removes (``MixedDeleteFilter``); both agree once the writer emits a
delete before every re-insert, and always after optimizing (see ``docs/semantics.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from mixed_iceberg.exceptions import CorruptTableError

__all__ = ["BASE_OFFSET", "LSN", "KeyIndex", "KeyedRows", "keep_rows", "key_codes", "latest_by_key", "latest_rows", "pack_lsn"]

LSN = "__lsn"
_KEEP = "__keep"
#: Offset given to base rows (Amoro uses Long.MAX_VALUE; the packed form has 32 bits).
BASE_OFFSET = 0xFFFFFFFF

Column: TypeAlias = pa.Array | pa.ChunkedArray


def pack_lsn(transaction_ids: npt.NDArray[np.int64], offsets: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Pack (transaction id, offset) pairs into int64s that order like the pairs.

    Raises:
        CorruptTableError: an id or offset does not fit (ids < 2^31, offsets < 2^32 - 1).
    """
    if len(offsets) and (int(offsets.max()) >= BASE_OFFSET or int(offsets.min()) < 0):
        raise CorruptTableError(
            f"file offsets must lie in [0, {BASE_OFFSET - 1}]; found {int(offsets.min())}..{int(offsets.max())}"
        )
    if len(transaction_ids) and (int(transaction_ids.max()) >= 2**31 or int(transaction_ids.min()) < 0):
        raise CorruptTableError(
            f"transaction ids must lie in [0, 2^31); found {int(transaction_ids.min())}..{int(transaction_ids.max())}"
        )
    return (transaction_ids.astype(np.int64) << 32) | offsets.astype(np.int64)


def keep_rows(rows: pa.Table, keep: npt.NDArray[np.bool_]) -> pa.Table:
    """``rows.filter(keep)``, run on pyarrow's threads (about 30 % faster on two cores)."""
    if keep.all():
        return rows
    marked = rows.append_column(_KEEP, pa.array(keep))
    return ds.dataset(marked).to_table(filter=pc.field(_KEEP), columns=rows.column_names)


def _plain(column: Column) -> pa.Array:
    """One array of hashable values: chunks combined, dictionaries decoded, uuid as its storage."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    return array


def _indices(encoded: pa.Array) -> npt.NDArray[np.int64]:
    return np.asarray(encoded.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)


class KeyIndex:
    """Dense codes for the key tuples of some rows (the change tail), and lookups of other rows'
    keys (the BaseStore's) in them. Only the indexed rows' keys are hashed into a table; other
    rows are probed against it (one hash lookup per row and key column), so a probe of a large
    BaseStore costs no hash table of its own keys."""

    def __init__(self, columns: Sequence[Column]) -> None:
        self._dictionaries: list[pa.Array] = []
        #: per extra key column: the combined codes seen so far, numbered densely (so that
        #: codes stay below the row count and the next combination cannot overflow)
        self._tuples: list[pa.Array] = []
        codes = np.empty(0, np.int64)
        for position, column in enumerate(columns):
            encoded = pc.dictionary_encode(_plain(column))
            self._dictionaries.append(encoded.dictionary)
            more = _indices(encoded.indices)
            if position == 0:
                codes = more
                continue
            combined = pc.dictionary_encode(pa.array(codes * len(encoded.dictionary) + more))
            self._tuples.append(combined.dictionary)
            codes = _indices(combined.indices)
        self.codes = codes
        self.groups = len(self._tuples[-1]) if self._tuples else len(self._dictionaries[0])

    def lookup(self, columns: Sequence[Column]) -> npt.NDArray[np.int64]:
        """The code of each row's key, or -1 where the indexed rows do not hold it."""
        codes = np.empty(0, np.int64)
        for position, (column, dictionary) in enumerate(zip(columns, self._dictionaries, strict=True)):
            found = _indices(pc.index_in(_plain(column), value_set=dictionary))
            if position == 0:
                codes = found
                continue
            combined = np.where((codes < 0) | (found < 0), -1, codes * len(dictionary) + found)
            codes = _indices(pc.index_in(pa.array(combined), value_set=self._tuples[position - 1]))
        return codes


def key_codes(columns: Sequence[Column]) -> tuple[npt.NDArray[np.int64], int]:
    """Dense codes of key tuples (equal iff the tuples are equal), numbered by first appearance,
    and how many there are. One hash pass per key column."""
    index = KeyIndex(columns)
    return index.codes, index.groups


def latest_rows(
    codes: npt.NDArray[np.int64], groups: int, lsn: npt.NDArray[np.int64], is_data: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int64]:
    """For each key code in ``[0, groups)``, the index of its latest row: the largest
    ``(lsn, is_data)``; among rows equal in both, the last one."""
    score = (lsn.astype(np.uint64) << np.uint64(1)) | is_data.astype(np.uint64)
    best = np.zeros(groups, dtype=np.uint64)
    np.maximum.at(best, codes, score)
    at_best = np.flatnonzero(score == best[codes])
    winner = np.full(groups, -1, dtype=np.int64)
    np.maximum.at(winner, codes[at_best], at_best.astype(np.int64))
    return winner


@dataclass(frozen=True, slots=True)
class KeyedRows:
    """Rows taking part in a merge: their key columns, LSNs and whether each is a data row."""

    keys: Sequence[Column]
    lsn: npt.NDArray[np.int64]
    is_data: npt.NDArray[np.bool_]

    def __post_init__(self) -> None:
        if len(self.lsn) != len(self.is_data) or any(len(k) != len(self.lsn) for k in self.keys):
            raise ValueError(f"expected key columns, LSNs and data flags of one length, found {len(self.lsn)} LSNs")

    @classmethod
    def of(cls, keys: Sequence[Column], lsn: npt.NDArray[np.int64], is_data: bool) -> KeyedRows:
        return cls(keys, lsn, np.full(len(lsn), is_data, dtype=bool))

    def __len__(self) -> int:
        return len(self.lsn)


def _concat(parts: Sequence[Column], like: pa.DataType) -> pa.ChunkedArray:
    chunks: list[pa.Array] = []
    for part in parts:
        part = part.cast(like) if part.type != like else part
        chunks += part.chunks if isinstance(part, pa.ChunkedArray) else [part]
    return pa.chunked_array(chunks, type=like)


def latest_by_key(
    settled: Sequence[KeyedRows], tail: Sequence[KeyedRows]
) -> tuple[list[npt.NDArray[np.bool_]], list[npt.NDArray[np.bool_]]]:
    """Which rows survive: per input, a mask.

    A ``tail`` row survives when it is a data row and the latest of its key. A ``settled`` row
    survives when its key does not occur in the tail, or when it is the latest of its key.
    Ties between equal rows go to the later input: settled before tail, in the order given.
    """
    n_tail = sum(len(t) for t in tail)
    if n_tail == 0:
        return [np.ones(len(s), dtype=bool) for s in settled], [np.zeros(0, dtype=bool) for _ in tail]
    width = len(tail[0].keys)
    like = [next(part.keys[i] for part in tail if len(part)).type for i in range(width)]
    index = KeyIndex([_concat([part.keys[i] for part in tail if len(part)], like[i]) for i in range(width)])
    tail_groups = index.groups
    tail_codes = index.codes
    if settled and sum(len(s) for s in settled):
        settled_codes = index.lookup([_concat([part.keys[i] for part in settled if len(part)], like[i]) for i in range(width)])
    else:
        settled_codes = np.empty(0, np.int64)
    in_tail = settled_codes >= 0
    # Candidates in tie order: settled rows of tail keys, then the tail.
    settled_lsn = np.concatenate([s.lsn for s in settled]) if settled else np.empty(0, np.int64)
    settled_data = np.concatenate([s.is_data for s in settled]) if settled else np.empty(0, bool)
    picked = np.flatnonzero(in_tail)
    tail_lsn = np.concatenate([t.lsn for t in tail])
    tail_data = np.concatenate([t.is_data for t in tail])
    winner = latest_rows(
        np.concatenate([settled_codes[picked], tail_codes]),
        tail_groups,
        np.concatenate([settled_lsn[picked], tail_lsn]),
        np.concatenate([settled_data[picked], tail_data]),
    )
    won = np.zeros(len(picked) + n_tail, dtype=bool)
    won[winner] = True
    settled_keep = ~in_tail
    settled_keep[picked] = won[: len(picked)] & settled_data[picked]
    tail_keep = won[len(picked) :] & tail_data
    return _split(settled_keep, [len(s) for s in settled]), _split(tail_keep, [len(t) for t in tail])


def _split(mask: npt.NDArray[np.bool_], sizes: Sequence[int]) -> list[npt.NDArray[np.bool_]]:
    return np.split(mask, np.cumsum(sizes)[:-1]) if sizes else []
