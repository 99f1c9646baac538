"""Aggregate functions on the values that break them, kernel against replay (pure, fast).

``sum``: a key's sum never feels another key's values (a running total of the whole column
turned 1 + 2 into NaN after another key's inf, and into 0 after its 1e300); integers wrap as
Java's do; decimals are exact at every precision and null past the column's. ``min``/``max``:
Arrow's order (NaN above every number, -0.0 equal to 0.0) and a value the key holds (ranks
were once mapped to distinct values that -0.0 and 0.0 split, shifting every later one).
"""

from __future__ import annotations

import decimal
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixed_iceberg.config.merge import MergeConfig, MergeEngine
from mixed_iceberg.merge.engines import scan_states
from tests.support.iceberg_types import canonical

_EXACT = decimal.Context(prec=100)
_FLOATS = [-0.0, 0.0, 1.0, 2.5, -3.0, 1e300, -1e300, math.inf, -math.inf, math.nan]
#: (type, values drawn for it)
_KINDS: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "double": (pa.float64(), st.sampled_from(_FLOATS)),
    "float": (pa.float32(), st.sampled_from([v for v in _FLOATS if abs(v) != 1e300])),
    "int": (pa.int32(), st.sampled_from([1, -7, 2**31 - 1, -(2**31)])),
    "long": (pa.int64(), st.sampled_from([1, -7, 2**63 - 1, -(2**63)])),
    "decimal_1_0": (pa.decimal128(1, 0), st.integers(-9, 9).map(decimal.Decimal)),
    "decimal_38_10": (
        pa.decimal128(38, 10),
        st.sampled_from([10**38 - 1, -(10**38 - 1), 1, 12345]).map(lambda i: decimal.Decimal(i).scaleb(-10, context=_EXACT)),
    ),
    "string": (pa.large_string(), st.sampled_from(["", "a", "ab", "b", "é"])),
    "date": (pa.date32(), st.dates()),
}

#: (is a data row, key, value); a row that is not data is a retraction (-D)
Row = tuple[bool, int, Any]


def _rows(values: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Row]]:
    return st.lists(st.tuples(st.booleans() | st.just(True), st.integers(0, 2), st.none() | values), min_size=1, max_size=14)


def _merged(kind: pa.DataType, function: str, rows: list[Row], ignore_retract: bool) -> dict[int, Any]:
    table = pa.table({"k": pa.array([r[1] for r in rows], pa.int64()), "a": pa.array([r[2] for r in rows], kind)})
    config = MergeConfig(
        MergeEngine.AGGREGATION, functions={"a": function}, ignore_retract=frozenset({"a"} if ignore_retract else ())
    )
    scanned = scan_states(
        config,
        table,
        ["k"],
        np.array([r[1] for r in rows], np.int64),
        np.arange(1, len(rows) + 1, dtype=np.int64),
        np.array([r[0] for r in rows]),
        np.zeros(len(rows), bool),
    )
    at = np.flatnonzero(scanned.last & scanned.exists)
    return {s["k"]: canonical(s["a"]) for s in scanned.states.take(pa.array(at)).to_pylist()}


def _negated(value: Any) -> Any:
    return value.copy_negate() if isinstance(value, decimal.Decimal) else -value  # Decimal's - rounds at 28 digits


def _fitted(total: Any, kind: pa.DataType) -> Any:
    if pa.types.is_integer(kind):
        bits = kind.bit_width
        return (total + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)
    if pa.types.is_decimal(kind):
        return total if total.scaleb(kind.scale, context=_EXACT).copy_abs() < 10**kind.precision else None
    return float(np.float32(total)) if kind == pa.float32() else total


@settings(max_examples=300, deadline=None)
@given(data=st.data(), name=st.sampled_from(["double", "float", "int", "long", "decimal_1_0", "decimal_38_10"]))
def test_a_sum_is_its_own_keys_values_wrapped_or_null_as_the_type_says(data: st.DataObject, name: str) -> None:
    kind, values = _KINDS[name]
    # Floats: one key takes the large and special values, the others small ones, so that another
    # key's values could disturb them; within a key the replay adds in row order, as Paimon does
    # (-1e300, 1e300, 1.0 is 1.0 that way, 0.0 in a tree order).
    rows = data.draw(_rows(values))
    if pa.types.is_floating(kind):
        rows = [(d, k, v if k == 0 or v is None or abs(v) < 10 else 1.0) for d, k, v in rows]
    state: dict[int, list[Any]] = {}  # key -> [the sum as the column holds it, or None]
    for is_data, key, value in rows:
        if is_data:
            held = state.setdefault(key, [None])
        elif key in state:
            held = state[key]
            value = None if value is None else _negated(value)
        else:
            continue
        if value is not None:  # row by row, as Paimon: a sum past the precision is null, and a null takes the next value
            held[0] = (
                value
                if held[0] is None
                else _fitted(_EXACT.add(held[0], value), kind)
                if isinstance(value, decimal.Decimal)
                else held[0] + value
            )
    expected = {k: canonical(None if v[0] is None else _fitted(v[0], kind)) for k, v in state.items()}
    assert _merged(kind, "sum", rows, ignore_retract=False) == expected


def _order(value: Any) -> Any:
    return (1, 0.0) if isinstance(value, float) and math.isnan(value) else (0, value)


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    name=st.sampled_from(["double", "float", "string", "date", "decimal_38_10"]),
    function=st.sampled_from(["min", "max"]),
)
def test_min_and_max_take_a_value_of_the_key_in_arrows_order(data: st.DataObject, name: str, function: str) -> None:
    kind, values = _KINDS[name]
    rows = data.draw(_rows(values))
    seen: dict[int, list[Any]] = {}
    for is_data, key, value in rows:
        if is_data:
            seen.setdefault(key, [])
            if value is not None:
                seen[key].append(value)
    pick = min if function == "min" else max
    expected = {k: canonical(pick(v, key=_order) if v else None) for k, v in seen.items()}
    assert _merged(kind, function, rows, ignore_retract=True) == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([math.inf, -math.inf, 1.0], ("NaN",)),  # IEEE's answer, without a numpy warning (an error under -W error)
        ([1e308, 1e308], math.inf),
        ([math.nan, 1.0], ("NaN",)),
        ([-1e300, 1e300, 1.0], 1.0),  # added in row order, as Paimon's sum (a tree order gave 0.0)
    ],
)
def test_float_sums_give_ieee_answers_without_warnings(values: list[float], expected: Any) -> None:
    rows: list[Row] = [(True, 0, v) for v in values] + [(True, 1, 1.0), (True, 1, 2.0)]
    assert _merged(pa.float64(), "sum", rows, ignore_retract=False) == {0: expected, 1: 3.0}


def test_a_key_longer_than_a_rank_step_is_summed_in_row_order_too() -> None:
    # Keys past 64 rows take the per-key path of running_sums: the same order of additions.
    values = [1e300, -1e300, 1.0] * 30 + [0.5]
    rows: list[Row] = [(True, 0, v) for v in values] + [(True, 1, 0.25)] * 70
    total = 0.0
    for v in values:
        total += v
    assert _merged(pa.float64(), "sum", rows, ignore_retract=False) == {0: total, 1: 17.5}
