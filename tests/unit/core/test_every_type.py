"""Every Iceberg v2 type reads back as it was written, on every read path and after every
optimizing type, and as pyiceberg reads the stores (DESIGN.md invariant 10); types Iceberg
lacks map exactly or are refused at create, and no batch value is converted silently."""

from __future__ import annotations

import datetime
import itertools
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixed_iceberg import MixedTable
from mixed_iceberg.exceptions import (
    ConfigError,
    InvalidSchemaError,
    SchemaMismatchError,
    UnsupportedColumnTypeError,
)
from mixed_iceberg.reader.tasks import execute_task
from tests.support.iceberg_types import NESTED, PRIMITIVES, WIDENED, canonical, values
from tests.support.tables import local_catalog

_names = itertools.count()

COLUMNS = {**PRIMITIVES, **NESTED}
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), *(pa.field(n, k) for n, k in COLUMNS.items())])
ACTION = "_change_action"

Rows = dict[int, tuple[Any, ...]]


def _payload(draw: st.DrawFn) -> dict[str, Any]:
    return {name: draw(values(kind)) for name, kind in COLUMNS.items()}


def _batch(rows: list[dict[str, Any]], actions: list[str] | None = None) -> pa.Table:
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    return table if actions is None else table.append_column(ACTION, pa.array(actions, pa.string()))


def _by_key(table: pa.Table) -> Rows:
    rows = table.to_pylist()
    by_key = {row["id"]: canonical([row[name] for name in table.column_names]) for row in rows}
    assert len(by_key) == len(rows), "one row per key"
    return by_key


def _expected(rows: list[dict[str, Any]]) -> Rows:
    """What a read of ``rows`` (as written, or as a read gave them) must return, by key."""
    return {row["id"]: canonical([row[name] for name in SCHEMA.names]) for row in rows}


def _differences(got: Rows, expected: Rows) -> list[tuple[object, ...]]:
    """(key, column, got, expected) of every value that differs; a missing or extra key whole."""
    found: list[tuple[object, ...]] = [(k, "<row>", got.get(k), expected.get(k)) for k in got.keys() ^ expected.keys()]
    for key in got.keys() & expected.keys():
        found += [(key, SCHEMA.names[i], a, b) for i, (a, b) in enumerate(zip(got[key], expected[key], strict=True)) if a != b]
    return found


def _check_every_read(table: MixedTable, expected: Rows) -> None:
    merged = table.scan().to_arrow()
    assert merged.schema == table.arrow_schema()
    assert _differences(_by_key(merged), expected) == []
    assert _differences(_by_key(table.scan().to_arrow_batch_reader().read_all()), expected) == []
    tasks = [execute_task(task) for task in table.scan().plan_tasks()]
    assert _differences(_by_key(pa.concat_tables(tasks) if tasks else merged.slice(0, 0)), expected) == []
    assert _by_key(table.scan(selected_fields=("id", "struct", "list_map_struct")).to_arrow()) == {
        k: (v[0], v[SCHEMA.names.index("struct")], v[SCHEMA.names.index("list_map_struct")]) for k, v in expected.items()
    }


