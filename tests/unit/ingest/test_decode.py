"""Debezium's JSON encodings decoded column-wise, against Python's base64 and decimal as oracles."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("confluent_kafka", reason="the kafka extra: it imports test_config, which imports ingest.runtime")

from mixed_iceberg.exceptions import ConfigError, UnsupportedColumnTypeError
from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser
from mixed_iceberg.ingest.config import load_ingest_config
from mixed_iceberg.ingest.decode import (
    base64_decode,
    check_debezium_schema,
    debezium_json_type,
    decimal_from_bytes,
    from_debezium,
)
from tests.unit.ingest.test_config import SHIPPED

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="


def java_bytes(unscaled: int) -> bytes:
    """``BigInteger.toByteArray()``: the shortest big-endian two's complement form."""
    return unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=40)), max_size=30), st.integers(0, 3))
def test_base64_round_trips_what_python_encodes(values: list[bytes | None], skip: int) -> None:
    encoded = pa.array([None if v is None else b64(v) for v in values], pa.string()).slice(min(skip, len(values)))
    decoded = base64_decode(encoded)
    assert decoded.type == pa.large_binary()
    assert decoded.to_pylist() == values[min(skip, len(values)) :]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(_ALPHABET, max_size=12).map(lambda s: s[: len(s) // 4 * 4]), min_size=1, max_size=8))
def test_base64_accepts_exactly_what_python_accepts_strictly(values: list[str]) -> None:
    """Padded values of any characters of the alphabet and '=': the same verdict and bytes as
    ``binascii.a2b_base64(strict_mode=True)``, value by value."""
    expected: list[bytes] = []
    for value in values:
        try:
            expected.append(binascii.a2b_base64(value, strict_mode=True))
        except binascii.Error:
            with pytest.raises(pa.ArrowInvalid):
                base64_decode(pa.array([value]))
            return
    assert base64_decode(pa.array(values)).to_pylist() == expected


@pytest.mark.parametrize(
    ("value", "reason"),
    [("abc", "multiple of 4"), ("ab$=", "alphabet"), ("a=bc", "padding"), ("a===", "padding"), ("=abc", "padding")],
)
def test_malformed_base64_is_refused(value: str, reason: str) -> None:
    with pytest.raises(pa.ArrowInvalid, match=reason):
        base64_decode(pa.array(["AAAA", value]))


@settings(max_examples=300, deadline=None)
@given(st.data(), st.integers(1, 38))
def test_decimals_decode_to_python_decimals(data: st.DataObject, precision: int) -> None:
    scale = data.draw(st.integers(0, precision))
    bound = 10**precision - 1
    unscaled = data.draw(st.lists(st.one_of(st.none(), st.integers(-bound, bound)), max_size=20))
    values = pa.array([None if u is None else b64(java_bytes(u)) for u in unscaled], pa.string())
    decoded = from_debezium(values, pa.decimal128(precision, scale))
    assert decoded.type == pa.decimal128(precision, scale)
    assert decoded.to_pylist() == [None if u is None else decimal.Decimal(f"{u}E-{scale}") for u in unscaled]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [(b"", "at least one byte"), (b"\x01" * 17, "at most 16 bytes"), (java_bytes(100_000), "precision 4")],
)
def test_decimals_that_do_not_fit_are_refused(raw: bytes, reason: str) -> None:
    with pytest.raises(pa.ArrowInvalid, match=reason):
        decimal_from_bytes(pa.array([b"\x00", raw], pa.binary()), pa.decimal128(4, 1))


def test_a_39_digit_value_is_refused_by_a_precision_38_column() -> None:
    with pytest.raises(pa.ArrowInvalid, match="precision"):
        decimal_from_bytes(pa.array([java_bytes(10**38)], pa.binary()), pa.decimal128(38, 0))


def test_temporal_values_keep_their_instant_whatever_the_unit() -> None:
    micros = pa.array([1_704_164_645_123_456, None], pa.int64())
    assert from_debezium(micros, pa.timestamp("ns")).to_pylist()[0] == dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
    zoned = pa.array(["2024-01-02T01:04:05.500000Z", "2024-01-02T03:04:05Z", None])
    assert from_debezium(zoned, pa.timestamp("us", tz="UTC")).to_pylist() == [
        dt.datetime(2024, 1, 2, 1, 4, 5, 500000, tzinfo=dt.UTC),
        dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        None,
    ]
    assert from_debezium(pa.array([3_600_000_001], pa.int64()), pa.time64("us")).to_pylist() == [dt.time(1, 0, 0, 1)]


@pytest.mark.parametrize(
    ("kind", "read_as"),
    [
        (pa.decimal128(12, 2), pa.string()),
        (pa.large_binary(), pa.string()),
        (pa.timestamp("us", tz="UTC"), pa.string()),
        (pa.timestamp("us"), pa.int64()),
        (pa.date32(), pa.int32()),
        (pa.list_(pa.int32()), pa.list_(pa.int32())),
        (pa.large_string(), pa.large_string()),
    ],
)
def test_json_types_follow_debeziums_encodings(kind: pa.DataType, read_as: pa.DataType) -> None:
    assert debezium_json_type(kind) == read_as


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        (pa.decimal256(40, 2), "decimal256"),
        (pa.uuid(), "declare a uuid column as string"),
        (pa.list_(pa.decimal128(5, 2)), "list<item: decimal128"),
    ],
)
def test_types_no_encoding_maps_to_are_refused_naming_the_column(kind: pa.DataType, reason: str) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("odd", kind)])
    with pytest.raises(UnsupportedColumnTypeError, match=f"table db.t: column 'odd': .*{reason}"):
        check_debezium_schema(schema, table="db.t")


