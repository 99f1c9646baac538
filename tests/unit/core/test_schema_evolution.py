"""Schema evolution of keyed tables: both stores, columns resolved by field id on every read."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pyiceberg.types import DoubleType, IntegerType, LongType, StringType

from mixed_iceberg import MixedTable
from mixed_iceberg.exceptions import CommitConflictError, SchemaEvolutionError
from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser
from mixed_iceberg.ingest.writer import PartitionIngestor
from mixed_iceberg.schema_evolution import MixedSchemaUpdate
from mixed_iceberg.typedef import TableFormat
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog


class SimulatedCrashError(Exception):
    """Stands in for the process dying between the two stores' commits."""


@pytest.fixture
def table(tmp_path: Path) -> MixedTable:
    return local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])


def _write(table: MixedTable, rows: dict[str, list[object]], actions: list[str]) -> None:
    schema = table.arrow_schema()
    data = {name: pa.array(values, schema.field(name).type) for name, values in rows.items()}
    with table.new_transaction() as txn:
        txn.write(pa.table({**data, "_change_action": pa.array(actions, pa.string())}))


def _rows(table: MixedTable, row_filter: str | None = None) -> list[dict[str, object]]:
    return sorted(table.scan(row_filter=row_filter).to_arrow().to_pylist(), key=lambda r: int(str(r["id"])))


def _in_every_state(table: MixedTable, check: Callable[[], None]) -> None:
    """``check`` on the unmerged table, after a minor and after a full optimizing."""
    check()
    table.optimizing.run("minor")
    check()
    table.optimizing.run("full")
    check()


def test_renamed_column_reads_unmerged_rows_under_the_new_name(table: MixedTable) -> None:
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0), ("+I", 2, "b", 2, 2.0), ("+I", 3, "c", 3, 3.0)]))
    with table.update_schema() as update:
        update.rename_column("cat", "category")
    _write(table, {"id": [2, 2], "category": ["b", "B"], "qty": [2, 20], "price": [2.0, 2.5]}, ["-U", "+U"])
    assert table.schema().column_names == ["id", "category", "qty", "price"]
    assert table.change_store is not None
    assert table.change_store.schema() == table.schema()

    def check() -> None:
        assert _rows(table) == [
            {"id": 1, "category": "a", "qty": 1, "price": 1.0},
            {"id": 2, "category": "B", "qty": 20, "price": 2.5},
            {"id": 3, "category": "c", "qty": 3, "price": 3.0},
        ]
        assert [r["id"] for r in _rows(table, "category = 'a' or category = 'B'")] == [1, 2]
        assert _rows(table, "category = 'b'") == []

    _in_every_state(table, check)
    # The BaseStore is a plain Iceberg table: pyiceberg reads the values under the new name too.
    base = table.base_store.scan().to_arrow().sort_by("id")
    assert base.column("category").to_pylist() == ["a", "B", "c"]


def test_added_column_reads_null_for_old_rows_and_values_for_new_ones(table: MixedTable) -> None:
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0), ("+I", 2, "b", 2, 2.0)]))
    with table.update_schema() as update:
        update.add_column("score", LongType(), doc="a new column")
        update.move_after("score", "id")
    assert table.schema().column_names == ["id", "score", "cat", "qty", "price"]
    _write(table, {"id": [3], "score": [30], "cat": ["c"], "qty": [3], "price": [3.0]}, ["+I"])

    def check() -> None:
        assert [(r["id"], r["score"]) for r in _rows(table)] == [(1, None), (2, None), (3, 30)]
        assert [r["id"] for r in _rows(table, "score = 30")] == [3]
        assert [r["id"] for r in _rows(table, "score is null")] == [1, 2]

    _in_every_state(table, check)


def test_dropped_then_readded_name_never_brings_old_values_back(table: MixedTable) -> None:
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.5), ("+I", 2, "b", 2, 2.5)]))
    with table.update_schema() as update:
        update.delete_column("price")
    assert table.schema().column_names == ["id", "cat", "qty"]
    assert _rows(table) == [{"id": 1, "cat": "a", "qty": 1}, {"id": 2, "cat": "b", "qty": 2}]
    with table.update_schema() as update:
        update.add_column("price", StringType())
    _write(table, {"id": [3], "cat": ["c"], "qty": [3], "price": ["cheap"]}, ["+I"])

    def check() -> None:
        assert [(r["id"], r["price"]) for r in _rows(table)] == [(1, None), (2, None), (3, "cheap")]
        assert [r["id"] for r in _rows(table, "price = 'cheap'")] == [3]

    _in_every_state(table, check)
    history = table.changes().to_arrow()
    assert history.schema.field("price").type in (pa.string(), pa.large_string())
    assert history.column("price").to_pylist() == [None, None, "cheap"]