@st.composite
def _history(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """An initial load of keys 0..n-1 (one row all nulls) and one transaction of updates,
    deletes and inserts over them."""
    n = draw(st.integers(2, 5))
    initial = [{"id": key, **_payload(draw)} for key in range(n)]
    initial[0] = {"id": 0, **dict.fromkeys(COLUMNS)}
    rows: list[dict[str, Any]] = []
    actions: list[str] = []
    for key in range(n + 2):
        what = draw(st.sampled_from(["update", "delete", "keep"])) if key < n else "insert"
        if what == "update":
            rows += [initial[key], {"id": key, **_payload(draw)}]
            actions += ["-U", "+U"]
        elif what == "delete":
            rows.append(initial[key])
            actions.append("-D")
        elif what == "insert":
            rows.append({"id": key, **_payload(draw)})
            actions.append("+I")
    return initial, rows, actions


def _replay(initial: list[dict[str, Any]], rows: list[dict[str, Any]], actions: list[str]) -> list[dict[str, Any]]:
    state = {row["id"]: row for row in initial}
    for row, action in zip(rows, actions, strict=True):
        if action in ("+I", "+U"):
            state[row["id"]] = row
        elif action == "-D":
            state.pop(row["id"], None)
    return list(state.values())


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(history=_history())
def test_every_type_reads_back_as_written_on_every_path_and_after_every_optimizing(
    tmp_path: Path, history: tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]
) -> None:
    initial, rows, actions = history
    table = local_catalog(tmp_path / "cat").create_table(f"db.every{next(_names)}", SCHEMA, primary_key=["id"])
    assert table.arrow_schema().remove_metadata() == SCHEMA
    table.bulk_load(_batch(initial))
    _check_every_read(table, _expected(initial))
    assert _differences(_by_key(table.base_store.scan().to_arrow()), _expected(initial)) == []  # pyiceberg: the BaseStore

    with table.new_transaction(("types", 1)) as txn:
        txn.write(_batch(rows, actions))
    final = _expected(_replay(initial, rows, actions))
    _check_every_read(table, final)
    cdc = table.changes().to_arrow()
    replayed = _replay(
        initial, cdc.drop_columns([ACTION, "_transaction_id", "_file_offset"]).to_pylist(), cdc.column(ACTION).to_pylist()
    )
    assert _differences(_expected(replayed), final) == []
    assert table.change_store is not None
    stored = Counter(canonical([r[n] for n in SCHEMA.names]) for r in table.change_store.scan().to_arrow().to_pylist())
    assert stored == Counter(canonical([r[n] for n in SCHEMA.names]) for r in rows)  # pyiceberg reads the ChangeStore

    for kind in ("minor", "major", "full"):
        table.optimizing.run(kind)
        _check_every_read(table, final)
    assert _differences(_by_key(table.base_store.scan().to_arrow()), final) == []  # after full, by pyiceberg


@pytest.mark.parametrize("name", sorted(WIDENED))
def test_arrow_types_iceberg_lacks_map_to_one_that_keeps_every_value(tmp_path: Path, name: str) -> None:
    written, read = WIDENED[name]
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("c", written)])
    table = local_catalog(tmp_path / "cat").create_table("db.widened", schema, primary_key=["id"])
    assert table.arrow_schema().field("c").type == read
    column = {
        "int8": pa.array([-128, 127], pa.int8()),
        "int16": pa.array([-(2**15), 2**15 - 1], pa.int16()),
        "uint8": pa.array([0, 255], pa.uint8()),
        "uint16": pa.array([0, 2**16 - 1], pa.uint16()),
        "uint32": pa.array([0, 2**32 - 1], pa.uint32()),  # an int would overflow at 2^31: the column is a long
        "timestamp_ms": pa.array([0, 1_700_000_000_123], pa.int64()).cast(pa.timestamp("ms")),
        "time_ms": pa.array([0, 86_399_999], pa.int32()).cast(pa.time32("ms")),
        "utf8": pa.array(["a", "é"], pa.string()),
        "dictionary": pa.array(["x", "y"]).dictionary_encode(),
        "list": pa.array([[1, None], []], pa.list_(pa.int32())),
        "decimal256": pa.array(["123456789012345678.12", "-1.00"]).cast(pa.decimal256(20, 2)),
    }[name]
    assert column.type == written
    table.bulk_load(pa.table({"id": pa.array([1, 2], pa.int64()), "c": column}))
    with table.new_transaction() as txn:
        txn.write(pa.table({"id": pa.array([3], pa.int64()), "c": column.slice(1), ACTION: ["+I"]}))
    read_back = table.scan().to_arrow().sort_by("id").column("c")
    assert read_back.type == read
    assert read_back.to_pylist() == column.cast(read).to_pylist() + column.slice(1).cast(read).to_pylist()


@pytest.mark.parametrize(
    ("kind", "advice"),
    [
        (pa.uint64(), "int64 (values below 2^63) or decimal128(20, 0)"),
        (pa.timestamp("ns"), "timestamp('us')"),
        (pa.timestamp("ns", tz="UTC"), "timestamp('us', tz='UTC')"),
        (pa.timestamp("us", tz="Europe/Paris"), "tz='UTC'"),
        (pa.time64("ns"), "time64('us')"),
        (pa.date64(), "date32"),
        (pa.decimal256(50, 2), "precision 38 or less"),
        (pa.null(), "a concrete type"),
        (pa.duration("us"), "Iceberg v2 has no type for duration"),
        (pa.list_(pa.uint64()), "int64"),
        (pa.struct([("inner", pa.timestamp("ns"))]), "timestamp('us')"),
    ],
)
def test_types_iceberg_cannot_hold_exactly_are_refused_at_create_naming_the_type_to_use(
    tmp_path: Path, kind: pa.DataType, advice: str
) -> None:
    catalog = local_catalog(tmp_path / "cat")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("odd", kind)])
    with pytest.raises(UnsupportedColumnTypeError, match="column 'odd'") as info:
        catalog.create_table("db.refused", schema, primary_key=["id"])
    assert advice in str(info.value)
    assert not catalog.table_exists("db.refused")


