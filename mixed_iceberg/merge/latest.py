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
from typing import TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from mixed_iceberg.exceptions import CorruptTableError
from mixed_iceberg.merge.runs import Runs

__all__ = ["BASE_OFFSET", "LSN", "KeyIndex", "KeyedRows", "keep_rows", "key_codes", "latest_by_key", "latest_rows", "pack_lsn"]

LSN = "__lsn"
#: Offset given to base rows (Amoro uses Long.MAX_VALUE; the packed form has 32 bits).
BASE_OFFSET = 0xFFFFFFFF

Column: TypeAlias = pa.Array | pa.ChunkedArray
_T = TypeVar("_T", bound=np.generic)


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
    """``rows.filter(keep)`` (``rows`` itself when every row is kept).

    One ``Table.filter`` at every size: a filter on pyarrow's threads (a dataset over the rows),
    followed by the layout's take, was no faster at a major's sizes (within noise) and slower
    on a minor's (claims ``keep_rows_*`` of ``bench/results/design_choices-2026-12-06-e9ea149.json``,
    ``nice -n 5 .venv/bin/python -m bench.design_choices``).
    """
    if keep.all():
        return rows
    return rows.filter(pa.array(keep))


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
            found = _index_in(_plain(column), dictionary)
            if position == 0:
                codes = found
                continue
            combined = np.where((codes < 0) | (found < 0), -1, codes * len(dictionary) + found)
            codes = _indices(pc.index_in(pa.array(combined), value_set=self._tuples[position - 1]))
        return codes


#: Multiplier of the prefilter's hash (2^64 / golden ratio, odd): spreads sequential keys.
_SPREAD = np.uint64(0x9E3779B97F4A7C15)
#: Probe rows per indexed value from which the prefilter pays (below it, one hash lookup each).
_PREFILTER_FROM = 16


def _index_in(values: pa.Array, dictionary: pa.Array) -> npt.NDArray[np.int64]:
    """The index of each value in ``dictionary``, or -1: ``pc.index_in``, with a bitmap prefilter
    when many integer values are probed against few (a BaseStore's keys against a change tail's).

    The bitmap (about 32 entries per dictionary value, at most 2^24) marks the multiplicative hash
    of every dictionary value; only values whose hash is marked are looked up, about 3 % more
    than the hits. A gather per value instead of a hash-table probe: faster when millions of
    values meet thousands (claim ``key_lookup`` of ``bench/results/design_choices-2026-12-06-e9ea149.json``,
    ``nice -n 5 .venv/bin/python -m bench.design_choices``). 32 entries per value: few false hits for a table that
    still stays in cache (a reasoned choice; other sizes were not measured)."""
    if (
        len(values) < _PREFILTER_FROM * max(1, len(dictionary))
        or values.null_count
        or not pa.types.is_integer(values.type)
        or values.type != dictionary.type
    ):
        return _indices(pc.index_in(values, value_set=dictionary))
    bits = int(min(24, max(10, np.ceil(np.log2(32 * max(1, len(dictionary)))))))
    shift = np.uint64(64 - bits)
    marked = np.zeros(1 << bits, dtype=bool)
    wanted = dictionary.to_numpy(zero_copy_only=False).astype(np.int64, copy=False).view(np.uint64)
    marked[(wanted * _SPREAD) >> shift] = True
    probed = values.to_numpy().astype(np.int64, copy=False)
    candidates = np.flatnonzero(marked[(probed.view(np.uint64) * _SPREAD) >> shift])
    found = np.full(len(values), -1, dtype=np.int64)
    found[candidates] = _indices(pc.index_in(pa.array(probed[candidates], type=values.type), value_set=dictionary))
    return found


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
    """Rows taking part in a merge: their key columns, LSNs and whether each is a data row.

    Settled rows may give their LSNs as :class:`Runs` (a value per file read): the merge looks
    at those of the rows whose key the tail holds only. ``live`` (settled rows only; None: all)
    marks the rows that exist: the others (rows a position delete removed) never survive and
    never hide another row. Passing it spares the caller taking the live rows' keys out of a
    large BaseStore read first."""

    keys: Sequence[Column]
    lsn: npt.NDArray[np.int64] | Runs
    is_data: npt.NDArray[np.bool_]
    live: npt.NDArray[np.bool_] | None = None

    def __post_init__(self) -> None:
        if len(self.lsn) != len(self.is_data) or any(len(k) != len(self.lsn) for k in self.keys):
            raise ValueError(f"expected key columns, LSNs and data flags of one length, found {len(self.lsn)} LSNs")
        if self.live is not None and len(self.live) != len(self.lsn):
            raise ValueError(f"expected a live mask of {len(self.lsn)} rows, found {len(self.live)}")

    @classmethod
    def of(
        cls,
        keys: Sequence[Column],
        lsn: npt.NDArray[np.int64] | Runs,
        is_data: bool,
        live: npt.NDArray[np.bool_] | None = None,
    ) -> KeyedRows:
        return cls(keys, lsn, np.full(len(lsn), is_data, dtype=bool), live)

    def alive(self) -> npt.NDArray[np.bool_]:
        return np.ones(len(self.lsn), dtype=bool) if self.live is None else self.live

    def __len__(self) -> int:
        return len(self.lsn)


