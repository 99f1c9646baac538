"""The nested-aware row equality kernel against a plain Python reference (``to_pylist`` and
``canonical``): nulls equal at every level, NaN equal to NaN, lists by length then elements,
maps as their ordered entries, structs by fields, extension types by storage; sliced and
chunked inputs read at the right positions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixed_iceberg.merge.equality import equal_at, equal_rows
from tests.support.iceberg_types import NESTED, PRIMITIVES, arrow_array, canonical, column_types, values


def _reference(left: pa.Array | pa.ChunkedArray, right: pa.Array | pa.ChunkedArray, li: list[int], ri: list[int]) -> list[bool]:
    a, b = left.to_pylist(), right.to_pylist()
    return [canonical(a[i]) == canonical(b[j]) for i, j in zip(li, ri, strict=True)]


@st.composite
def _pairs(draw: st.DrawFn, kind: pa.DataType | None = None) -> tuple[Any, Any, list[int], list[int]]:
    """Two arrays of one drawn type, their values picked from one small pool (so that equal
    rows are common), each maybe sliced and chunked, and positions to compare."""
    kind = kind if kind is not None else draw(column_types())
    pool = draw(st.lists(values(kind), min_size=1, max_size=5))
    arrays = []
    for _ in range(2):
        picked = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=8))
        lead = draw(st.integers(0, 2))  # a slice: the array's offset is not 0
        array: Any = arrow_array([*pool[:1] * lead, *picked], kind).slice(lead)
        if draw(st.booleans()) and len(array) > 1:
            cut = draw(st.integers(1, len(array) - 1))
            array = pa.chunked_array([array.slice(0, cut), array.slice(cut)])
        arrays.append(array)
    count = draw(st.integers(0, 10))
    li = draw(st.lists(st.integers(0, len(arrays[0]) - 1), min_size=count, max_size=count))
    ri = draw(st.lists(st.integers(0, len(arrays[1]) - 1), min_size=count, max_size=count))
    return arrays[0], arrays[1], li, ri


@settings(max_examples=200, deadline=None)
@given(case=_pairs())
def test_equal_at_matches_the_python_reference_for_every_drawn_type(case: tuple[Any, Any, list[int], list[int]]) -> None:
    left, right, li, ri = case
    assert equal_at(left, right, np.array(li, np.int64), np.array(ri, np.int64)).tolist() == _reference(left, right, li, ri)


@pytest.mark.parametrize("name", sorted({**PRIMITIVES, **NESTED}))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_equal_at_matches_the_python_reference_for_each_iceberg_type(name: str, data: st.DataObject) -> None:
    left, right, li, ri = data.draw(_pairs({**PRIMITIVES, **NESTED}[name]))
    assert equal_at(left, right, li, ri).tolist() == _reference(left, right, li, ri)


def test_nulls_and_nans_are_equal_at_every_level_and_a_null_is_not_an_empty_value() -> None:
    kind = pa.struct([pa.field("x", pa.float64()), pa.field("l", pa.large_list(pa.int32()))])
    rows = pa.array(
        [
            {"x": float("nan"), "l": [None, 1]},
            {"x": float("nan"), "l": [None, 1]},
            None,
            None,
            {"x": None, "l": None},
            {"x": None, "l": []},
            {"x": -0.0, "l": []},
            {"x": 0.0, "l": []},
        ],
        kind,
    )
    got = equal_at(rows, rows, [0, 2, 4, 3, 6], [1, 3, 5, 4, 7])
    assert got.tolist() == [True, True, False, False, True]


def test_lists_of_different_lengths_or_orders_differ_and_empty_lists_are_equal() -> None:
    rows = pa.array([[1, 2], [1, 2, 3], [2, 1], [], [], [1, 2]], pa.large_list(pa.int64()))
    assert equal_at(rows, rows, [0, 0, 3, 0], [1, 2, 4, 5]).tolist() == [False, False, True, True]


def test_maps_compare_their_entries_in_order() -> None:
    kind = pa.map_(pa.large_string(), pa.int64())
    rows = pa.array([[("a", 1), ("b", None)], [("a", 1), ("b", None)], [("b", None), ("a", 1)], [("a", 1), ("b", 2)]], kind)
    assert equal_at(rows, rows, [0, 0, 0], [1, 2, 3]).tolist() == [True, False, False]


def test_uuid_compares_its_storage_and_dictionaries_their_values() -> None:
    a, b = b"\x01" * 16, b"\x02" * 16
    ids = pa.array([a, b, a, None], pa.uuid())
    assert equal_at(ids, ids, [0, 0, 3], [2, 1, 3]).tolist() == [True, False, True]
    left = pa.array(["x", "y", None]).dictionary_encode()
    right = pa.DictionaryArray.from_arrays(pa.array([1, 0, None], pa.int32()), pa.array(["y", "x"]))
    assert equal_at(left, right, [0, 1, 2, 0], [0, 1, 2, 1]).tolist() == [True, True, True, False]


def test_fixed_size_lists_are_compared_from_their_offset() -> None:
    rows = pa.FixedSizeListArray.from_arrays(pa.array([9, 9, 1, 2, 1, 2, 1, 3]), 2).slice(1)
    assert equal_at(rows, rows, [0, 0], [1, 2]).tolist() == [True, False]


def test_equal_rows_needs_every_column_equal() -> None:
    table = pa.table({"k": [1, 1, 1], "v": pa.array([[1], [1], [2]], pa.large_list(pa.int64())), "s": ["a", "a", "a"]})
    assert equal_rows(table, table, [0, 0], [1, 2]).tolist() == [True, False]
    other = pa.table({"k": [1], "v": pa.array([[1]], pa.large_list(pa.int64())), "s": ["b"]})
    assert equal_rows(table, other, [0], [0]).tolist() == [False]


def test_mismatched_types_and_positions_are_refused() -> None:
    with pytest.raises(TypeError, match="one type"):
        equal_at(pa.array([1]), pa.array(["1"]), [0], [0])
    with pytest.raises(IndexError):
        equal_at(pa.array([1]), pa.array([1]), [1], [0])
    interval = pa.array([pa.MonthDayNano([1, 2, 3])], pa.month_day_nano_interval())
    with pytest.raises(TypeError, match="no equality"):
        equal_at(interval, interval, [0], [0])