@pytest.mark.parametrize(
    ("schema", "primary_key", "partition_by", "error", "message"),
    [
        (
            pa.schema([pa.field("id", pa.int64(), nullable=False), ("c", pa.int32()), ("c", pa.string())]),
            ["id"],
            None,
            InvalidSchemaError,
            "distinct field names",
        ),
        (
            pa.schema([pa.field("id", pa.int64(), nullable=False), ("Name", pa.int32()), ("name", pa.string())]),
            ["id"],
            None,
            InvalidSchemaError,
            "found 'Name' and 'name'",
        ),
        (
            pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.struct([("a", pa.int32()), ("a", pa.int64())]))]),
            ["id"],
            None,
            InvalidSchemaError,
            "column 's'",
        ),
        (
            pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.struct([("a", pa.int32())]))]),
            ["s.a"],
            None,
            InvalidSchemaError,
            "nested fields are payload only",
        ),
        (
            pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.struct([("a", pa.int32())]))]),
            ["id"],
            ["s.a"],
            ConfigError,
            "nested fields are payload only",
        ),
        (
            pa.schema([pa.field("id", pa.int64(), nullable=False), ("l", pa.list_(pa.int32()))]),
            ["l"],
            None,
            InvalidSchemaError,
            "expected one of the key types",
        ),
    ],
    ids=[
        "duplicate-columns",
        "names-equal-but-for-case",
        "duplicate-struct-fields",
        "nested-key",
        "nested-partition",
        "list-key",
    ],
)
def test_schemas_iceberg_engines_cannot_resolve_are_refused_at_create(
    tmp_path: Path,
    schema: pa.Schema,
    primary_key: list[str],
    partition_by: list[str] | None,
    error: type[Exception],
    message: str,
) -> None:
    catalog = local_catalog(tmp_path / "cat")
    with pytest.raises(error) as info:
        catalog.create_table("db.refused", schema, primary_key=primary_key, partition_by=partition_by)
    assert message in str(info.value)
    assert not catalog.table_exists("db.refused")


_TYPED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("qty", pa.int32()),
        pa.field("at", pa.timestamp("us")),
        pa.field("tags", pa.list_(pa.int32())),
        pa.field("point", pa.struct([pa.field("x", pa.int32(), nullable=False), pa.field("y", pa.int64())])),
    ]
)


