"""The bounded source's column mapping: every table type to the Flink type that holds its values
exactly, converted for Flink's Arrow reader without changing a value, or refused naming the column."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from mixed_iceberg.exceptions import UnsupportedColumnTypeError

pytest.importorskip("pyflink", reason="the flink extra")
# Importing pyflink.table warns about its own deprecated classes.
pytestmark = pytest.mark.filterwarnings("ignore:.* has been deprecated since version:DeprecationWarning")

# Every Iceberg type as the merged read returns it (strings, binaries and lists "large").
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("flag", pa.bool_()),
        pa.field("i", pa.int32()),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("amount", pa.decimal128(12, 2)),
        pa.field("day", pa.date32()),
        pa.field("t", pa.time64("us")),
        pa.field("at", pa.timestamp("us")),
        pa.field("atz", pa.timestamp("us", tz="UTC")),
        pa.field("name", pa.large_string()),
        pa.field("raw", pa.large_binary()),
        pa.field("uid", pa.uuid()),
        pa.field("fixed", pa.binary(3)),
        pa.field("tags", pa.large_list(pa.large_string())),
        pa.field("attrs", pa.map_(pa.large_string(), pa.int64())),
        pa.field("point", pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.float64())])),
    ]
)


def row(**changes: object) -> dict[str, object]:
    values: dict[str, object] = {
        "id": 1,
        "flag": True,
        "i": -(2**31),
        "f": 1.5,
        "d": -2.25,
        "amount": decimal.Decimal("-9999999999.99"),
        "day": dt.date(1900, 1, 1),
        "t": dt.time(23, 59, 59, 999_000),
        "at": dt.datetime(2262, 4, 11, 23, 47, 16, 854_775),
        "atz": dt.datetime(1969, 12, 31, 23, 59, 59, 999_000, tzinfo=dt.UTC),
        "name": "é€😀",
        "raw": b"\x00\xff",
        "uid": b"\x01" * 16,
        "fixed": b"abc",
        "tags": ["a", None],
        "attrs": [("k", 7)],
        "point": {"x": 1.0, "y": None},
    }
    values.update(changes)
    return values


def test_each_type_maps_to_the_flink_type_that_holds_it() -> None:
    from mixed_iceberg.flink.source import flink_row_type

    row_type = flink_row_type(SCHEMA, table="db.t")
    from pyflink.table import DataTypes as T

    assert row_type.field_types() == [
        T.BIGINT(False),
        T.BOOLEAN(),
        T.INT(),
        T.FLOAT(),
        T.DOUBLE(),
        T.DECIMAL(12, 2),
        T.DATE(),
        T.TIME(3),
        T.TIMESTAMP(6),
        T.TIMESTAMP_LTZ(6),
        T.STRING(),
        T.BYTES(),
        T.BINARY(16),
        T.BINARY(3),
        T.ARRAY(T.STRING()),
        T.MAP(T.STRING(False), T.BIGINT()),  # Arrow map keys are never null
        T.ROW([T.FIELD("x", T.DOUBLE()), T.FIELD("y", T.DOUBLE())]),
    ]
    assert row_type.field_names() == SCHEMA.names


def test_values_cross_unchanged_and_timestamptz_as_its_utc_instant() -> None:
    """Flink's Arrow reader takes a TIMESTAMP_LTZ's value as the UTC instant (not the session
    zone's wall clock, as PyFlink's from_pandas writes it): every value crosses as it was."""
    from mixed_iceberg.flink.source import flink_row_type, to_flink_batches

    data = pa.Table.from_pylist([row(), row(id=2, atz=None, t=None, tags=None)], schema=SCHEMA)
    row_type = flink_row_type(SCHEMA, table="db.t")
    batches = list(to_flink_batches(data, row_type, table="db.t", batch_rows=1))
    assert [b.num_rows for b in batches] == [1, 1]
    out = pa.Table.from_batches(batches).to_pylist()
    original = data.to_pylist()
    for got, want in zip(out, original, strict=True):
        for name in SCHEMA.names:
            if name == "atz":
                expected = None if want[name] is None else want[name].astimezone(dt.UTC).replace(tzinfo=None)
                assert got[name] == expected
            elif name == "uid":  # pyarrow's uuid reads as uuid.UUID, its storage as the 16 bytes
                assert got[name] == want[name].bytes
            else:
                assert got[name] == want[name], name


def test_a_sub_millisecond_time_is_refused_naming_the_column() -> None:
    """Flink's TIME holds milliseconds: 12:00:00.000001 would become 12:00:00, so it is refused."""
    from mixed_iceberg.flink.source import flink_row_type, to_flink_batches

    data = pa.Table.from_pylist([row(t=dt.time(12, 0, 0, 1))], schema=SCHEMA)
    with pytest.raises(UnsupportedColumnTypeError, match=r"db\.t: column 't'"):
        list(to_flink_batches(data, flink_row_type(SCHEMA, table="db.t"), table="db.t"))


@pytest.mark.parametrize("column", ["at", "atz"])
def test_a_timestamp_before_1970_with_a_sub_millisecond_part_is_refused(column: str) -> None:
    """Flink's Arrow reader would fail the job on it (a negative nanosecond part); whole
    milliseconds before 1970 and any value after it read."""
    from mixed_iceberg.flink.source import flink_row_type, to_flink_batches

    early = dt.datetime(1969, 12, 31, 23, 59, 59, 999_000)
    fine = [row(id=1, at=early, atz=early.replace(tzinfo=dt.UTC)), row(id=2)]
    fine[1][column] = dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=dt.UTC if column == "atz" else None)
    row_type = flink_row_type(SCHEMA, table="db.t")
    list(to_flink_batches(pa.Table.from_pylist(fine, schema=SCHEMA), row_type, table="db.t"))
    bad = row(id=3)
    bad[column] = early.replace(microsecond=999_999, tzinfo=dt.UTC if column == "atz" else None)
    with pytest.raises(UnsupportedColumnTypeError, match=rf"db\.t: column '{column}' holds .*before 1970"):
        list(to_flink_batches(pa.Table.from_pylist([bad], schema=SCHEMA), row_type, table="db.t"))


@pytest.mark.parametrize(
    ("field", "where"),
    [
        (pa.field("n", pa.list_(pa.struct([pa.field("a", pa.int32())]))), "n.element"),
        (pa.field("n", pa.struct([pa.field("at", pa.timestamp("us", tz="UTC"))])), "n.at"),
        (pa.field("n", pa.duration("us")), "n"),
    ],
)
def test_a_type_flink_cannot_carry_is_refused_naming_the_column(field: pa.Field, where: str) -> None:
    from mixed_iceberg.flink.source import flink_row_type

    with pytest.raises(UnsupportedColumnTypeError, match=rf"db\.t: column '{where}'"):
        flink_row_type(pa.schema([field]), table="db.t")
