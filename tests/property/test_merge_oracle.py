"""The central correctness test: random CDC in random transactions, merged read == replay.

Protects DESIGN.md invariants 1 and 2 (LSN order per key, -U/+U pairs) and the optimized
sequence / bulk-load paths of the reader.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

_names = itertools.count()

Row = tuple[str, int, str | None, int | None, float | None]


@st.composite
def cdc_histories(draw: st.DrawFn, keys: int = 12) -> tuple[list[Row], list[list[Row]]]:
    """An initial load and well-formed CDC split into transactions, over a small key space."""
    state: dict[int, tuple[str | None, int | None, float | None]] = {}
    initial: list[Row] = []
    for key in draw(st.lists(st.integers(0, keys - 1), unique=True, max_size=keys)):
        values = (draw(st.sampled_from(["a", "b", None])), draw(st.integers(0, 5)), 1.5)
        state[key] = values
        initial.append(("+I", key, *values))
    ops: list[Row] = []
    for _ in range(draw(st.integers(1, 40))):
        key = draw(st.integers(0, keys - 1))
        new = (draw(st.sampled_from(["a", "b", "c"])), draw(st.integers(0, 100)), float(draw(st.integers(0, 9))))
        if key in state:
            if draw(st.booleans()):
                ops += [("-U", key, *state[key]), ("+U", key, *new)]
                state[key] = new
            else:
                ops.append(("-D", key, *state[key]))
                del state[key]
        else:
            ops.append(("+I", key, *new))
            state[key] = new
    cuts = sorted(draw(st.lists(st.integers(0, len(ops)), max_size=4)))
    bounds = [0, *cuts, len(ops)]
    txns = [ops[a:b] for a, b in itertools.pairwise(bounds)]
    # a -U/+U pair split across transactions is legal CDC too; keep them as drawn
    return initial, txns


@st.composite
def upsert_histories(draw: st.DrawFn, keys: int = 8) -> tuple[list[Row], list[list[Row]]]:
    """Streams no CDC source promises to keep well formed: +I of a key that exists, +U without
    -U, deletes of absent keys, a lone -U, and an initial load that repeats keys."""
    initial: list[Row] = [
        ("+I", key, draw(st.sampled_from(["a", "b", None])), draw(st.integers(0, 5)), 1.5)
        for key in draw(st.lists(st.integers(0, keys - 1), max_size=keys + 4))
    ]
    ops: list[Row] = []
    for _ in range(draw(st.integers(1, 40))):
        key = draw(st.integers(0, keys - 1))
        new = (draw(st.sampled_from(["a", "b", "c"])), draw(st.integers(0, 100)), float(draw(st.integers(0, 9))))
        action = draw(st.sampled_from(["+I", "+U", "-D", "-U", "pair", "key-only"]))
        if action == "pair":
            ops += [("-U", key, *new), ("+U", key, *new)]
        elif action == "key-only":  # a delete that carries only its key (Debezium's default before-image)
            ops.append(("-D", key, None, None, None))
        else:
            ops.append((action, key, *new))
    cuts = sorted(draw(st.lists(st.integers(0, len(ops)), max_size=4)))
    bounds = [0, *cuts, len(ops)]
    return initial, [ops[a:b] for a, b in itertools.pairwise(bounds)]


def replay(initial: list[Row], txns: list[list[Row]]) -> list[tuple[object, ...]]:
    """The latest change of each key wins: a data row sets it, a delete removes it."""
    state = {r[1]: r[1:] for r in initial}
    for op in itertools.chain.from_iterable(txns):
        if op[0] in ("+I", "+U"):
            state[op[1]] = op[1:]
        else:
            state.pop(op[1], None)
    return sorted(state.values())


@pytest.mark.parametrize("partition_by", [None, ["cat"]], ids=["unpartitioned", "partitioned-by-mutable-cat"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(history=cdc_histories())
def test_merged_read_equals_replay(
    tmp_path: Path, partition_by: list[str] | None, history: tuple[list[Row], list[list[Row]]]
) -> None:
    initial, txns = history
    catalog = local_catalog(tmp_path / "cat")
    table = catalog.create_table(f"db.t{next(_names)}", ORDERS_SCHEMA, primary_key=["id"], partition_by=partition_by)
    if initial:
        table.bulk_load(changes(initial).drop_columns(["_change_action"]))
    for number, ops in enumerate(txns):
        with table.new_transaction(("oracle", number)) as txn:
            if ops:
                txn.write(changes(ops))
    assert rows_of(table.scan().to_arrow()) == replay(initial, txns)


@pytest.mark.parametrize(
    "partition_by", [None, ["id"], ["cat"]], ids=["unpartitioned", "partitioned-by-key", "partitioned-by-moving-cat"]
)
@pytest.mark.parametrize("upsert", ["false", "true"])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(history=upsert_histories())
def test_upsert_streams_read_as_latest_by_key(
    tmp_path: Path, partition_by: list[str] | None, upsert: str, history: tuple[list[Row], list[list[Row]]]
) -> None:
    initial, txns = history
    table = local_catalog(tmp_path / "cat").create_table(
        f"db.u{next(_names)}",
        ORDERS_SCHEMA,
        primary_key=["id"],
        partition_by=partition_by,
        properties={"write.upsert.enabled": upsert},
    )
    if initial:
        table.bulk_load(changes(initial).drop_columns(["_change_action"]))
    for number, ops in enumerate(txns):
        if ops:
            with table.new_transaction(("oracle", number)) as txn:
                txn.write(changes(ops))
    expected = replay(initial, txns)
    assert rows_of(table.scan().to_arrow()) == expected
    assert rows_of(table.scan(row_filter="qty >= 50").to_arrow()) == [r for r in expected if (r[2] or 0) >= 50]
    cdc = table.changes().to_arrow()  # from the empty table: the initial load comes as inserts
    replayed = [(r["_change_action"], r["id"], r["cat"], r["qty"], r["price"]) for r in cdc.to_pylist()]
    assert replay([], [replayed]) == expected  # type: ignore[list-item]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=cdc_histories())
def test_changes_replay_to_the_same_state(tmp_path: Path, history: tuple[list[Row], list[list[Row]]]) -> None:
    """Replaying ``changes()`` output reproduces the state the transactions produced."""
    _, txns = history
    table = local_catalog(tmp_path / "cat").create_table(f"db.c{next(_names)}", ORDERS_SCHEMA, primary_key=["id"])
    for ops in txns:
        if ops:
            with table.new_transaction() as txn:
                txn.write(changes(ops))
    cdc = table.changes().to_arrow()
    replayed = [(r["_change_action"], r["id"], r["cat"], r["qty"], r["price"]) for r in cdc.to_pylist()]
    assert replay([], [replayed]) == replay([], txns)
    assert rows_of(table.scan().to_arrow()) == replay([], txns)
