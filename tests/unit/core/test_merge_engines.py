"""Merge engines and sequence.field: declared once, validated at create, applied by every reader."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pyarrow as pa
import pytest

from mixed_iceberg import MixedCatalog
from mixed_iceberg.exceptions import PropertyError
from mixed_iceberg.table import MixedTable
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

_names = itertools.count()


@pytest.fixture
def catalog(tmp_path: Path) -> MixedCatalog:
    return local_catalog(tmp_path / "c")


def _table(catalog: MixedCatalog, **properties: str) -> MixedTable:
    return catalog.create_table(f"db.m{next(_names)}", ORDERS_SCHEMA, primary_key=["id"], properties=properties)


def _commit(table: MixedTable, *rows: tuple[str, int, str | None, int | None, float | None]) -> None:
    with table.new_transaction() as txn:
        txn.write(changes(list(rows)))


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"merge-engine": "lww"}, "merge-engine"),
        ({"sequence.field": "nope"}, "sequence.field"),
        ({"sequence.field": "id"}, "non-key"),
        ({"merge-engine": "aggregation", "fields.qty.aggregate-function": "median"}, "aggregate-function"),
        ({"merge-engine": "aggregation", "fields.qty.aggregate-function": "max"}, "cannot take back"),
        ({"merge-engine": "aggregation", "fields.cat.aggregate-function": "sum", "fields.cat.ignore-retract": "true"}, "numeric"),
        ({"merge-engine": "partial-update", "write.upsert.enabled": "true"}, "upsert"),
        ({"fields.qty.aggregate-function": "sum"}, "needs merge-engine=aggregation"),
        ({"merge-engine": "aggregation", "fields.nope.aggregate-function": "sum"}, "non-key column"),
        ({"fields.qty.typo": "x"}, "unknown property"),
        ({"merge-engine": "first-row", "sequence.field": "qty"}, "needs merge-engine=deduplicate"),
    ],
)
def test_bad_merge_options_are_refused_at_create(catalog: MixedCatalog, properties: dict[str, str], message: str) -> None:
    with pytest.raises(PropertyError, match=message):
        _table(catalog, **properties)


def test_merge_options_are_fixed_once_the_table_exists(catalog: MixedCatalog) -> None:
    table = _table(catalog, **{"merge-engine": "partial-update"})
    with pytest.raises(PropertyError, match="fixed"):
        table.update_properties({"merge-engine": "deduplicate"})


def test_unkeyed_tables_refuse_merge_options(catalog: MixedCatalog) -> None:
    with pytest.raises(PropertyError, match="primary key"):
        catalog.create_table("db.log", ORDERS_SCHEMA, properties={"merge-engine": "first-row"})


def test_partial_update_fills_fields_and_a_delete_removes_the_row(catalog: MixedCatalog) -> None:
    table = _table(catalog, **{"merge-engine": "partial-update"})
    _commit(table, ("+I", 1, "a", None, None))
    _commit(table, ("+I", 1, None, 7, None), ("+I", 2, "x", 1, 1.0))
    _commit(table, ("+U", 1, None, None, 2.5), ("-D", 2, None, None, None))
    assert rows_of(table.scan().to_arrow()) == [(1, "a", 7, 2.5)]
    assert rows_of(table.scan(row_filter="qty = 7", selected_fields=("id", "price")).to_arrow()) == [(1, 2.5)]
    table.optimizing.run("minor")
    _commit(table, ("+I", 1, "b", None, None))
    assert rows_of(table.scan().to_arrow()) == [(1, "b", 7, 2.5)], "the BaseStore row is the state later rows update"


def test_first_row_ignores_later_inserts_until_a_delete(catalog: MixedCatalog) -> None:
    table = _table(catalog, **{"merge-engine": "first-row"})
    table.bulk_load(changes([("+I", 1, "first", 1, 1.0), ("+I", 1, "second", 2, 2.0)]).drop_columns(["_change_action"]))
    _commit(table, ("+I", 1, "later", 3, 3.0))
    assert rows_of(table.scan().to_arrow()) == [(1, "first", 1, 1.0)]
    _commit(table, ("-D", 1, None, None, None), ("+I", 1, "again", 4, 4.0))
    assert rows_of(table.scan().to_arrow()) == [(1, "again", 4, 4.0)]


def test_aggregation_retracts_what_updates_take_back(catalog: MixedCatalog) -> None:
    table = _table(
        catalog,
        **{
            "merge-engine": "aggregation",
            "fields.qty.aggregate-function": "sum",
            "fields.price.aggregate-function": "max",
            "fields.price.ignore-retract": "true",
            "fields.cat.aggregate-function": "listagg",
            "fields.cat.ignore-retract": "true",
        },
    )
    _commit(table, ("+I", 1, "a", 1, 1.0))
    _commit(table, ("+I", 1, "b", 2, 5.0))
    table.optimizing.run("minor")
    _commit(table, ("-U", 1, "b", 2, 5.0), ("+U", 1, "c", 10, 3.0))
    assert rows_of(table.scan().to_arrow()) == [(1, "a,b,c", 11, 5.0)]
    table.optimizing.run("full")
    assert rows_of(table.refresh().base_store.scan().to_arrow()) == [(1, "a,b,c", 11, 5.0)]


def test_sequence_field_keeps_the_newest_by_value_not_by_arrival(catalog: MixedCatalog) -> None:
    table = _table(catalog, **{"sequence.field": "qty"})
    _commit(table, ("+I", 1, "new", 5, 1.0))
    _commit(table, ("+I", 1, "late", 3, 1.0), ("-D", 2, None, 1, None))
    assert rows_of(table.scan().to_arrow()) == [(1, "new", 5, 1.0)]
    table.optimizing.run("minor")
    _commit(table, ("+I", 1, "late again", 4, 1.0))
    assert rows_of(table.scan().to_arrow()) == [(1, "new", 5, 1.0)]
    _commit(table, ("-D", 1, None, 2, None))  # an out-of-date delete: older than the row
    assert rows_of(table.scan().to_arrow()) == [(1, "new", 5, 1.0)]
    _commit(table, ("-D", 1, None, None, None))  # a key-only delete removes whatever is there
    assert rows_of(table.scan().to_arrow()) == []
    cdc = [(r["_change_action"], r["cat"]) for r in table.changes().to_arrow().to_pylist()]
    assert cdc == [("+I", "new"), ("-D", "new")], "rows that change nothing emit nothing"


def test_aggregation_count_listagg_and_last_value_over_nulls(catalog: MixedCatalog) -> None:
    table = _table(
        catalog,
        **{
            "merge-engine": "aggregation",
            "fields.qty.aggregate-function": "count",
            "fields.cat.aggregate-function": "listagg",
            "fields.cat.ignore-retract": "true",
            "fields.price.aggregate-function": "last_value",
        },
    )
    _commit(table, ("+I", 1, None, None, 1.0), ("+I", 2, None, 5, None))
    _commit(table, ("+I", 1, "x", 3, None), ("+I", 1, None, None, 2.0), ("+I", 1, "y", 4, None))
    assert rows_of(table.scan().to_arrow()) == [(1, "x,y", 2, None), (2, None, 1, None)]
    _commit(table, ("-D", 1, None, 4, 9.0))  # retracts the values it carries: one qty, the last price
    assert rows_of(table.scan().to_arrow()) == [(1, "x,y", 1, None), (2, None, 1, None)]
    table.optimizing.run("full")
    assert rows_of(table.scan().to_arrow()) == [(1, "x,y", 1, None), (2, None, 1, None)]


_TYPED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("tags", pa.large_list(pa.field("element", pa.large_string()))),
        pa.field("point", pa.struct([pa.field("x", pa.float64())])),
        pa.field("attrs", pa.map_(pa.large_string(), pa.int64())),
        pa.field("ref", pa.uuid()),
        pa.field("ratio", pa.float64()),
        pa.field("amount", pa.decimal128(9, 2)),
        pa.field("name", pa.large_string()),
        pa.field("flag", pa.bool_()),
    ]
)


@pytest.mark.parametrize(
    ("column", "function", "takes", "found"),
    [
        ("tags", "max", "ordered primitive", "list<string>"),
        ("point", "min", "ordered primitive", "struct<x: double>"),
        ("ref", "max", "ordered primitive", "uuid"),
        ("attrs", "sum", "numeric", "map<string, long>"),
        ("name", "sum", "numeric", "string"),
        ("ratio", "count", "integer", "double"),
        ("amount", "count", "integer", "decimal(9, 2)"),
        ("tags", "listagg", "string", "list<string>"),
        ("flag", "listagg", "string", "boolean"),
        ("ratio", "bool_or", "boolean", "double"),
    ],
)
def test_an_aggregate_function_refuses_a_type_it_cannot_take_naming_column_function_and_types(
    catalog: MixedCatalog, column: str, function: str, takes: str, found: str
) -> None:
    properties = {
        "merge-engine": "aggregation",
        f"fields.{column}.aggregate-function": function,
        f"fields.{column}.ignore-retract": "true",
    }
    with pytest.raises(
        PropertyError, match=rf"aggregate {function} of column '{column}' takes {takes}.*found {re.escape(found)}$"
    ):
        catalog.create_table(f"db.m{next(_names)}", _TYPED, primary_key=["id"], properties=properties)


def test_functions_that_take_every_type_are_accepted_on_nested_and_uuid_columns(catalog: MixedCatalog) -> None:
    properties = {
        "merge-engine": "aggregation",
        "fields.tags.aggregate-function": "last_value",
        "fields.point.aggregate-function": "first_value",
        "fields.point.ignore-retract": "true",
        "fields.attrs.aggregate-function": "last_non_null_value",
        "fields.ref.aggregate-function": "last_value",
        "fields.ratio.aggregate-function": "sum",
        "fields.amount.aggregate-function": "sum",
        "fields.name.aggregate-function": "min",
        "fields.name.ignore-retract": "true",
        "fields.flag.aggregate-function": "max",
        "fields.flag.ignore-retract": "true",
    }
    table = catalog.create_table("db.every_function", _TYPED, primary_key=["id"], properties=properties)
    assert table.merge_config.function("point") == "first_value"


@pytest.mark.parametrize(("column", "found"), [("tags", "list<string>"), ("point", "struct<x: double>"), ("ref", "uuid")])
def test_sequence_field_refuses_nested_and_uuid_columns(catalog: MixedCatalog, column: str, found: str) -> None:
    with pytest.raises(PropertyError, match=rf"sequence.field.*ordered primitive.*'{column}' of type {re.escape(found)}"):
        catalog.create_table(f"db.m{next(_names)}", _TYPED, primary_key=["id"], properties={"sequence.field": column})


def test_optimizing_a_merge_engine_table_after_a_rename_reads_its_base_rows_by_field_id(catalog: MixedCatalog) -> None:
    """The engine path of optimizing read the BaseStore's rows by name: after a rename it found
    no column ``aa`` in files that call it ``a`` (ArrowInvalid)."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("a", pa.int64()), pa.field("b", pa.large_string())])
    table = catalog.create_table("db.renamed", schema, primary_key=["k"], properties={"merge-engine": "partial-update"})
    table.bulk_load(pa.table({"k": [1], "a": [1], "b": ["x"]}, schema=schema))
    with table.update_schema() as update:
        update.rename_column("a", "aa")
    with table.new_transaction() as txn:
        txn.write(pa.table({"k": [1], "aa": pa.array([None], pa.int64()), "b": ["y"], "_change_action": ["+U"]}))
    table.optimizing.run("minor")
    assert table.scan().to_arrow().to_pylist() == [{"k": 1, "aa": 1, "b": "y"}]
