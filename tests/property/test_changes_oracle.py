"""``changes()`` is complete: replaying ``changes(a, b)`` onto ``scan(a)`` gives ``scan(b)``, for
every pair of ChangeStore snapshots (and the empty table, and now), whatever changed the merged
view in between: change transactions, ``bulk_load`` (into an empty table, with ``overwrite``, or
into a table with rows), another engine writing the BaseStore, optimizing of every type.

Each CDC row must also be a true change: ``+I`` of an absent key, ``-U`` and ``-D`` carrying the
key's row as it was, ``+U`` right after its ``-U``.
"""

from __future__ import annotations

import contextlib
import itertools
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixed_iceberg import MixedTable
from mixed_iceberg.exceptions import InvalidScanError, SnapshotExpiredError
from mixed_iceberg.optimizing.maintenance import TableMaintenance
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog
from tests.unit.maintenance.support import DAY, FakeClock

_names = itertools.count()

Row = tuple[Any, ...]
State = dict[int, Row]
_KEYS = 8


def _rows(draw: st.DrawFn, keys: list[int]) -> list[tuple[str, int, str | None, int | None, float | None]]:
    return [("+I", k, draw(st.sampled_from(["a", "b", None])), draw(st.integers(0, 9)), 1.5) for k in keys]


@st.composite
def operations(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """Random writes of every kind that changes the merged view, and optimizing runs."""
    ops: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(["txn", "txn", "txn", "load", "overwrite", "engine-delete", "optimize", "maintenance"]))
        if kind == "txn":
            batch = []
            for _ in range(draw(st.integers(1, 5))):
                key = draw(st.integers(0, _KEYS - 1))
                action = draw(st.sampled_from(["+I", "+U", "-D", "pair"]))
                row = (key, draw(st.sampled_from(["a", "b", "c"])), draw(st.integers(0, 9)), 2.5)
                batch += [("-U", *row), ("+U", *row)] if action == "pair" else [(action, *row)]
            ops.append((kind, batch))
        elif kind in ("load", "overwrite"):
            keys = draw(st.lists(st.integers(0, _KEYS - 1), unique=True, max_size=_KEYS))
            ops.append((kind, _rows(draw, keys)))
        elif kind == "engine-delete":
            ops.append((kind, draw(st.integers(0, _KEYS - 1))))
        elif kind == "maintenance":  # 8 days later: change-data TTL, snapshot expiry, orphan files
            ops.append((kind, None))
        else:
            ops.append((kind, draw(st.sampled_from(["minor", "major", "full"]))))
    return ops


def _apply(table: MixedTable, op: tuple[str, Any], number: int, clock: FakeClock | None = None) -> None:
    kind, arg = op
    if kind == "txn":
        with table.new_transaction(("oracle", number)) as txn:
            txn.write(changes(arg))
    elif kind == "load":
        table.bulk_load(changes(arg).drop_columns(["_change_action"]))
    elif kind == "overwrite":
        table.bulk_load(changes(arg).drop_columns(["_change_action"]), overwrite=True)
    elif kind == "engine-delete":  # another engine (pyiceberg) deletes from the BaseStore
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Delete operation did not match any records", UserWarning)
            table.base_store.delete(f"id = {arg}")
    elif kind == "maintenance":
        assert clock is not None
        clock.advance(8 * DAY)
        TableMaintenance(table.refreshed, clock=clock).run()
    else:
        table.optimizing.run(arg)
    table.refresh()


def _state(rows: pa.Table) -> State:
    return {r["id"]: (r["cat"], r["qty"], r["price"]) for r in rows.to_pylist()}


def _replay(start: State, cdc: pa.Table) -> State:
    """Apply CDC rows in order, checking each is a true change of the state it meets."""
    state = dict(start)
    rows = cdc.to_pylist()
    for i, row in enumerate(rows):
        key, image, action = row["id"], (row["cat"], row["qty"], row["price"]), row["_change_action"]
        if action == "+I":
            assert key not in state, f"+I of key {key}, which holds {state.get(key)}"
            state[key] = image
        elif action in ("-U", "-D"):
            assert state.get(key) == image, f"{action} of key {key}: image {image}, the state held {state.get(key)}"
            del state[key]
            if action == "-U":
                assert i + 1 < len(rows), "a -U ends the stream"
                assert (rows[i + 1]["_change_action"], rows[i + 1]["id"]) == ("+U", key), "a -U not followed by its +U"
        else:
            assert action == "+U"
            assert i > 0, "a +U begins the stream"
            assert rows[i - 1]["_change_action"] == "-U", "a +U without its -U"
            state[key] = image
    return state


