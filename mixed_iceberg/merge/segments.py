"""Scans within keys over rows sorted by key: the building blocks of the merge engines. Pure
NumPy, and an Arrow take.

``start`` gives, per position, where its key's rows begin; every function here works within
those segments at once (no loop over keys).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = ["last_where", "next_where", "running_sums", "segmented_scan", "take_or_null"]

# Keys with at most this many rows are summed rank by rank, all keys at once; longer keys one
# accumulate each (at most n / _SHORT of them).
_SHORT = 64


def last_where(condition: npt.NDArray[np.bool_], start: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Per position, the last position at or before it, in its key, where ``condition`` holds (-1: none)."""
    positions = np.where(condition, np.arange(len(condition), dtype=np.int64), -1)
    running = np.maximum.accumulate(positions) if len(positions) else positions
    return np.where(running >= start, running, -1)


def next_where(condition: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """Per position, the first position at or after it where ``condition`` holds (n: none); one extra slot."""
    n = len(condition)
    positions = np.where(condition, np.arange(n, dtype=np.int64), n)
    running = np.minimum.accumulate(positions[::-1])[::-1] if n else positions
    return np.concatenate([running, [n]])


def take_or_null(column: pa.ChunkedArray, at: npt.NDArray[np.int64]) -> pa.Array:
    """``column[at]``, null where ``at`` is -1 (a null index takes a null: every type, a uuid
    or a nested one too, which ``pc.if_else`` has no kernel for)."""
    missing = at < 0
    if len(column) == 0 or missing.all():
        return pa.nulls(len(at), column.type)
    taken = column.take(pa.array(at, mask=missing) if missing.any() else pa.array(at))
    return taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken


def segmented_scan(
    values: npt.NDArray[np.float64] | npt.NDArray[np.int64],
    start: npt.NDArray[np.int64],
    op: Callable[[npt.NDArray[np.generic], npt.NDArray[np.generic]], npt.NDArray[np.generic]],
) -> npt.NDArray[np.generic]:
    """Inclusive scan of an associative ``op`` within each key (Hillis-Steele: log2 passes)."""
    result = values.copy()
    index = np.arange(len(values), dtype=np.int64)
    step = 1
    while step < len(values):
        inside = index - step >= start
        shifted = result.copy()  # the first ``step`` are outside every key's reach; not garbage, which op could trip on
        shifted[step:] = result[:-step]
        result = np.where(inside, op(shifted, result), result)
        step *= 2
    return result


def running_sums(values: npt.NDArray[np.generic], start: npt.NDArray[np.int64]) -> npt.NDArray[np.generic]:
    """Per position, its key's running sum added strictly in row order, in the values' own float
    type: what a row-by-row aggregator keeps (Paimon's sum), rounding step by step the same way, so
    the state a BaseStore row holds sums on as its change rows would. A tree-order scan
    (:func:`segmented_scan`) may round differently (-1e300, 1e300, 1.0 is 1.0 in order, 0.0 in a
    tree), and a running total over all keys lets one key's values swallow another's.

    Keys of at most ``_SHORT`` rows go rank by rank (one whole-array step per rank); a longer key
    is one sequential ``np.add.accumulate`` over its slice."""
    n = len(values)
    sums = values.copy()
    if n == 0:
        return sums
    index = np.arange(n, dtype=np.int64)
    firsts = np.flatnonzero(start == index)
    lengths = np.diff(np.append(firsts, n))
    long_key = np.repeat(lengths > _SHORT, lengths)
    rank = index - start
    by_rank = np.flatnonzero(~long_key & (rank > 0))
    by_rank = by_rank[np.argsort(rank[by_rank], kind="stable")]
    bounds = np.searchsorted(rank[by_rank], np.arange(1, min(int(lengths.max()), _SHORT) + 1))
    for lo, hi in pairwise(bounds.tolist()):  # rank 1, 2, ...: their previous rank is done
        at = by_rank[lo:hi]
        sums[at] = sums[at - 1] + values[at]
    for first, length in zip(firsts[lengths > _SHORT].tolist(), lengths[lengths > _SHORT].tolist(), strict=True):
        np.add.accumulate(values[first : first + length], out=sums[first : first + length])
    return sums