def _concat(parts: Sequence[Column], like: pa.DataType) -> pa.ChunkedArray:
    chunks: list[pa.Array] = []
    for part in parts:
        part = part.cast(like) if part.type != like else part
        chunks += part.chunks if isinstance(part, pa.ChunkedArray) else [part]
    return pa.chunked_array(chunks, type=like)


#: Live settled rows are taken out and probed alone when at most one row in this many is live.
_SPARSE = 4


def latest_by_key(
    settled: Sequence[KeyedRows], tail: Sequence[KeyedRows]
) -> tuple[list[npt.NDArray[np.bool_]], list[npt.NDArray[np.bool_]]]:
    """Which rows survive: per input, a mask.

    A ``tail`` row survives when it is a data row and the latest of its key. A live ``settled``
    row survives when its key does not occur in the tail, or when it is the latest of its key.
    Ties between equal rows go to the later input: settled before tail, in the order given.
    """
    n_tail = sum(len(t) for t in tail)
    if n_tail == 0:
        return [s.alive().copy() for s in settled], [np.zeros(0, dtype=bool) for _ in tail]
    width = len(tail[0].keys)
    like = [next(part.keys[i] for part in tail if len(part)).type for i in range(width)]
    index = KeyIndex([_concat([part.keys[i] for part in tail if len(part)], like[i]) for i in range(width)])
    tail_groups = index.groups
    tail_codes = index.codes
    settled_live = np.concatenate([s.alive() for s in settled]) if settled else np.empty(0, bool)
    settled_codes = np.empty(0, dtype=np.int64)
    if len(settled_live):
        keys = [_concat([part.keys[i] for part in settled if len(part)], like[i]) for i in range(width)]
        if int(np.count_nonzero(settled_live)) * _SPARSE < len(settled_live):
            # Few live rows (a filtered read marks the rows it wants): probe those only.
            live_rows = np.flatnonzero(settled_live)
            settled_codes = np.full(len(settled_live), -1, dtype=np.int64)
            settled_codes[live_rows] = index.lookup([column.take(pa.array(live_rows)) for column in keys])
        else:
            settled_codes = index.lookup(keys)
    in_tail = (settled_codes >= 0) & settled_live
    tail_data = np.concatenate([t.is_data for t in tail])
    if tail_groups == n_tail and not in_tail.any():
        # Every tail key once, and no live settled row of it (new keys, a load's rows): each
        # tail row is its key's latest.
        return _split(settled_live.copy(), [len(s) for s in settled]), _split(tail_data, [len(t) for t in tail])
    # Candidates in tie order: live settled rows of tail keys, then the tail.
    picked = np.flatnonzero(in_tail)
    settled_lsn = _gather([s.lsn for s in settled], picked, np.int64)
    settled_data = _gather([s.is_data for s in settled], picked, np.bool_)
    tail_lsn = np.concatenate([t.lsn.dense() if isinstance(t.lsn, Runs) else t.lsn for t in tail])
    winner = latest_rows(
        np.concatenate([settled_codes[picked], tail_codes]),
        tail_groups,
        np.concatenate([settled_lsn, tail_lsn]),
        np.concatenate([settled_data, tail_data]),
    )
    won = np.zeros(len(picked) + n_tail, dtype=bool)
    won[winner] = True
    settled_keep = settled_live & ~in_tail
    settled_keep[picked] = won[: len(picked)] & settled_data
    tail_keep = won[len(picked) :] & tail_data
    return _split(settled_keep, [len(s) for s in settled]), _split(tail_keep, [len(t) for t in tail])


def _gather(parts: Sequence[npt.NDArray[_T] | Runs], picked: npt.NDArray[np.int64], dtype: type[_T]) -> npt.NDArray[_T]:
    """``np.concatenate(parts)[picked]`` for sorted ``picked``, without concatenating the parts
    (the BaseStore's part has a row per base row; ``picked`` holds the few of the tail's keys)."""
    if not parts:
        return np.empty(0, dtype=dtype)
    ends = np.cumsum([len(part) for part in parts])
    cuts = np.searchsorted(picked, ends)
    starts = np.concatenate([[0], ends[:-1]])
    chunks = [
        part.take(picked[lo:hi] - start) if isinstance(part, Runs) else part[picked[lo:hi] - start]
        for part, start, lo, hi in zip(parts, starts, [0, *cuts[:-1]], cuts, strict=True)
    ]
    gathered: npt.NDArray[_T] = np.concatenate(chunks).astype(dtype, copy=False)
    return gathered


def _split(mask: npt.NDArray[np.bool_], sizes: Sequence[int]) -> list[npt.NDArray[np.bool_]]:
    return np.split(mask, np.cumsum(sizes)[:-1]) if sizes else []
