"""Regressions the types oracle (tests/property/test_types_oracle.py) found, pinned one by one:
a uuid nested in a list, an empty read of such a table, null checks on a uuid column, and an
optimizing run of a merge-engine table whose BaseStore holds nested columns."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from mixed_iceberg import MixedCatalog
from tests.support.iceberg_types import arrow_table
from tests.support.tables import local_catalog

_IDS = pa.large_list(pa.field("element", pa.large_list(pa.field("element", pa.uuid()))))
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("ids", _IDS), pa.field("ref", pa.uuid())])
A, B = uuid.UUID(int=1), uuid.UUID(int=2)


@pytest.fixture
def catalog(tmp_path: Path) -> MixedCatalog:
    return local_catalog(tmp_path / "c")


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda row: int(row["k"]))


def test_an_empty_table_with_a_uuid_inside_a_list_reads_as_an_empty_table(catalog: MixedCatalog) -> None:
    table = catalog.create_table("db.empty", SCHEMA, primary_key=["k"])
    assert table.scan().to_arrow().num_rows == 0
    with table.new_transaction() as txn:
        txn.write(arrow_table([{"k": 1}], SCHEMA).append_column("_change_action", pa.array(["+I"])))
    with table.new_transaction() as txn:
        txn.write(arrow_table([{"k": 1}], SCHEMA).append_column("_change_action", pa.array(["-D"])))
    assert table.scan().to_arrow().schema.field("ids").type == _IDS
    assert table.scan().to_arrow().num_rows == 0


def test_a_uuid_inside_a_list_of_lists_is_written_and_read_back(catalog: MixedCatalog) -> None:
    table = catalog.create_table("db.nested", SCHEMA, primary_key=["k"])
    rows: list[dict[str, Any]] = [
        {"k": 1, "ids": [[A.bytes, None], None, []], "ref": B.bytes},
        {"k": 2, "ids": None, "ref": None},
    ]
    with table.new_transaction() as txn:
        txn.write(arrow_table(rows, SCHEMA).append_column("_change_action", pa.array(["+I", "+I"])))
    table.optimizing.run("full")
    assert _rows(table.scan().to_arrow()) == [
        {"k": 1, "ids": [[A, None], None, []], "ref": B},
        {"k": 2, "ids": None, "ref": None},
    ]


def test_null_checks_on_a_uuid_column_filter_rows(catalog: MixedCatalog) -> None:
    table = catalog.create_table("db.refs", SCHEMA, primary_key=["k"])
    table.bulk_load(arrow_table([{"k": 1, "ref": A.bytes}, {"k": 2, "ref": A.bytes}, {"k": 3}], SCHEMA))
    # pyarrow's Parquet scan compares uuids with the row groups' statistics and has no kernel for it
    assert [r["k"] for r in _rows(table.scan(row_filter="ref IS NOT NULL").to_arrow())] == [1, 2]
    assert [r["k"] for r in _rows(table.scan(row_filter="ref IS NULL").to_arrow())] == [3]


@pytest.mark.parametrize("engine", ["partial-update", "first-row", "aggregation"])
def test_optimizing_a_merge_engine_table_reads_its_nested_base_rows_in_their_table_types(
    catalog: MixedCatalog, engine: str
) -> None:
    schema = pa.schema(
        [
            pa.field("k", pa.int64(), nullable=False),
            pa.field("tags", pa.map_(pa.large_string(), pa.large_list(pa.field("element", pa.large_string())))),
            pa.field("n", pa.int64()),
        ]
    )
    table = catalog.create_table("db.engine", schema, primary_key=["k"], properties={"merge-engine": engine})
    table.bulk_load(arrow_table([{"k": 1, "tags": [("a", ["x"])], "n": 1}], schema))
    with table.new_transaction() as txn:
        txn.write(arrow_table([{"k": 1, "tags": None, "n": 2}], schema).append_column("_change_action", pa.array(["+U"])))
    expected = {
        "partial-update": [{"k": 1, "tags": [("a", ["x"])], "n": 2}],
        "first-row": [{"k": 1, "tags": [("a", ["x"])], "n": 1}],
        "aggregation": [{"k": 1, "tags": [("a", ["x"])], "n": 2}],  # last_non_null_value
    }[engine]
    assert _rows(table.scan().to_arrow()) == expected
    table.optimizing.run("minor")  # merges the change into the base file's rows: a raw Parquet read gave map<string, list>
    assert _rows(table.scan().to_arrow()) == expected
