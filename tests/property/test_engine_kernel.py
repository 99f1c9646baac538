"""The merge-engine scans, row for row against a plain replay of each definition (pure, fast).

Rows are (kind, key, a, b, lsn): kind D is a data row, R a delete (-D or -U); a delete and a
data row of one key with one LSN are an update pair (-U/+U).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from mixed_iceberg.config.merge import MergeConfig, MergeEngine
from mixed_iceberg.merge.engines import scan_states

Row = tuple[str, int, int | None, str | None, int]


@st.composite
def streams(draw: st.DrawFn) -> list[Row]:
    rows: list[Row] = []
    for lsn in range(1, draw(st.integers(1, 12)) + 1):
        key = draw(st.integers(0, 2))
        a = draw(st.sampled_from([None, 1, 2, 5]))
        b = draw(st.sampled_from([None, "x", "y"]))
        kind = draw(st.sampled_from(["D", "R", "pair"]))
        if kind == "pair":
            rows += [
                ("R", key, draw(st.sampled_from([None, 1, 2])), draw(st.sampled_from([None, "x"])), lsn),
                ("D", key, a, b, lsn),
            ]
        else:
            rows.append((kind, key, a, b, lsn))
    return rows


def _paired(rows: list[Row]) -> list[tuple[Row, bool]]:
    return [
        (r, r[0] == "R" and i + 1 < len(rows) and rows[i + 1][0] == "D" and rows[i + 1][1] == r[1] and rows[i + 1][4] == r[4])
        for i, r in enumerate(rows)
    ]


def _merged(config: MergeConfig, rows: list[Row]) -> dict[int, tuple[Any, Any]]:
    table = pa.table(
        {
            "k": [r[1] for r in rows],
            "a": pa.array([r[2] for r in rows], pa.int64()),
            "b": pa.array([r[3] for r in rows], pa.string()),
        }
    )
    scanned = scan_states(
        config,
        table,
        ["k"],
        np.array([r[1] for r in rows], np.int64),
        np.array([r[4] for r in rows], np.int64),
        np.array([r[0] == "D" for r in rows]),
        np.zeros(len(rows), bool),
    )
    at = np.flatnonzero(scanned.last & scanned.exists)
    states = scanned.states.take(pa.array(at)).to_pylist()
    return {s["k"]: (s["a"], s["b"]) for s in states}


@settings(max_examples=300, deadline=None)
@given(rows=streams())
def test_partial_update_first_row_and_aggregation_match_their_replays(rows: list[Row]) -> None:
    partial: dict[int, list[Any]] = {}
    first: dict[int, list[Any]] = {}
    total: dict[int, list[Any]] = {}  # a: sum, b: last_non_null_value (both retract)
    for (kind, key, a, b, _), paired in _paired(rows):
        if kind == "D":
            old = partial.get(key)
            partial[key] = [a, b] if old is None else [a if a is not None else old[0], b if b is not None else old[1]]
            first.setdefault(key, [a, b])
            agg = total.get(key)
            if agg is None:
                total[key] = [a, b]
            else:
                agg[0] = a if agg[0] is None else agg[0] if a is None else agg[0] + a
                agg[1] = b if b is not None else agg[1]
            continue
        if not paired:
            partial.pop(key, None)
            first.pop(key, None)
        agg = total.get(key)
        if agg is not None:  # a retraction takes back the values it carries
            if a is not None:
                agg[0] = -a if agg[0] is None else agg[0] - a
            if b is not None:
                agg[1] = None
    assert _merged(MergeConfig(MergeEngine.PARTIAL_UPDATE), rows) == {k: tuple(v) for k, v in partial.items()}
    assert _merged(MergeConfig(MergeEngine.FIRST_ROW), rows) == {k: tuple(v) for k, v in first.items()}
    aggregation = MergeConfig(MergeEngine.AGGREGATION, functions={"a": "sum", "b": "last_non_null_value"})
    assert _merged(aggregation, rows) == {k: tuple(v) for k, v in total.items()}


@settings(max_examples=300, deadline=None)
@given(rows=streams())
def test_min_max_listagg_count_first_and_last_value_match_their_replays(rows: list[Row]) -> None:
    state: dict[int, dict[str, Any]] = {}
    for kind, key, a, b, _ in rows:
        cur = state.get(key)
        if kind == "D":
            if cur is None:
                state[key] = {"min": a, "max": a, "list": b, "count": int(a is not None), "first": a, "last": a}
                continue
            if a is not None:
                cur["min"] = a if cur["min"] is None else min(cur["min"], a)
                cur["max"] = a if cur["max"] is None else max(cur["max"], a)
                cur["count"] += 1
            if b is not None:
                cur["list"] = b if cur["list"] is None else f"{cur['list']},{b}"
            cur["last"] = a
        elif cur is not None and a is not None:
            cur["count"] -= 1
            cur["last"] = None
    ignore = frozenset({"a", "b"})
    for function in ("min", "max"):
        config = MergeConfig(MergeEngine.AGGREGATION, functions={"a": function, "b": "listagg"}, ignore_retract=ignore)
        assert _merged(config, rows) == {k: (v[function], v["list"]) for k, v in state.items()}
    for function, retractable in (("count", True), ("last_value", True), ("first_value", False)):
        config = MergeConfig(
            MergeEngine.AGGREGATION,
            functions={"a": function, "b": "listagg"},
            ignore_retract=frozenset({"b"}) | (frozenset() if retractable else {"a"}),
        )
        name = function.removesuffix("_value")
        assert {k: v[0] for k, v in _merged(config, rows).items()} == {k: v[name] for k, v in state.items()}


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 2), st.sampled_from([None, 1, 2, 3, 4]), st.booleans()), min_size=1, max_size=12))
def test_sequence_field_matches_its_replay(rows: list[tuple[int, int | None, bool]]) -> None:
    """deduplicate + sequence.field: a row replaces the key's row unless that one has a larger
    value; a delete removes it unless it has a larger value; a missing value: see engines.py."""
    state: dict[int, int] = {}
    for i, (key, seq, is_data) in enumerate(rows):
        held = state.get(key)
        if is_data:
            if held is None or rows[held][1] is None or (seq is not None and seq >= rows[held][1]):  # type: ignore[operator]
                state[key] = i
        elif held is not None and (seq is None or rows[held][1] is None or seq >= rows[held][1]):  # type: ignore[operator]
            del state[key]
    table = pa.table({"k": [r[0] for r in rows], "s": pa.array([r[1] for r in rows], pa.int64()), "i": list(range(len(rows)))})
    scanned = scan_states(
        MergeConfig(MergeEngine.DEDUPLICATE, "s"),
        table,
        ["k"],
        np.array([r[0] for r in rows], np.int64),
        np.arange(1, len(rows) + 1, dtype=np.int64),
        np.array([r[2] for r in rows]),
        np.zeros(len(rows), bool),
    )
    at = np.flatnonzero(scanned.last & scanned.exists)
    assert {s["k"]: s["i"] for s in scanned.states.take(pa.array(at)).to_pylist()} == state