def test_widened_int_column_reads_as_long(table: MixedTable) -> None:
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 7, 1.0)]))
    with table.update_schema() as update:
        update.update_column("qty", LongType())
    big = 2**40
    _write(table, {"id": [2], "cat": ["b"], "qty": [big], "price": [2.0]}, ["+I"])

    def check() -> None:
        merged = table.scan().to_arrow()
        assert merged.schema.field("qty").type == pa.int64()
        assert sorted(merged.column("qty").to_pylist()) == [7, big]
        assert [r["id"] for r in _rows(table, f"qty = {big}")] == [2]

    _in_every_state(table, check)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda u: u.delete_column("id"), "cannot drop primary-key column 'id'"),
        (lambda u: u.rename_column("id", "key"), "cannot rename primary-key column 'id'"),
        (lambda u: u.update_column("id", field_type=DoubleType()), "cannot change the type of primary-key column 'id'"),
        (lambda u: u.update_column("id", required=False), "cannot make optional primary-key column 'id'"),
        (lambda u: u.make_column_optional("id"), "cannot make optional primary-key column 'id'"),
        (lambda u: u.add_column("_change_action", StringType()), "reserved"),
        (lambda u: u.rename_column("cat", "_file_offset"), "reserved"),
        (lambda u: u.add_column("__lsn", LongType()), "reserved"),
        (lambda u: u.update_column("qty", field_type=StringType()), "refused"),  # pyiceberg: not a promotion
    ],
    ids=[
        "drop-key",
        "rename-key",
        "retype-key",
        "optional-key",
        "optional-key-verb",
        "reserved",
        "reserved-rename",
        "prefix",
        "narrow",
    ],
)
def test_unsafe_changes_are_refused_and_change_nothing(
    table: MixedTable, change: Callable[[MixedSchemaUpdate], object], message: str
) -> None:
    before = table.schema()
    with pytest.raises(SchemaEvolutionError, match=message), table.update_schema() as update:
        change(update)
    table.refresh()
    assert table.schema() == before
    assert table.change_store is not None
    assert table.change_store.schema() == before


def test_a_change_that_breaks_the_optimizing_filter_is_refused(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    table = catalog.create_table("db.f", ORDERS_SCHEMA, primary_key=["id"], properties={"self-optimizing.filter": "qty > 0"})
    with pytest.raises(SchemaEvolutionError, match=r"self-optimizing\.filter"), table.update_schema() as update:
        update.rename_column("qty", "quantity")


def test_a_crash_between_the_two_stores_is_repaired_on_the_next_load(
    table: MixedTable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))

    def crash(*_: object) -> None:
        raise SimulatedCrashError("killed after the BaseStore's commit")

    monkeypatch.setattr("mixed_iceberg.schema_evolution._set_schema", crash)
    update = table.update_schema()
    update.rename_column("cat", "category")
    update.add_column("score", LongType())
    with pytest.raises(SimulatedCrashError):
        update.commit()
    monkeypatch.undo()
    catalog = local_catalog(tmp_path)
    # What the crash left: the BaseStore evolved, the ChangeStore not.
    raw_change = catalog.iceberg.load_table("db.orders_change_")
    assert raw_change.schema().column_names == ["id", "cat", "qty", "price"]
    loaded = catalog.load_table("db.orders")
    assert loaded.change_store is not None
    assert loaded.change_store.schema() == loaded.base_store.schema()
    assert loaded.schema().column_names == ["id", "category", "qty", "price", "score"]
    assert catalog.iceberg.load_table("db.orders_change_").schema() == loaded.schema()
    _write(loaded, {"id": [2], "category": ["b"], "qty": [2], "price": [2.0], "score": [20]}, ["+I"])
    assert [(r["id"], r["category"], r["score"]) for r in _rows(loaded)] == [(1, "a", None), (2, "b", 20)]


