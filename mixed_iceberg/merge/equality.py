"""Row equality for every Arrow type a table holds, nested ones included. Pure Arrow and NumPy.

Arrow has no equality kernel for lists, structs, maps or extension types (``pc.equal`` raises
``ArrowNotImplementedError``), so :func:`equal_at` compares values at pairs of positions
recursively: a struct by its validity and then its children; a list (``large_list``,
``fixed_size_list``) by its validity and length, then its elements, all pairs of one level in
one flattened comparison reduced per row; a map as the list of its ``struct<key, value>``
entries, in order; an extension type by its storage; a dictionary by its values. Leaves go to
``pc.equal``. Two nulls are equal, and so are two NaNs (a row read back equals itself).

>>> import numpy as np
>>> rows = pa.array([[1.0, None], [float("nan")], None, [1.0, None], [float("nan")]], pa.large_list(pa.float64()))
>>> equal_at(rows, rows, np.array([0, 1, 2, 0]), np.array([3, 4, 2, 1])).tolist()
[True, True, True, False]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["equal_at", "equal_rows"]

Positions = npt.NDArray[np.int64]


def equal_rows(left: pa.Table, right: pa.Table, left_at: npt.ArrayLike, right_at: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """Whether row ``left_at[i]`` of ``left`` equals row ``right_at[i]`` of ``right`` in every
    column (columns matched by position; :func:`equal_at` per column). ``left`` and ``right``
    may be the same table.

    Raises:
        TypeError: the tables' column types differ, or a type has no equality here.
        IndexError: a position is outside its table.
    """
    li, ri = _positions(left_at, left.num_rows), _positions(right_at, right.num_rows)
    if len(li) != len(ri):
        raise ValueError(f"expected as many left as right positions, found {len(li)} and {len(ri)}")
    if left.num_columns != right.num_columns:
        raise TypeError(f"expected tables of the same columns, found {left.schema.names} and {right.schema.names}")
    same = np.ones(len(li), dtype=bool)
    for x, y in zip(left.columns, right.columns, strict=True):
        if not same.any():
            break
        at = np.flatnonzero(same)  # only rows still equal need the next column
        same[at] = _equal(_array(x), _array(y), li[at], ri[at])
    return same


def equal_at(
    left: pa.Array | pa.ChunkedArray,
    right: pa.Array | pa.ChunkedArray,
    left_at: npt.ArrayLike,
    right_at: npt.ArrayLike,
) -> npt.NDArray[np.bool_]:
    """Whether ``left[left_at[i]]`` equals ``right[right_at[i]]``, for each ``i``: nulls equal
    nulls (at every level), NaN equals NaN, ``-0.0`` equals ``0.0``; lists, maps and structs
    equal when every element, entry and field is.

    Raises:
        TypeError: ``left`` and ``right`` are of different types, or of a type without an
            equality here (a union, an interval).
        IndexError: a position is outside its array.
    """
    if left.type != right.type:
        raise TypeError(f"expected arrays of one type, found {left.type} and {right.type}")
    li, ri = _positions(left_at, len(left)), _positions(right_at, len(right))
    if len(li) != len(ri):
        raise ValueError(f"expected as many left as right positions, found {len(li)} and {len(ri)}")
    return _equal(_array(left), _array(right), li, ri)


def _positions(at: npt.ArrayLike, length: int) -> Positions:
    positions = np.asarray(at, dtype=np.int64).reshape(-1)
    if len(positions) and (positions.min() < 0 or positions.max() >= length):
        raise IndexError(f"positions must lie in [0, {length}), found {positions.min()}..{positions.max()}")
    return positions


def _array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array


def _valid(array: pa.Array) -> npt.NDArray[np.bool_]:
    if array.null_count == 0:
        return np.ones(len(array), dtype=bool)
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _equal(left: pa.Array, right: pa.Array, li: Positions, ri: Positions) -> npt.NDArray[np.bool_]:
    """:func:`equal_at` on arrays of one type (no dictionaries, no chunks), positions checked."""
    if len(li) == 0:
        return np.ones(0, dtype=bool)
    lvalid, rvalid = _valid(left)[li], _valid(right)[ri]
    result: npt.NDArray[np.bool_] = lvalid == rvalid  # two nulls are equal, a null and a value are not
    both = np.flatnonzero(lvalid & rvalid)
    if len(both):
        result[both] = _values_equal(left, right, li[both], ri[both])
    return result


def _values_equal(left: pa.Array, right: pa.Array, li: Positions, ri: Positions) -> npt.NDArray[np.bool_]:
    """Equality of the values at ``li`` and ``ri``, all valid on both sides."""
    kind = left.type
    t = pa.types
    if isinstance(left, pa.ExtensionArray):
        return _equal(_array(left.storage), _array(right.storage), li, ri)
    if t.is_dictionary(kind):
        return _equal(left.dictionary_decode(), right.dictionary_decode(), li, ri)
    if t.is_struct(kind):
        same = np.ones(len(li), dtype=bool)
        for i in range(kind.num_fields):
            at = np.flatnonzero(same)
            if len(at) == 0:
                break
            same[at] = _equal(left.field(i), right.field(i), li[at], ri[at])
        return same
    if t.is_list(kind) or t.is_large_list(kind) or t.is_map(kind) or t.is_fixed_size_list(kind):
        return _lists_equal(left, right, li, ri)
    if t.is_null(kind):
        return np.ones(len(li), dtype=bool)
    x, y = left.take(pa.array(li)), right.take(pa.array(ri))
    try:
        equal = pc.equal(x, y)
    except pa.ArrowNotImplementedError as exc:
        raise TypeError(f"no equality for values of type {kind}") from exc
    if t.is_floating(kind):
        equal = pc.or_(equal, pc.and_(pc.is_nan(x), pc.is_nan(y)))
    return np.asarray(equal.to_numpy(zero_copy_only=False), dtype=bool)


def _offsets(array: pa.Array) -> npt.NDArray[np.int64]:
    """Where each list of ``array`` starts in ``array.values`` (one more: where the last ends)."""
    if pa.types.is_fixed_size_list(array.type):
        starts: npt.NDArray[np.int64] = (np.arange(len(array) + 1, dtype=np.int64) + array.offset) * array.type.list_size
        return starts
    return np.asarray(array.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)


def _lists_equal(left: pa.Array, right: pa.Array, li: Positions, ri: Positions) -> npt.NDArray[np.bool_]:
    """Lists (and maps, as lists of entries) of equal length whose elements are all equal.

    The element pairs of every row are compared in one call on the flattened values, and each
    row then takes the AND of its own (``bincount`` of the unequal pairs: an empty list has none).
    """
    lo, ro = _offsets(left), _offsets(right)
    length = lo[li + 1] - lo[li]
    same: npt.NDArray[np.bool_] = length == ro[ri + 1] - ro[ri]
    rows = np.flatnonzero(same & (length > 0))
    if len(rows) == 0:
        return same
    counts = length[rows]
    owner = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
    within = np.arange(len(owner), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    elements = _equal(
        _array(left.values),
        _array(right.values),
        np.repeat(lo[li[rows]], counts) + within,
        np.repeat(ro[ri[rows]], counts) + within,
    )
    unequal = np.bincount(owner[~elements], minlength=len(rows))
    same[rows] = unequal == 0
    return same