def test_a_debezium_message_with_every_mapped_type_parses_and_a_bad_value_is_dead_lettered() -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("amount", pa.decimal128(12, 2)),
            pa.field("raw", pa.large_binary()),
            pa.field("at", pa.timestamp("us")),
            pa.field("atz", pa.timestamp("us", tz="UTC")),
            pa.field("day", pa.date32()),
        ]
    )
    row = {"id": 1, "amount": b64(java_bytes(-1234567)), "raw": "3q2+7wA=", "at": 0, "atz": "1970-01-01T00:00:01Z", "day": 1}
    messages = [
        {"schema": {"type": "struct"}, "payload": {"before": None, "after": row, "op": "r"}},
        {"before": None, "after": {**row, "id": 2, "raw": "not base64"}, "op": "c"},  # bad: dead letter
        {"before": {"id": 1}, "after": None, "op": "d"},  # a key-only before image
    ]
    values = pa.array([json.dumps(m).encode() for m in messages], pa.binary())
    parsed = CdcParser(schema, ["id"], CdcFormat.DEBEZIUM_JSON).parse(values, np.arange(3))
    assert parsed.changes.column("_change_action").to_pylist() == ["+I", "-D"]
    first = parsed.changes.slice(0, 1).to_pylist()[0]
    assert first["amount"] == decimal.Decimal("-12345.67")
    assert first["raw"] == b"\xde\xad\xbe\xef\x00"
    assert first["atz"] == dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)
    assert first["day"] == dt.date(1970, 1, 2)
    assert parsed.dead.offsets.tolist() == [1]
    assert "base64" in parsed.dead.reasons[0].as_py()


def test_create_table_takes_decimal_timestamptz_and_binary_columns() -> None:
    columns = [
        {"name": "id", "type": "long", "required": True},
        {"name": "amount", "type": "decimal(12, 2)"},
        {"name": "at", "type": "timestamptz"},
        {"name": "raw", "type": "binary"},
    ]
    # No LogStore: its JSON rows carry no binary (test_a_column_the_logstore_cannot_carry_is_refused_at_start).
    spec = load_ingest_config(SHIPPED, {"create-table.columns": columns, "create-table.properties": {}}).create_table
    assert spec is not None
    schema = spec.arrow_schema()
    assert schema.field("amount").type == pa.decimal128(12, 2)
    assert schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert schema.field("raw").type == pa.large_binary()


@pytest.mark.parametrize(("kind", "reason"), [("decimal(39, 2)", "1 <= p <= 38"), ("uuid", "declare a uuid column as string")])
def test_create_table_refuses_types_the_ingest_cannot_carry(kind: str, reason: str) -> None:
    columns = [{"name": "id", "type": "long", "required": True}, {"name": "odd", "type": kind}]
    with pytest.raises(ConfigError, match=reason):
        load_ingest_config(SHIPPED, {"create-table.columns": columns})