def test_a_writer_holding_the_old_schema_writes_rows_readers_resolve_by_id(table: MixedTable, tmp_path: Path) -> None:
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    other = local_catalog(tmp_path).load_table("db.orders")
    with other.update_schema() as update:
        update.delete_column("price")
    with other.update_schema() as update:
        update.add_column("price", DoubleType())  # the same name and type, another column
    # ``table`` still has the schema it loaded: its rows carry the old price's field id.
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 2, "b", 2, 9.5)]))
    assert [(r["id"], r["price"]) for r in _rows(other)] == [(1, None), (2, None)]
    table.refresh()
    _write(table, {"id": [3], "cat": ["c"], "qty": [3], "price": [3.5]}, ["+I"])
    assert [(r["id"], r["price"]) for r in _rows(other)] == [(1, None), (2, None), (3, 3.5)]


def test_unkeyed_and_plain_iceberg_tables_evolve_their_one_store(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    for name, fmt in (("db.unkeyed", TableFormat.MIXED_ICEBERG), ("db.plain", TableFormat.ICEBERG)):
        table = catalog.create_table(name, ORDERS_SCHEMA, table_format=fmt)
        table.base_store.append(
            pa.table({"id": [1], "cat": ["a"], "qty": pa.array([1], pa.int32()), "price": [1.0]}, schema=table.arrow_schema())
        )
        with table.update_schema() as update:
            update.rename_column("cat", "category")
        assert table.scan().to_arrow().to_pylist() == [{"id": 1, "category": "a", "qty": 1, "price": 1.0}]
        assert catalog.load_table(name).schema().column_names == ["id", "category", "qty", "price"]


def test_the_ingest_job_parses_with_a_schema_committed_while_it_runs(table: MixedTable, tmp_path: Path) -> None:
    parser = CdcParser(table.arrow_schema(), table.primary_key, CdcFormat.DEBEZIUM_JSON)
    ingestor = PartitionIngestor(table, parser, job="j", topic="src", partition=0)
    ingestor.open()
    before = [json.dumps({"before": None, "after": {"id": i, "qty": i, "cat": f"c{i}"}, "op": "c"}).encode() for i in range(3)]
    ingestor.process(np.arange(0, 3), pa.array(before, pa.binary()))
    # Another process evolves the table while the job runs.
    other = local_catalog(tmp_path).load_table("db.orders")
    with other.update_schema() as update:
        update.rename_column("cat", "category")
        update.add_column("note", StringType())
    after = [
        json.dumps({"before": None, "after": {"id": i, "qty": i, "category": f"c{i}", "note": f"n{i}"}, "op": "c"}).encode()
        for i in range(3, 6)
    ]
    ingestor.process(np.arange(3, 6), pa.array(after, pa.binary()))
    rows = _rows(other)
    assert [(r["id"], r["category"], r["note"]) for r in rows] == [
        (0, "c0", None),
        (1, "c1", None),
        (2, "c2", None),
        (3, "c3", "n3"),
        (4, "c4", "n4"),
        (5, "c5", "n5"),
    ]
    # A restarted job builds its parser from the loaded table: the new schema.
    restarted = local_catalog(tmp_path).load_table("db.orders")
    assert "note" in restarted.arrow_schema().names


@pytest.mark.parametrize("filtered", [False, True], ids=["whole", "filtered"])
def test_base_files_written_before_a_change_read_by_field_id(table: MixedTable, filtered: bool) -> None:
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0), ("+I", 2, "b", 2, 2.0)]))
    table.optimizing.run("full")  # the rows now sit in base files of the first schema
    with table.update_schema() as update:
        update.rename_column("cat", "category")
        update.delete_column("price")
    with table.update_schema() as update:
        update.add_column("price", DoubleType())
        update.rename_column("qty", "cat")  # the old name of another column
    row_filter = "cat = 2 or category = 'a'" if filtered else None
    expected = [{"id": 1, "category": "a", "cat": 1, "price": None}, {"id": 2, "category": "b", "cat": 2, "price": None}]
    assert _rows(table, row_filter) == expected
    _write(table, {"id": [2], "category": ["B"], "cat": [20], "price": [2.5]}, ["+U"])  # a tail over the base
    expected[1] = {"id": 2, "category": "B", "cat": 20, "price": 2.5}
    assert _rows(table, "category = 'a' or cat = 20" if filtered else None) == expected