@pytest.mark.parametrize("partition_by", [None, ["cat"]], ids=["unpartitioned", "partitioned-by-moving-cat"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=operations())
def test_replaying_changes_between_any_two_snapshots_gives_the_later_state(
    tmp_path: Path, partition_by: list[str] | None, ops: list[tuple[str, Any]]
) -> None:
    table = local_catalog(tmp_path / "cat").create_table(
        f"db.c{next(_names)}", ORDERS_SCHEMA, primary_key=["id"], partition_by=partition_by
    )
    clock = FakeClock()
    maintained: set[int] = set()  # ChangeStore snapshots a maintenance run came after
    for number, op in enumerate(ops):
        _apply(table, op, number, clock)
        if op[0] == "maintenance":
            assert table.change_store is not None
            maintained |= {s.snapshot_id for s in table.change_store.metadata.snapshots}
    assert table.change_store is not None
    snapshots: list[int | None] = [None, *(s.snapshot_id for s in table.change_store.metadata.snapshots)]
    states: dict[int | None, State] = {None: {}}
    for snapshot in snapshots[1:]:
        with contextlib.suppress(SnapshotExpiredError):  # time travel to a state expiry removed
            states[snapshot] = _state(table.scan(snapshot_id=snapshot).to_arrow())
    now = _state(table.scan().to_arrow())
    for i, start in enumerate(snapshots):
        for end in [*snapshots[i + 1 :], None]:
            if start not in states or (end is not None and end not in states):
                continue
            try:
                cdc = table.changes(from_snapshot=start, to_snapshot=end).to_arrow()
            except SnapshotExpiredError:
                # Only a range that maintenance cut: never from the beginning, never before any maintenance.
                assert start is not None, (end, ops)
                assert start in maintained, (start, end, ops)
                continue
            assert _replay(states[start], cdc) == (now if end is None else states[end]), (start, end, ops)


def test_a_reversed_range_is_refused(tmp_path: Path) -> None:
    table = local_catalog(tmp_path / "cat").create_table("db.reversed", ORDERS_SCHEMA, primary_key=["id"])
    for number in range(2):
        _apply(table, ("txn", [("+I", number, "a", 1, 1.0)]), number)
    assert table.change_store is not None
    first, second = (s.snapshot_id for s in table.change_store.metadata.snapshots)
    with pytest.raises(InvalidScanError, match="expected from_snapshot at or before to_snapshot"):
        table.changes(from_snapshot=second, to_snapshot=first)
    assert table.changes(from_snapshot=second, to_snapshot=second).to_arrow().num_rows == 0


def test_an_overwrite_shows_as_deletes_of_the_old_keys_and_inserts_of_the_new(tmp_path: Path) -> None:
    """The issue's case: a consumer replaying the CDC read ended with keys 1,2,3,4,8 where the
    table held 7,8."""
    table = local_catalog(tmp_path / "cat").create_table("db.overwritten", ORDERS_SCHEMA, primary_key=["id"])
    _apply(table, ("load", [("+I", k, "a", k, 1.0) for k in (1, 2, 3)]), 0)
    _apply(table, ("txn", [("+I", 4, "b", 4, 1.0), ("+I", 8, "b", 8, 1.0)]), 1)
    _apply(table, ("overwrite", [("+I", k, "c", k, 1.0) for k in (7, 8)]), 2)
    cdc = table.changes().to_arrow()
    assert sorted(_replay({}, cdc)) == [7, 8] == sorted(_state(table.scan().to_arrow()))
    overwrite = cdc.slice(cdc.num_rows - 7).to_pylist()
    assert sorted((r["_change_action"], r["id"], r["cat"]) for r in overwrite) == [
        ("+I", 7, "c"),
        ("+U", 8, "c"),
        ("-D", 1, "a"),
        ("-D", 2, "a"),
        ("-D", 3, "a"),
        ("-D", 4, "b"),
        ("-U", 8, "b"),
    ]


def test_a_range_whose_change_files_the_ttl_removed_says_so_and_from_the_beginning_starts_from_what_is_left(
    tmp_path: Path,
) -> None:
    table = local_catalog(tmp_path / "cat").create_table(
        "db.ttl", ORDERS_SCHEMA, primary_key=["id"], properties={"snapshot.keep.min-count": "100"}
    )
    for number in range(3):
        _apply(table, ("txn", [("+I", number, "a", number, 1.0)]), number)
    assert table.change_store is not None
    first = table.change_store.metadata.snapshots[0].snapshot_id
    _apply(table, ("optimize", "full"), 3)  # merged: the TTL may now remove the change files
    _apply(table, ("maintenance", None), 4, FakeClock())
    assert table.change_store is not None
    assert any(s.summary is not None and s.summary.get("deleted-data-files") for s in table.change_store.metadata.snapshots)
    with pytest.raises(SnapshotExpiredError, match="change-data TTL removed"):
        table.changes(from_snapshot=first).to_arrow()
    _apply(table, ("txn", [("-D", 1, "a", 1, 1.0)]), 5)
    cdc = table.changes().to_arrow()
    assert _replay({}, cdc) == _state(table.scan().to_arrow()) == {0: ("a", 0, 1.0), 2: ("a", 2, 1.0)}
    assert cdc.column("_change_action").to_pylist()[-1] == "-D"


def test_changes_under_a_merge_engine_compare_nested_rows(tmp_path: Path) -> None:
    """A partial-update row that leaves the state as it was emits nothing, nested columns
    included (Arrow has no equality kernel for them: merge/equality.py)."""
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("tags", pa.list_(pa.int32())), ("dims", pa.struct([("w", pa.float64())]))]
    )
    table = local_catalog(tmp_path / "cat").create_table(
        "db.partial", schema, primary_key=["id"], properties={"merge-engine": "partial-update"}
    )
    rows = [
        {"id": 1, "tags": [1, 2], "dims": {"w": float("nan")}, "_change_action": "+I"},
        {"id": 1, "tags": None, "dims": None, "_change_action": "+I"},  # no non-null field: no change
        {"id": 1, "tags": [3], "dims": None, "_change_action": "+I"},
    ]
    with table.new_transaction() as txn:
        txn.write(pa.Table.from_pylist(rows, schema=schema.append(pa.field("_change_action", pa.string()))))
    cdc = table.changes().to_arrow().to_pylist()
    assert [(r["_change_action"], r["tags"]) for r in cdc] == [("+I", [1, 2]), ("-U", [1, 2]), ("+U", [3])]


