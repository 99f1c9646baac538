"""The sink's schema check: a Flink schema against a table's, by name and type, naming the column."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from mixed_iceberg.exceptions import SchemaMismatchError

pytest.importorskip("pyflink", reason="the flink extra")
# Importing pyflink.table warns about its own deprecated classes.
pytestmark = pytest.mark.filterwarnings("ignore:.* has been deprecated since version:DeprecationWarning")

TABLE = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.large_string()),
        pa.field("price", pa.decimal128(12, 2)),
        pa.field("at", pa.timestamp("us", tz="UTC")),
        pa.field("tags", pa.list_(pa.string())),
    ]
)


def types() -> Any:
    from pyflink.table import DataTypes

    return DataTypes


def check(**columns: object) -> None:
    from mixed_iceberg.flink.schema import check_sink_schema

    check_sink_schema(list(columns), list(columns.values()), TABLE, ["id"], table="local.db.t")


def test_matching_and_widening_types_pass() -> None:
    DataTypes = types()
    check(
        id=DataTypes.INT(),  # a narrower integer reads as the table's long
        name=DataTypes.STRING(),
        price=DataTypes.DECIMAL(10, 2),
        at=DataTypes.TIMESTAMP_LTZ(3),
        tags=DataTypes.ARRAY(DataTypes.STRING()),
    )
    check(id=DataTypes.BIGINT())  # columns the pipeline lacks arrive as nulls


@pytest.mark.parametrize(
    ("column", "kind", "message"),
    [
        ("price", lambda t: t.DOUBLE(), "column 'price': expected a Flink type that reads as decimal128(12, 2)"),
        ("price", lambda t: t.DECIMAL(12, 3), "column 'price'"),
        ("at", lambda t: t.TIMESTAMP(6), "column 'at'"),  # no zone: not a timestamptz
        ("name", lambda t: t.BIGINT(), "column 'name'"),
        ("tags", lambda t: t.ARRAY(t.INT()), "column 'tags'"),
        ("colour", lambda t: t.STRING(), "Flink column 'colour' is not a table column"),
    ],
)
def test_a_column_that_does_not_fit_is_named(column: str, kind: Callable[[Any], object], message: str) -> None:
    with pytest.raises(SchemaMismatchError, match="^local.db.t: " + message.replace("(", r"\(").replace(")", r"\)")):
        check(id=types().BIGINT(), **{column: kind(types())})


def test_a_missing_key_column_is_refused() -> None:
    with pytest.raises(SchemaMismatchError, match=r"expected the key column\(s\) \['id'\]"):
        check(name=types().STRING())


def test_a_wider_integer_than_the_table_holds_is_refused() -> None:
    from mixed_iceberg.flink.schema import check_sink_schema

    narrow = pa.schema([pa.field("id", pa.int32(), nullable=False)])
    with pytest.raises(SchemaMismatchError, match="column 'id'"):
        check_sink_schema(["id"], [types().BIGINT()], narrow, ["id"], table="local.db.t")
