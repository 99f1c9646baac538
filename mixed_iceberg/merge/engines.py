"""Merge engines: what a key's rows make of it (Paimon's names). Pure Arrow and NumPy.

``deduplicate`` (the default) keeps a key's latest row. ``first-row`` keeps the first row a key
got since it last existed (later inserts are ignored, a delete removes the key). ``partial-update``
updates the stored row with the non-null fields of every later row (a delete removes it).
``aggregation`` folds every row into the stored row per column (``fields.<col>.aggregate-function``):
``-U`` and ``-D`` retract the values they carry for the functions that can. ``ignore-delete``
drops deletes and retractions altogether. ``sequence.field`` orders a key's rows by a user column
(an ``updated_at``) before their LSN, for sources that deliver out of order.

Every engine is a scan: for rows sorted by key, then order, it gives the key's state after
each row (and whether the key exists then). The merged row of a key is its state after its last
row; ``changes()`` takes the state before and after each. The BaseStore's row of a key (its state
so far) is simply the key's first row. Only the rows of keys in the change tail are sorted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from mixed_iceberg.config.merge import MergeConfig, MergeEngine
from mixed_iceberg.merge.aggregates import aggregate
from mixed_iceberg.merge.segments import last_where, next_where, segmented_scan, take_or_null

__all__ = ["ScannedStates", "scan_states"]


@dataclass(frozen=True, slots=True)
class ScannedStates:
    """Rows in merge order, with each key's state after each row.

    ``order`` maps positions to input rows; ``states`` holds the state's columns per position
    (valid where ``exists``); ``last`` marks each key's last position (its merged state).
    """

    order: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int64]
    states: pa.Table
    exists: npt.NDArray[np.bool_]
    last: npt.NDArray[np.bool_]


def _sequence_rank(values: pa.ChunkedArray | pa.Array, is_data: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """Dense ranks (from 1) of ``sequence.field`` values. A data row without a value ranks 0
    (it never overrides a row with one); a delete without one (a key-only delete) ranks -1: it
    removes whatever the key holds when it arrives."""
    ranks = pc.rank(values, sort_keys="ascending", null_placement="at_end", tiebreaker="dense")
    ranked = np.asarray(ranks.to_numpy(zero_copy_only=False), dtype=np.int64)
    nulls = np.asarray(pc.is_null(values).to_numpy(zero_copy_only=False), dtype=bool)
    return np.where(nulls, np.where(is_data, 0, -1), ranked)


def _by_sequence(
    rank: npt.NDArray[np.int64], data: npt.NDArray[np.bool_], start: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """``deduplicate`` with ``sequence.field``, in arrival order: a data row replaces the key's
    row unless that one has a larger sequence value (ties go to the later); a delete removes the
    key's row unless that one has a larger sequence value (one without a value always removes).
    Returns, per position, the position of the key's row then and whether there is one.

    Which deletes apply is found in rounds: in each, the first applying delete of every segment
    (the rows after the key's last applied delete) is final, since nothing before it changed.
    """
    n = len(rank)
    positions = np.arange(n, dtype=np.int64)
    packed = np.where(data, (np.maximum(rank, 0) << 32) | positions, -1)
    segment = start.copy()
    applied = np.zeros(n, dtype=bool)
    judged_upto = np.full(n, -1, dtype=np.int64)  # deletes at or before this position are final
    while True:
        best = np.asarray(segmented_scan(packed, segment, np.maximum), dtype=np.int64)
        before = np.full(n, -1, dtype=np.int64)
        before[1:] = np.where(positions[1:] - 1 >= segment[1:], best[:-1], -1)
        applies = ~data & (positions > judged_upto) & (before >= 0) & ((rank < 0) | (rank >= (before >> 32)))
        candidates = np.flatnonzero(applies)
        if len(candidates) == 0:
            break
        first = np.concatenate([[True], segment[candidates[1:]] != segment[candidates[:-1]]])
        applied[candidates[first]] = True
        last_applied = np.maximum.accumulate(np.where(applied, positions, -1))
        last_applied = np.where(last_applied >= start, last_applied, -1)
        segment = np.maximum(segment, last_applied + 1)
        judged_upto = np.maximum(judged_upto, last_applied)
    at = np.where(best >= 0, best & 0xFFFFFFFF, -1)
    exists = best >= 0
    return at, exists


def _paired_deletes(
    codes: npt.NDArray[np.int64], lsn: npt.NDArray[np.int64], is_data: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """Deletes that are the ``-U`` half of an update pair (a data row of their key, same LSN)."""
    order = np.lexsort((is_data, lsn, codes))
    code, at, data = codes[order], lsn[order], is_data[order]
    half = np.zeros(len(order), dtype=bool)
    half[:-1] = ~data[:-1] & data[1:] & (code[:-1] == code[1:]) & (at[:-1] == at[1:])
    paired = np.zeros(len(order), dtype=bool)
    paired[order[half]] = True
    return paired


def scan_states(
    config: MergeConfig,
    rows: pa.Table,
    keys: Sequence[str],
    codes: npt.NDArray[np.int64],
    lsn: npt.NDArray[np.int64],
    is_data: npt.NDArray[np.bool_],
    is_base: npt.NDArray[np.bool_],
) -> ScannedStates:
    """The state of each key after each of its rows, under ``config``'s engine. Pure.

    ``rows`` hold the table's columns (deletes may carry only the key when ``config`` does not
    need their values); base rows (``is_base``) hold a key's state so far and come first in its
    order: the caller gives them the smallest sequence rank by placing them before the tail.
    """
    keep = np.ones(rows.num_rows, dtype=bool)
    if config.engine is not MergeEngine.AGGREGATION:
        keep &= ~_paired_deletes(codes, lsn, is_data)  # the -U of a pair is no change of its own
    if config.ignore_delete:
        keep &= is_data
    picked = np.flatnonzero(keep)
    local = np.lexsort((is_data[picked], lsn[picked], codes[picked]))  # arrival order per key
    order = picked[local]
    code = codes[order]
    data = is_data[order]
    n = len(order)
    first = np.ones(n, dtype=bool)
    first[1:] = code[1:] != code[:-1]
    last = np.ones(n, dtype=bool)
    last[:-1] = code[1:] != code[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(n, dtype=np.int64), 0)) if n else np.zeros(0, np.int64)
    sorted_rows = rows.take(pa.array(order))
    positions = np.arange(n, dtype=np.int64)
    if config.engine is MergeEngine.DEDUPLICATE:
        if config.sequence_field is None:
            return ScannedStates(order, code, sorted_rows, data, last)
        rank = _sequence_rank(sorted_rows.column(config.sequence_field), data)
        at, exists = _by_sequence(rank, data, start)
        return ScannedStates(order, code, sorted_rows.take(pa.array(np.where(exists, at, positions))), exists, last)
    if config.engine is MergeEngine.AGGREGATION:
        states, exists = aggregate(config, sorted_rows, keys, data, is_base[order], start)
        return ScannedStates(order, code, states, exists, last)
    floor = last_where(~data, start)  # the key's last delete so far
    segment = np.maximum(floor + 1, start)
    first_data = next_where(data)[segment]
    exists = first_data <= positions
    if config.engine is MergeEngine.FIRST_ROW:
        return ScannedStates(order, code, sorted_rows.take(pa.array(np.where(exists, first_data, positions))), exists, last)
    columns = []
    for name in rows.column_names:
        column = sorted_rows.column(name)
        if name in keys:
            columns.append(column.combine_chunks())
            continue
        valid = data & ~np.asarray(pc.is_null(column).to_numpy(zero_copy_only=False), dtype=bool)
        at = last_where(valid, segment)
        columns.append(take_or_null(column, at))
    return ScannedStates(order, code, pa.Table.from_arrays(columns, schema=rows.schema), exists, last)