def test_a_change_that_lost_a_race_is_replayed_on_the_new_schema(table: MixedTable, tmp_path: Path) -> None:
    update = table.update_schema()
    update.rename_column("cat", "category")
    other = local_catalog(tmp_path).load_table("db.orders")
    with other.update_schema() as first:
        first.add_column("score", LongType())
    update.commit()  # its BaseStore commit fails on the schema id, then runs again on the new schema
    loaded = local_catalog(tmp_path).load_table("db.orders")
    assert loaded.schema().column_names == ["id", "category", "qty", "price", "score"]
    assert loaded.change_store is not None
    assert loaded.change_store.schema() == loaded.schema()


def test_a_change_the_new_schema_no_longer_takes_is_a_conflict(table: MixedTable, tmp_path: Path) -> None:
    update = table.update_schema()
    update.rename_column("cat", "category")
    other = local_catalog(tmp_path).load_table("db.orders")
    with other.update_schema() as first:
        first.delete_column("cat")
    with pytest.raises(CommitConflictError, match="no longer applies"):
        update.commit()
    assert local_catalog(tmp_path).load_table("db.orders").schema().column_names == ["id", "qty", "price"]


@pytest.mark.parametrize("fmt", [TableFormat.MIXED_ICEBERG, TableFormat.ICEBERG], ids=["unkeyed", "plain"])
def test_time_travel_before_a_change_reads_with_the_current_schema(tmp_path: Path, fmt: TableFormat) -> None:
    table = local_catalog(tmp_path).create_table("db.t", ORDERS_SCHEMA, table_format=fmt)
    row = {"id": [1], "cat": ["a"], "qty": pa.array([1], pa.int32()), "price": [1.0]}
    table.base_store.append(pa.table(row, schema=table.arrow_schema()))
    old = table.base_store.current_snapshot()
    assert old is not None
    with table.update_schema() as update:
        update.rename_column("cat", "category")
        update.add_column("score", LongType())
    expected = [{"id": 1, "category": "a", "qty": 1, "price": 1.0, "score": None}]
    assert table.scan(snapshot_id=old.snapshot_id).to_arrow().to_pylist() == expected
    assert table.scan(row_filter="category = 'a'", snapshot_id=old.snapshot_id).to_arrow().to_pylist() == expected
    assert table.scan().to_arrow().to_pylist() == expected


def test_keyed_time_travel_and_changes_before_a_rename_use_the_new_name(table: MixedTable) -> None:
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    assert table.change_store is not None
    first = table.change_store.current_snapshot()
    assert first is not None
    with table.update_schema() as update:
        update.rename_column("cat", "category")
    _write(table, {"id": [1, 1], "category": ["a", "b"], "qty": [1, 2], "price": [1.0, 2.0]}, ["-U", "+U"])
    assert table.scan(snapshot_id=first.snapshot_id).to_arrow().to_pylist() == [
        {"id": 1, "category": "a", "qty": 1, "price": 1.0}
    ]
    cdc = table.changes(from_snapshot=first.snapshot_id).to_arrow()
    assert [(r["_change_action"], r["category"]) for r in cdc.to_pylist()] == [("-U", "a"), ("+U", "b")]


def test_a_transaction_writes_with_the_schema_it_validated_against(tmp_path: Path) -> None:
    """A schema change committed between write() and commit() cannot relabel the columns: the
    files carry the ids of the schema the rows were checked against (a drop plus an add of one
    type would otherwise read the dropped column's values under the new name)."""
    from tests.support.tables import rows_of

    table = local_catalog(tmp_path / "tx").create_table("db.tx", ORDERS_SCHEMA, primary_key=["id"])
    txn = table.new_transaction()
    txn.write(changes([("+I", 1, "a", 7, 1.0)]))
    other = local_catalog(tmp_path / "tx").load_table("db.tx")
    with other.update_schema() as update:
        update.delete_column("qty")
        update.add_column("stock", IntegerType())
    table.refresh()  # e.g. a reader of the same table object in between
    txn.commit()
    assert rows_of(table.refresh().scan().to_arrow()) == [(1, "a", 1.0, None)]