def _typed_row(**changed: pa.Array) -> pa.Table:
    columns = {
        "id": pa.array([9], pa.int64()),
        "name": pa.array(["n"], pa.string()),
        "qty": pa.array([1], pa.int32()),
        "at": pa.array([0], pa.timestamp("us")),
        "tags": pa.array([[1]], pa.list_(pa.int32())),
        "point": pa.array([{"x": 1, "y": 2}], _TYPED.field("point").type),
    }
    columns.update(changed)
    return pa.table(columns)


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        ({"id": pa.array(["9"])}, "column 'id' expected type long, found string"),
        ({"name": pa.array([1], pa.int64())}, "column 'name' expected type string, found long"),
        ({"qty": pa.array([1], pa.uint32())}, "column 'qty' expected type int, found long"),
        ({"qty": pa.array([1], pa.int64())}, "column 'qty' expected type int, found long"),
        ({"qty": pa.array([1.0], pa.float64())}, "column 'qty' expected type int, found double"),
        ({"at": pa.array([0], pa.timestamp("ns"))}, "column 'at' expected type timestamp, found Iceberg v2 has no type"),
        ({"at": pa.array([0], pa.timestamp("us", tz="UTC"))}, "column 'at' expected type timestamp, found timestamptz"),
        ({"tags": pa.array([["1"]])}, "column 'tags' expected type list<int>, found list<string>"),
        (
            {"point": pa.array([{"x": 1}], pa.struct([("x", pa.int32())]))},
            "column 'point' expected type struct<x: int, y: long>, found struct<x: int>",
        ),
        ({"point": pa.array([{"x": None, "y": 2}], pa.struct([("x", pa.int32()), ("y", pa.int64())]))}, "'point.x' is required"),
    ],
    ids=[
        "string-key",
        "long-into-string",
        "uint32-into-int",
        "long-into-int",
        "double-into-int",
        "nanoseconds",
        "zoned-into-local",
        "list-element",
        "struct-field-missing",
        "null-in-required-struct-field",
    ],
)
@pytest.mark.parametrize("how", ["transaction", "bulk_load", "bulk_load-stream"])
def test_batch_values_are_never_converted_silently_and_the_table_is_unchanged(
    tmp_path: Path, changed: dict[str, pa.Array], message: str, how: str
) -> None:
    table = local_catalog(tmp_path / "cat").create_table("db.typed", _TYPED, primary_key=["id"])
    table.bulk_load(_typed_row(id=pa.array([1], pa.int64())))
    before = table.refresh().scan().to_arrow()
    snapshots = (table.base_store.current_snapshot(), table.change_store.current_snapshot() if table.change_store else None)
    batch = _typed_row(**changed)

    def write() -> None:
        if how == "transaction":
            with table.new_transaction() as txn:
                txn.write(batch.append_column(ACTION, pa.array(["+I"])))
        elif how == "bulk_load":
            table.bulk_load(batch, overwrite=True)
        else:
            table.bulk_load(batch.to_reader(), overwrite=True)

    with pytest.raises(SchemaMismatchError) as info:
        write()
    assert message in str(info.value)
    assert "large_string" not in str(info.value)  # Iceberg's type names, not Arrow's
    table.refresh()
    assert (table.base_store.current_snapshot(), table.change_store.current_snapshot() if table.change_store else None) == (
        snapshots
    )
    assert table.scan().to_arrow().equals(before)


def test_widenings_iceberg_allows_are_taken_and_struct_fields_match_by_name(tmp_path: Path) -> None:
    table = local_catalog(tmp_path / "cat").create_table("db.typed", _TYPED, primary_key=["id"])
    batch = _typed_row(
        id=pa.array([5], pa.int32()),  # int -> long
        qty=pa.array([7], pa.int16()),  # int16 is an int
        at=pa.array([1_000], pa.timestamp("ms")),
        point=pa.array([{"y": 4, "x": 3}], pa.struct([("y", pa.int64()), ("x", pa.int32())])),  # another field order
    )
    with table.new_transaction() as txn:
        txn.write(batch.append_column(ACTION, pa.array(["+I"])))
    row = table.scan().to_arrow().to_pylist()[0]
    assert (row["id"], row["qty"], row["point"]) == (5, 7, {"x": 3, "y": 4})
    assert row["at"] == datetime.datetime(1970, 1, 1, 0, 0, 1)


def test_filters_compare_uuids_by_their_bytes(tmp_path: Path) -> None:
    """Arrow has no comparison kernel for its uuid type: a filter comparing one compared the
    extension type and raised; a uuid's order is its 16 bytes', as Iceberg's."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("u", pa.uuid())])
    table = local_catalog(tmp_path / "cat").create_table("db.uuids", schema, primary_key=["id"])
    ids = [uuid.UUID(int=n) for n in (1, 2, 3)]
    rows = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "u": pa.ExtensionArray.from_storage(pa.uuid(), pa.array([u.bytes for u in ids], pa.binary(16))),
        }
    )
    table.bulk_load(rows.slice(0, 2))
    with table.new_transaction() as txn:
        txn.write(rows.slice(2).append_column(ACTION, pa.array(["+I"])))
    cases = {
        f"u = '{ids[1]}'": [2],
        f"u != '{ids[1]}'": [1, 3],
        f"u < '{ids[1]}'": [1],
        f"u >= '{ids[1]}'": [2, 3],
        f"u IN ('{ids[0]}', '{ids[2]}')": [1, 3],
        f"u NOT IN ('{ids[0]}')": [2, 3],
    }
    for row_filter, expected in cases.items():
        assert sorted(table.scan(row_filter=row_filter).to_arrow().column("id").to_pylist()) == expected, row_filter
        assert sorted(r["id"] for r in table.changes(row_filter=row_filter).to_arrow().to_pylist()) == expected, row_filter
    table.optimizing.run("full")
    assert table.scan(row_filter=f"u = '{ids[2]}'").to_arrow().column("id").to_pylist() == [3]
