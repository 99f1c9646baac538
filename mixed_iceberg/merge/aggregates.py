"""The ``aggregation`` merge engine: per column, a function folds a key's rows. Pure Arrow and NumPy.

Each function gives, per position of rows sorted by key then order, the column's aggregate over
the key's rows so far (see :func:`aggregate`); the types each takes are checked at create
(:mod:`mixed_iceberg.config.merge`).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from mixed_iceberg.config.merge import MergeConfig
from mixed_iceberg.merge.segments import last_where, next_where, running_sums, segmented_scan, take_or_null

__all__ = ["aggregate"]


def aggregate(
    config: MergeConfig,
    rows: pa.Table,
    keys: Sequence[str],
    data: npt.NDArray[np.bool_],
    is_base: npt.NDArray[np.bool_],
    start: npt.NDArray[np.int64],
) -> tuple[pa.Table, npt.NDArray[np.bool_]]:
    """Per position, each column's aggregate over its key's rows so far. A key exists once it
    has a data row; deletes retract (or are ignored per column)."""
    exists = last_where(data, start) >= 0
    had_row = exists  # at a delete, whether a data row came before it
    columns = []
    for name in rows.column_names:
        column = rows.column(name)
        if name in keys:
            columns.append(column.combine_chunks())
            continue
        function = config.function(name)
        # A retraction takes back what the key holds: before its first row there is nothing.
        retract = ~data & had_row & (not (config.ignore_delete or name in config.ignore_retract))
        present = ~np.asarray(pc.is_null(column).to_numpy(zero_copy_only=False), dtype=bool)
        columns.append(
            _aggregate_column(
                function, column, data, retract & present, present, is_base, start, config.delimiters.get(name, ",")
            )
        )
    return pa.Table.from_arrays(columns, schema=rows.schema), exists


def _aggregate_column(
    function: str,
    column: pa.ChunkedArray,
    data: npt.NDArray[np.bool_],
    retract: npt.NDArray[np.bool_],
    present: npt.NDArray[np.bool_],
    is_base: npt.NDArray[np.bool_],
    start: npt.NDArray[np.int64],
    delimiter: str,
) -> pa.Array:
    n = len(column)
    added = data & present
    if function == "count":  # a base row holds the count so far; a change row counts as one
        base_value = np.asarray(pc.cast(column.fill_null(0), pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
        delta = np.where(added, np.where(is_base, base_value, 1), 0) - np.where(retract, 1, 0)
        # how many values the key got: 0, not null, when none; wraps as Java's int does
        return pa.array(_prefix_sums(delta, start)).cast(column.type, safe=False)
    if function == "sum":
        seen = _prefix_sums((added | retract).astype(np.int64), start) > 0
        return _sum(column, added, retract, start, seen)
    if function == "first_value":
        return take_or_null(column, np.where(last_where(data, start) >= 0, next_where(data)[start], -1))
    if function == "last_value":
        at = last_where(data | retract, start)
        keep_value = (at >= 0) & data[np.maximum(at, 0)]
        return take_or_null(column, np.where(keep_value, at, -1))
    if function == "last_non_null_value":
        value_at = last_where(added, start)
        retracted_at = last_where(retract, start)
        return take_or_null(column, np.where(value_at > retracted_at, value_at, -1))
    if function == "listagg":
        text = pc.if_else(pa.array(added), column, pa.nulls(n, column.type)).combine_chunks()
        return _prefix_join(text, start, delimiter)
    # min, max, bool_and, bool_or: over the data rows' values (no retraction, checked at create).
    # Arrow's order (NaN above every number, -0.0 equal to 0.0); the best rank and, among equal
    # ranks, the first (min) or last (max) position holding it, packed in one int64 and taken
    # from the column itself.
    ranks = pc.rank(column, sort_keys="ascending", null_placement="at_end", tiebreaker="dense")
    ranked = np.asarray(ranks.to_numpy(zero_copy_only=False), dtype=np.int64)
    positions = np.arange(n, dtype=np.int64)
    packed = (ranked << 32) | positions
    if function in ("min", "bool_and"):
        none = np.iinfo(np.int64).max
        best = np.asarray(segmented_scan(np.where(added, packed, none), start, np.minimum), dtype=np.int64)
        return take_or_null(column, np.where(best != none, best & 0xFFFFFFFF, -1))
    best = np.asarray(segmented_scan(np.where(added, packed, -1), start, np.maximum), dtype=np.int64)
    return take_or_null(column, np.where(best >= 0, best & 0xFFFFFFFF, -1))


def _prefix_sums(values: npt.NDArray[np.int64], start: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Per position, the sum of its key's ``values`` so far: one cumulative sum, less what came
    before the key (exact, as integers wrap alike on both sides)."""
    if len(values) == 0:
        return values
    total = np.cumsum(values)
    offset = np.where(start > 0, total[np.maximum(start - 1, 0)], 0)
    sums: npt.NDArray[np.int64] = total - offset
    return sums


#: A decimal sum runs in this precision (a decimal256 sum of two stays within Arrow's 76).
_WIDE_PRECISION = 75


