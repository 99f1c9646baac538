"""ChangeStore transactions: idempotent commit ids, validation before anything is written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from mixed_iceberg import CommitId, MixedTable
from mixed_iceberg.exceptions import (
    InvalidChangeActionError,
    MissingKeyError,
    MixedIcebergError,
    NotKeyedTableError,
    SchemaMismatchError,
    TransactionClosedError,
)
from mixed_iceberg.store.commit import last_committed_sequence
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of


@pytest.fixture
def table(tmp_path: Path) -> MixedTable:
    return local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])


def _snapshots(table: MixedTable) -> int:
    assert table.change_store is not None
    return len(table.refresh().change_store.metadata.snapshots)  # type: ignore[union-attr]


def test_same_commit_id_twice_is_a_noop(table: MixedTable) -> None:
    for _ in range(2):
        with table.new_transaction(CommitId("job-1", 7)) as txn:
            txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    assert _snapshots(table) == 1
    assert txn.outcome is not None
    assert txn.outcome.skipped
    assert table.scan().to_arrow().num_rows == 1


def test_older_sequence_of_same_writer_is_a_noop_but_other_writers_commit(table: MixedTable) -> None:
    with table.new_transaction(("job-1", 7)) as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    with table.new_transaction(("job-1", 6)) as txn:
        txn.write(changes([("+I", 2, "a", 1, 1.0)]))
    with table.new_transaction(("job-2", 1)) as txn:
        txn.write(changes([("+I", 3, "a", 1, 1.0)]))
    assert [r[0] for r in rows_of(table.scan().to_arrow())] == [1, 3]
    assert table.change_store is not None
    assert last_committed_sequence(table.change_store, "job-1") == 7
    assert last_committed_sequence(table.change_store, "job-2") == 1


def test_skipped_commit_leaves_no_files_behind(table: MixedTable, tmp_path: Path) -> None:
    for _ in range(2):
        with table.new_transaction(("job", 1)) as txn:
            txn.write(changes([("+I", 1, "a", 1, 1.0), ("+I", 2, "b", 1, 1.0)]))
    parquet = list((tmp_path / "wh").rglob("*.parquet"))
    assert table.change_store is not None
    live = table.change_store.inspect.files().column("file_path").to_pylist()
    assert sorted(p.as_uri() for p in parquet) == sorted(live)


def test_commit_id_recorded_in_snapshot_summary(table: MixedTable) -> None:
    with table.new_transaction(("flink-abc", 42), summary={"kafka.offsets": '{"0": 10}'}) as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    assert table.change_store is not None
    summary = table.refresh().change_store.current_snapshot().summary  # type: ignore[union-attr]
    assert summary["mixed-iceberg.commit.writer"] == "flink-abc"
    assert summary["mixed-iceberg.commit.sequence"] == "42"
    assert summary["kafka.offsets"] == '{"0": 10}'


@pytest.mark.parametrize(
    ("batch", "error", "message"),
    [
        (changes([("+X", 1, "a", 1, 1.0)]), InvalidChangeActionError, "found ['+X']"),
        (
            changes([("+I", 1, "a", 1, 1.0)]).drop_columns(["_change_action"]),
            InvalidChangeActionError,
            "expected a '_change_action' column",
        ),
        (changes([("+I", 1, "a", 1, 1.0)]).drop_columns(["id"]), MissingKeyError, "'id' is missing"),
        (
            changes([("+I", 1, "a", 1, 1.0)]).set_column(0, "id", pa.array([None], pa.int64())),
            MissingKeyError,
            "expected non-null, found 1 null(s), first at row 0",
        ),
        (changes([("+I", 1, "a", 1, 1.0)]).append_column("extra", pa.array([1])), SchemaMismatchError, "unexpected ['extra']"),
        (
            changes([("+I", 1, "a", 1, 1.0)]).set_column(2, "qty", pa.array(["many"])),
            SchemaMismatchError,
            "'qty' expected type int, found string",
        ),
        (
            changes([("+I", 1, "a", 1, 1.0)])
            .set_column(0, "id", pa.array([2**40], pa.int64()))
            .cast(
                pa.schema(
                    [
                        ("id", pa.int64()),
                        ("cat", pa.string()),
                        ("qty", pa.int32()),
                        ("price", pa.float64()),
                        ("_change_action", pa.string()),
                    ]
                )
            )
            .set_column(2, "qty", pa.array([2**40], pa.int64())),
            SchemaMismatchError,
            "'qty' expected type int, found long",
        ),
    ],
    ids=["unknown-action", "no-action-column", "no-key-column", "null-key", "extra-column", "bad-type", "overflow"],
)
def test_bad_batches_raise_specific_errors_and_write_nothing(
    table: MixedTable, batch: pa.Table, error: type[Exception], message: str
) -> None:
    def write_good_then_bad() -> None:
        with table.new_transaction() as txn:
            txn.write(changes([("+I", 9, "ok", 1, 1.0)]))
            txn.write(batch)

    with pytest.raises(error) as info:
        write_good_then_bad()
    assert message in str(info.value)
    assert "db.orders" in str(info.value)
    assert isinstance(info.value, MixedIcebergError)
    assert _snapshots(table) == 0
    assert table.scan().to_arrow().num_rows == 0


def test_transaction_cannot_be_reused_after_commit(table: MixedTable) -> None:
    txn = table.new_transaction()
    txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    txn.commit()
    with pytest.raises(TransactionClosedError, match="transaction is committed; expected an open transaction"):
        txn.write(changes([("+I", 2, "a", 1, 1.0)]))


def test_upsert_mode_replaces_existing_key_on_plain_insert(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table(
        "db.u", ORDERS_SCHEMA, primary_key=["id"], properties={"write.upsert.enabled": "true"}
    )
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "b", 2, 2.0), ("+I", 2, "c", 3, 3.0)]))
    assert rows_of(table.scan().to_arrow()) == [(1, "b", 2, 2.0), (2, "c", 3, 3.0)]


def test_unkeyed_table_refuses_change_transactions(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.log", ORDERS_SCHEMA)
    with pytest.raises(NotKeyedTableError, match="no primary key"):
        table.new_transaction()


def test_time_travel_reads_an_older_change_snapshot(table: MixedTable) -> None:
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    assert table.change_store is not None
    first = table.refresh().change_store.current_snapshot().snapshot_id  # type: ignore[union-attr]
    with table.new_transaction() as txn:
        txn.write(changes([("-D", 1, "a", 1, 1.0), ("+I", 2, "b", 2, 2.0)]))
    assert rows_of(table.scan(snapshot_id=first).to_arrow()) == [(1, "a", 1, 1.0)]
    assert rows_of(table.scan().to_arrow()) == [(2, "b", 2, 2.0)]
