"""Time travel that never lies: either store's snapshot ids, as-of times, table-level history."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from mixed_iceberg.exceptions import InvalidScanError, NoSuchSnapshotError
from mixed_iceberg.table import MixedTable
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of


def _table(tmp_path: Path) -> tuple[MixedTable, list[tuple[int, int, list[tuple[object, ...]]]]]:
    """A table with a load, two commits and a full optimizing; (store snapshot, ms, state) after each."""
    table = local_catalog(tmp_path / "c").create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    states = []

    def record(store_snapshot: int) -> None:
        states.append((store_snapshot, int(time.time() * 1000), rows_of(table.scan().to_arrow())))
        time.sleep(0.01)

    table.bulk_load(changes([("+I", k, "a", k, 1.0) for k in range(3)]).drop_columns(["_change_action"]))
    record(table.refresh().base_store.current_snapshot().snapshot_id)  # type: ignore[union-attr]
    for ops in ([("-D", 0, None, None, None)], [("+I", 1, "b", 9, 2.0)]):
        with table.new_transaction() as txn:
            txn.write(changes(ops))  # type: ignore[arg-type]
        record(table.refresh().change_store.current_snapshot().snapshot_id)  # type: ignore[union-attr]
    table.optimizing.run("full")
    record(table.refresh().base_store.current_snapshot().snapshot_id)  # type: ignore[union-attr]
    return table, states


def test_snapshot_ids_of_either_store_and_times_read_the_state_of_then(tmp_path: Path) -> None:
    table, states = _table(tmp_path)
    for snapshot_id, at_ms, expected in states:
        assert rows_of(table.scan(snapshot_id=snapshot_id).to_arrow()) == expected
        assert rows_of(table.scan(as_of=at_ms).to_arrow()) == expected
        moment = datetime.fromtimestamp(at_ms / 1000, tz=UTC)
        assert rows_of(table.scan(as_of=moment).to_arrow()) == expected
        assert rows_of(table.scan(as_of=moment.replace(tzinfo=None)).to_arrow()) == expected, "naive means UTC"
    assert table.scan(as_of=0).to_arrow().num_rows == 0, "before the table had rows"


def test_as_of_takes_iso_strings_and_dates(tmp_path: Path) -> None:
    table, states = _table(tmp_path)
    _, at_ms, expected = states[-1]
    moment = datetime.fromtimestamp(at_ms / 1000, tz=UTC)
    assert rows_of(table.scan(as_of=moment.isoformat()).to_arrow()) == expected
    assert rows_of(table.scan(as_of=moment.replace(tzinfo=None).isoformat()).to_arrow()) == expected, "naive means UTC"
    assert table.scan(as_of="2024-01-01").to_arrow().num_rows == 0, "a day before the table existed"
    assert table.scan(as_of=date(2024, 1, 1)).to_arrow().num_rows == 0
    with pytest.raises(InvalidScanError, match="as_of expected an ISO-8601 date or time"):
        table.scan(as_of="yesterday")
    with pytest.raises(InvalidScanError, match="found float"):
        table.scan(as_of=1.5)  # type: ignore[arg-type]


def test_bad_time_travel_arguments_raise_specific_errors(tmp_path: Path) -> None:
    table, states = _table(tmp_path)
    with pytest.raises(NoSuchSnapshotError, match="123"):
        table.scan(snapshot_id=123)
    with pytest.raises(InvalidScanError, match="either as_of or a snapshot id"):
        table.scan(snapshot_id=states[0][0], as_of=states[0][1])
    with pytest.raises(InvalidScanError, match="nope"):
        table.scan(selected_fields=("id", "nope")).to_arrow()


def test_snapshots_and_history_list_both_stores(tmp_path: Path) -> None:
    table, _ = _table(tmp_path)
    snapshots = table.snapshots()
    stores = snapshots.column("store").to_pylist()
    assert stores.count("change") == 2
    assert stores.count("base") == 2
    assert snapshots.column("optimizing_type").to_pylist()[-1] == "full"
    times = snapshots.column("committed_at").to_pylist()
    assert times == sorted(times)
    history = table.history()
    assert history.num_rows == 4
    assert set(history.column("snapshot_id").to_pylist()) == set(snapshots.column("snapshot_id").to_pylist())