def _sum(
    column: pa.ChunkedArray,
    added: npt.NDArray[np.bool_],
    retract: npt.NDArray[np.bool_],
    start: npt.NDArray[np.int64],
    seen: npt.NDArray[np.bool_],
) -> pa.Array:
    """``sum`` per position: the key's added values less its retracted ones, null before any.

    Integers wrap as Java's do (an int column's sum modulo 2^32). Floats are added row by row in
    order within each key (:func:`running_sums`), as Paimon's sum rounds, never through a running
    total of the whole column, where a large value of one key would swallow a small sum of the next. Decimals are summed exactly in decimal256,
    row by row as Paimon's: a sum that leaves the column's precision is null, and the key's next
    value starts it again (:func:`_decimal_sums`).
    """
    n = len(column)
    kind = column.type
    if pa.types.is_decimal(kind):
        wide = pa.decimal256(_WIDE_PRECISION, kind.scale)
        values = column.combine_chunks().cast(wide)
        zero = pa.scalar(0, pa.int64()).cast(wide)
        signed = pc.if_else(pa.array(added), values, pc.if_else(pa.array(retract), pc.negate(values), zero))
        contributes = (added | retract) & np.asarray(pc.is_valid(values).to_numpy(zero_copy_only=False), dtype=bool)
        bound = pa.scalar(decimal.Decimal(10 ** (kind.precision - kind.scale)), wide)
        total, overflowed = _decimal_sums(pc.fill_null(signed, zero), contributes, start, bound)
        keep = pa.array(seen & ~overflowed)
        return pc.if_else(keep, total.cast(kind, safe=False), pa.nulls(n, kind))
    values = np.asarray(column.fill_null(0).to_numpy(zero_copy_only=False))
    if pa.types.is_floating(kind):
        zero = values.dtype.type(0)
        with np.errstate(invalid="ignore", over="ignore"):  # inf + -inf is NaN, a sum past the range inf: IEEE's answers
            signed = np.where(added, values, zero) - np.where(retract, values, zero)
            sums: npt.NDArray[np.generic] = running_sums(signed, start)
    else:
        wide_values = values.astype(np.int64)
        sums = _prefix_sums(np.where(added, wide_values, 0) - np.where(retract, wide_values, 0), start)
    return pc.if_else(pa.array(seen), pa.array(sums).cast(kind, safe=False), pa.nulls(n, kind))


def _decimal_sums(
    signed: pa.Array, contributes: npt.NDArray[np.bool_], start: npt.NDArray[np.int64], bound: pa.Scalar
) -> tuple[pa.Array, npt.NDArray[np.bool_]]:
    """Per position, its key's decimal sum so far as Paimon's sum keeps it, row by row: a sum
    that leaves the column's precision is null, and the key's next value starts it again (a
    null accumulator takes the value). So the state a BaseStore row keeps (null) sums on as the
    change rows would: optimizing changes nothing. Exact sums in decimal256, one pass per
    overflow a key meets in turn (none, almost always); and which positions are null by it."""
    n = len(signed)
    index = np.arange(n, dtype=np.int64)
    # The next contributing position after each one (n: none).
    upcoming = np.where(contributes, index, n)
    next_after = np.append(np.minimum.accumulate(upcoming[::-1])[::-1][1:], n) if n else upcoming
    segment = start.copy()
    overflowed = np.zeros(n, dtype=bool)
    while True:
        total = _segmented_sum(signed, segment)
        fits = np.asarray(pc.less(pc.abs(total), bound).to_numpy(zero_copy_only=False), dtype=bool)
        over = contributes & ~fits & ~overflowed
        if not over.any():
            return total, overflowed
        first = np.asarray(segmented_scan(np.where(over, index, n), segment, np.minimum), dtype=np.int64)
        hit = first < n  # at or after its segment's first overflow
        restart = np.where(hit, next_after[np.minimum(first, n - 1)], n)
        again = hit & (restart < n) & (index >= restart)
        again[again] = start[restart[again]] == start[again]  # the restart is within the same key
        overflowed |= hit & ~again
        segment = np.where(again, restart, segment)


def _hillis_steele(values: pa.Array, start: npt.NDArray[np.int64], combine: Callable[[pa.Array, pa.Array], pa.Array]) -> pa.Array:
    """Per position, ``combine`` folded over its key's values so far (from ``start``, its key's
    first position), in log2(n) whole-array steps: ``combine(earlier, later)``, the earlier
    side null past the array's start."""
    result = values
    n = len(values)
    index = np.arange(n, dtype=np.int64)
    step = 1
    while step < n:
        inside = pa.array(index - step >= start)
        shifted = pa.concat_arrays([pa.nulls(step, values.type), result.slice(0, n - step)])
        result = pc.if_else(inside, combine(shifted, result), result)
        step *= 2
    return result


def _segmented_sum(values: pa.Array, start: npt.NDArray[np.int64]) -> pa.Array:
    """:func:`segmented_scan` of ``np.add`` over an Arrow decimal array, in its own type."""
    return _hillis_steele(values, start, lambda a, b: pc.add(a, b).cast(values.type))  # decimal256(p+1): back to p, exact


def _prefix_join(text: pa.Array, start: npt.NDArray[np.int64], delimiter: str) -> pa.Array:
    """Per position, the non-null strings of its key so far, joined (Hillis-Steele on strings)."""

    def join(earlier: pa.Array, later: pa.Array) -> pa.Array:
        # "emit_null" and coalesce: pyarrow 20's null_handling="skip" returns a short array
        # when an input is a slice (a length of 2 for 3 rows)
        joined = pc.binary_join_element_wise(earlier, later, pa.scalar(delimiter, text.type), null_handling="emit_null")
        return pc.coalesce(joined, later, earlier)

    return _hillis_steele(text, start, join)