def test_from_the_beginning_after_expiry_took_the_first_snapshots_starts_from_the_oldest_state_left(tmp_path: Path) -> None:
    """Expiry clears the parent id of the oldest snapshot it keeps: that snapshot is not the
    table's first, and the history before it (change files the TTL removed) is gone."""
    table = local_catalog(tmp_path / "cat").create_table("db.expired", ORDERS_SCHEMA, primary_key=["id"])
    _apply(table, ("load", [("+I", k, "a", k, 1.0) for k in range(3)]), 0)
    clock = FakeClock()
    for number in range(1, 4):
        _apply(table, ("txn", [("+U", number, "b", number, 2.0)]), number)
        _apply(table, ("optimize", "full"), 10 + number)
        _apply(table, ("maintenance", None), 20 + number, clock)
    _apply(table, ("txn", [("-D", 0, "a", 0, 1.0)]), 30)
    for number in range(2):  # later runs that remove nothing, and expire the commits of those that did
        _apply(table, ("maintenance", None), 25 + number, clock)
    assert table.change_store is not None
    assert min(s.sequence_number or 0 for s in table.change_store.metadata.snapshots) > 1, "expiry took the first ones"
    assert not any(s.summary is not None and s.summary.get("deleted-data-files") for s in table.change_store.metadata.snapshots)
    assert _replay({}, table.changes().to_arrow()) == _state(table.scan().to_arrow())
