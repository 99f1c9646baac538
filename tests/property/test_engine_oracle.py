"""Merge engines: random CDC in random transactions, merged read == a plain replay of the engine.

Each engine's replay below is written from its definition (docs/semantics.md and
mixed_iceberg/merge/engines.py), row by row in arrival order, independently of the kernel.
The same streams run through random minor/major/full optimizing and ``changes()``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.property.test_merge_oracle import Row, upsert_histories
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

_names = itertools.count()
State = dict[int, list[object]]


def _pairs(txn: list[Row]) -> list[tuple[Row, bool]]:
    """Rows of one transaction with whether each -U is the half of a pair (+U of its key next)."""
    return [
        (row, row[0] == "-U" and i + 1 < len(txn) and txn[i + 1][0] == "+U" and txn[i + 1][1] == row[1])
        for i, row in enumerate(txn)
    ]


def _dedupe_by_qty(state: State, row: Row, paired: bool) -> None:
    """deduplicate with sequence.field=qty: the row with the larger qty wins, then the later."""
    current = state.get(row[1])
    if row[0] in ("+I", "+U"):
        if current is None or current[2] is None or (row[3] is not None and row[3] >= current[2]):  # type: ignore[operator]
            state[row[1]] = list(row[1:])
    elif not paired and current is not None and (row[3] is None or current[2] is None or row[3] >= current[2]):  # type: ignore[operator]
        del state[row[1]]


def _partial_update(state: State, row: Row, paired: bool) -> None:
    if row[0] in ("+I", "+U"):
        current = state.get(row[1])
        if current is None:
            state[row[1]] = list(row[1:])
        else:
            state[row[1]] = [new if new is not None else old for old, new in zip(current, row[1:], strict=True)]
    elif not paired:
        state.pop(row[1], None)


def _first_row(state: State, row: Row, paired: bool) -> None:
    if row[0] in ("+I", "+U"):
        state.setdefault(row[1], list(row[1:]))
    elif not paired:
        state.pop(row[1], None)


_AGG = {"fields.qty.aggregate-function": "sum", "fields.price.aggregate-function": "max", "fields.price.ignore-retract": "true"}


def _aggregation(state: State, row: Row, paired: bool) -> None:
    """qty sum (retracts), price max (ignores retractions), cat last_non_null_value (retracts)."""
    key, cat, qty, price = row[1], row[2], row[3], row[4]
    current = state.get(key)
    if row[0] in ("+I", "+U"):
        if current is None:
            state[key] = [key, cat, qty, price]
            return
        current[1] = cat if cat is not None else current[1]
        current[2] = qty if current[2] is None else current[2] if qty is None else current[2] + qty  # type: ignore[operator]
        current[3] = price if current[3] is None else current[3] if price is None else max(current[3], price)  # type: ignore[type-var]
    elif current is not None:
        if cat is not None:
            current[1] = None
        if qty is not None:
            current[2] = -qty if current[2] is None else current[2] - qty  # type: ignore[operator]


ENGINES: dict[str, tuple[dict[str, str], Callable[[State, Row, bool], None]]] = {
    "deduplicate-by-sequence-field": ({"sequence.field": "qty"}, _dedupe_by_qty),
    "partial-update": ({"merge-engine": "partial-update"}, _partial_update),
    "first-row": ({"merge-engine": "first-row"}, _first_row),
    "aggregation": ({"merge-engine": "aggregation", **_AGG}, _aggregation),
}


def replay_engine(
    apply: Callable[[State, Row, bool], None], initial: list[Row], txns: list[list[Row]]
) -> list[tuple[object, ...]]:
    state: State = {}
    for row, paired in _pairs(initial):
        apply(state, row, paired)
    for txn in txns:
        for row, paired in _pairs(txn):
            apply(state, row, paired)
    return sorted(tuple(v) for v in state.values())


@pytest.mark.parametrize("partition_by", [None, ["cat"]], ids=["unpartitioned", "keys-move-between-partitions"])
@pytest.mark.parametrize("engine", list(ENGINES))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    history=upsert_histories(),
    runs=st.lists(st.sampled_from([None, "minor", "major", "full"]), min_size=1, max_size=4),
)
def test_merged_read_equals_engine_replay(
    tmp_path: Path,
    engine: str,
    partition_by: list[str] | None,
    history: tuple[list[Row], list[list[Row]]],
    runs: list[str | None],
) -> None:
    properties, apply = ENGINES[engine]
    initial, txns = history
    table = local_catalog(tmp_path / "c").create_table(
        f"db.e{next(_names)}",
        ORDERS_SCHEMA,
        primary_key=["id"],
        partition_by=partition_by,
        properties={**properties, "self-optimizing.target-size": "1024"},
    )
    if initial:
        table.bulk_load(changes(initial).drop_columns(["_change_action"]))
    done: list[list[Row]] = []
    for step, ops in enumerate(txns):
        if ops:
            with table.new_transaction(("oracle", step)) as txn:
                txn.write(changes(ops))
        done.append(ops)
        expected = replay_engine(apply, initial, done)
        assert rows_of(table.scan().to_arrow()) == expected, f"before optimizing at step {step}"
        assert rows_of(table.scan(row_filter="qty >= 50").to_arrow()) == [r for r in expected if (r[2] or 0) >= 50]  # type: ignore[operator]
        kind = runs[step % len(runs)]
        if kind is not None:
            table.optimizing.run(kind)
            assert rows_of(table.scan().to_arrow()) == expected, f"after {kind} optimizing at step {step}"
    table.optimizing.run("full")
    expected = replay_engine(apply, initial, done)
    assert rows_of(table.scan().to_arrow()) == expected
    assert rows_of(table.refresh().base_store.scan().to_arrow()) == expected, "other readers see the merged rows after full"
    # changes() carries the merged states: replaying them as plain CDC gives the same table
    loaded = replay_engine(apply, initial, [])
    state = {r[0]: r for r in loaded}
    for r in table.changes().to_arrow().to_pylist():
        if r["_change_action"] in ("+I", "+U"):
            state[r["id"]] = (r["id"], r["cat"], r["qty"], r["price"])
        else:
            state.pop(r["id"], None)
    assert sorted(state.values()) == expected
