"""Debezium messages with their Kafka Connect schema: each column decoded in the unit its
semantic type says (milli-, micro-, nanoseconds, days, ISO strings), and a schema the table
column cannot take dead-lettered naming both, never landed wrong."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser, ParsedChanges
from mixed_iceberg.ingest.connect_schema import batch_encodings
from mixed_iceberg.ingest.decode import Encoding, from_debezium
from tests.support.connect_envelopes import column, envelope

T = "io.debezium.time."
C = "org.apache.kafka.connect.data."
ID = column("id", "int64")
EPOCH = dt.datetime(1970, 1, 1)
AT = dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
AT_US = int((AT - EPOCH) / dt.timedelta(microseconds=1))
NOON = dt.time(12, 34, 56, 789012)
NOON_US = ((12 * 60 + 34) * 60 + 56) * 1_000_000 + 789012


def parse(schema: pa.Schema, messages: list[bytes]) -> ParsedChanges:
    parser = CdcParser(schema, ["id"], CdcFormat.DEBEZIUM_JSON)
    return parser.parse(pa.array(messages, pa.binary()), np.arange(len(messages)))


def values(parsed: ParsedChanges, name: str) -> list[Any]:
    assert len(parsed.dead) == 0, parsed.dead.reasons.to_pylist()
    out: list[Any] = parsed.changes.column(name).to_pylist()
    return out


def table(kind: pa.DataType) -> pa.Schema:
    return pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", kind)])


@pytest.mark.parametrize(
    ("connect_type", "semantic", "raw", "kind", "expected"),
    [
        pytest.param("int64", f"{T}Timestamp", AT_US // 1000, pa.timestamp("us"), AT.replace(microsecond=123000), id="Timestamp-millis"),
        pytest.param("int64", f"{C}Timestamp", AT_US // 1000, pa.timestamp("us"), AT.replace(microsecond=123000), id="connect-Timestamp"),
        pytest.param("int64", f"{T}NanoTimestamp", AT_US * 1000 + 789, pa.timestamp("us"), AT, id="NanoTimestamp-floored"),
        pytest.param("int64", f"{T}NanoTimestamp", -1001, pa.timestamp("us"), EPOCH - dt.timedelta(microseconds=2), id="NanoTimestamp-before-1970"),
        pytest.param("int64", f"{T}Timestamp", -1, pa.timestamp("us"), EPOCH - dt.timedelta(milliseconds=1), id="Timestamp-before-1970"),
        pytest.param("int32", f"{T}Time", NOON_US // 1000, pa.time64("us"), NOON.replace(microsecond=789000), id="Time-millis"),
        pytest.param("int32", f"{C}Time", NOON_US // 1000, pa.time64("us"), NOON.replace(microsecond=789000), id="connect-Time"),
        pytest.param("int64", f"{T}NanoTime", NOON_US * 1000 + 999, pa.time64("us"), NOON, id="NanoTime-floored"),
        pytest.param("string", None, "-12345.67", pa.decimal128(12, 2), decimal.Decimal("-12345.67"), id="decimal-as-string"),
        pytest.param("string", None, "1234", pa.decimal128(10, 0), decimal.Decimal(1234), id="decimal-string-that-is-also-base64"),
    ],
)  # fmt: skip
def test_a_column_is_decoded_in_the_unit_its_semantic_type_says(
    connect_type: str, semantic: str | None, raw: object, kind: pa.DataType, expected: object
) -> None:
    message = envelope([ID, column("v", connect_type, semantic)], after={"id": 1, "v": raw})
    assert values(parse(table(kind), [message]), "v") == [expected]


def test_connect_mode_sends_every_temporal_type_in_milliseconds_or_days() -> None:
    """time.precision.mode=connect: Kafka Connect's own logical types, in one message."""
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("at", pa.timestamp("us")), ("t", pa.time64("us")), ("d", pa.date32())]
    )
    columns = [ID, column("at", "int64", f"{C}Timestamp"), column("t", "int32", f"{C}Time"), column("d", "int32", f"{C}Date")]
    message = envelope(columns, after={"id": 1, "at": AT_US // 1000, "t": NOON_US // 1000, "d": 19724})
    row = parse(schema, [message]).changes.to_pylist()[0]
    assert (row["at"], row["t"], row["d"]) == (
        AT.replace(microsecond=123000),
        NOON.replace(microsecond=789000),
        dt.date(2024, 1, 2),
    )


def test_two_schemas_and_a_bare_message_in_one_batch_each_keep_their_unit() -> None:
    """timestamp(3) altered to timestamp(6) mid-batch: the messages before come in ms, after in us;
    a message without a schema is read as microseconds (the documented default)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("at", pa.timestamp("us")), ("t", pa.time64("us"))])
    millis = [ID, column("at", "int64", f"{T}Timestamp"), column("t", "int32", f"{T}Time")]
    micros = [ID, column("at", "int64", f"{T}MicroTimestamp"), column("t", "int64", f"{T}MicroTime")]
    bare = json.dumps({"before": None, "after": {"id": 5, "at": AT_US, "t": NOON_US}, "op": "c"}).encode()
    messages = [
        envelope(millis, after={"id": 1, "at": AT_US // 1000, "t": NOON_US // 1000}),
        envelope(micros, after={"id": 2, "at": AT_US, "t": NOON_US}),
        envelope(millis, op="u", before={"id": 3, "at": 0, "t": 0}, after={"id": 3, "at": AT_US // 1000, "t": 1}),
        bare,
        envelope(micros, op="d", before={"id": 4, "at": AT_US, "t": NOON_US}),
    ]
    parsed = parse(schema, messages)
    ms = AT.replace(microsecond=123000)
    assert values(parsed, "id") == [1, 2, 3, 3, 5, 4]
    assert values(parsed, "_change_action") == ["+I", "+I", "-U", "+U", "+I", "-D"]
    assert values(parsed, "at") == [ms, AT, EPOCH, ms, AT, AT]
    assert values(parsed, "t") == [NOON.replace(microsecond=789000), NOON, dt.time(0), dt.time(0, 0, 0, 1000), NOON, NOON]


def test_a_malformed_message_among_two_schemas_costs_only_itself() -> None:
    """Bisection carries each half's schemas with it."""
    millis, micros = [ID, column("at", "int64", f"{T}Timestamp")], [ID, column("at", "int64", f"{T}MicroTimestamp")]
    messages = [envelope(millis if i % 2 else micros, after={"id": i, "at": AT_US // 1000 if i % 2 else AT_US}) for i in range(7)]
    messages[4] = messages[4][:-2]  # the closing braces missing
    parsed = parse(pa.schema([pa.field("id", pa.int64(), nullable=False), ("at", pa.timestamp("us"))]), messages)
    assert parsed.dead.offsets.tolist() == [4]
    ms = AT.replace(microsecond=123000)
    assert parsed.changes.column("at").to_pylist() == [AT, ms, AT, ms, ms, AT]


def test_a_schema_after_the_payload_is_read_too() -> None:
    message = envelope([ID, column("v", "int64", f"{T}Timestamp")], after={"id": 1, "v": AT_US // 1000}, schema_first=False)
    assert values(parse(table(pa.timestamp("us")), [message]), "v") == [AT.replace(microsecond=123000)]


@pytest.mark.parametrize(
    ("kind", "field", "raw", "reason"),
    [
        pytest.param(pa.timestamp("us"), column("v", "string", f"{T}ZonedTimestamp"), "2024-01-02T03:04:05Z",
                     "column 'v' is timestamp .*: expected io.debezium.time.Timestamp, .* found string io.debezium.time.ZonedTimestamp; .*timestamptz",
                     id="zoned-into-timestamp"),
        pytest.param(pa.timestamp("us"), column("v", "int64"), AT_US, "found int64 \\(no semantic type\\)", id="timestamp-without-a-unit"),
        pytest.param(pa.timestamp("us"), column("v", "string", f"{T}IsoTimestamp"), "2024-01-02T03:04:05",
                     "found string io.debezium.time.IsoTimestamp", id="isostring-mode"),
        pytest.param(pa.timestamp("us", tz="UTC"), column("v", "int64", f"{T}MicroTimestamp"), AT_US,
                     "column 'v' is timestamptz .*expected io.debezium.time.ZonedTimestamp, found int64 io.debezium.time.MicroTimestamp",
                     id="micros-into-timestamptz"),
        pytest.param(pa.time64("us"), column("v", "string", f"{T}ZonedTime"), "12:00:00Z", "found string io.debezium.time.ZonedTime; .*declare the column string",
                     id="timetz"),
        pytest.param(pa.date32(), column("v", "int64", f"{T}MicroTimestamp"), AT_US, "column 'v' is date .*found int64 io.debezium.time.MicroTimestamp",
                     id="timestamp-into-date"),
        pytest.param(pa.decimal128(12, 2), column("v", "bytes", f"{C}Decimal", scale="3", **{"connect.decimal.precision": "12"}), "AeJA",
                     "column 'v': expected org.apache.kafka.connect.data.Decimal of scale 2 \\(the column's\\), found scale 3", id="decimal-scale"),
        pytest.param(pa.decimal128(12, 2), column("v", "double"), 1.5, "found double .*decimal.handling.mode=double loses digits", id="decimal-double"),
        pytest.param(pa.decimal128(12, 2), column("v", "struct", "io.debezium.data.VariableScaleDecimal"), {"scale": 2, "value": "AQ=="},
                     "found struct io.debezium.data.VariableScaleDecimal", id="variable-scale-decimal"),
        pytest.param(pa.large_binary(), column("v", "string"), "deadbeef", "column 'v' is binary .*found string .*hex", id="binary-hex-or-base64"),
    ],
)  # fmt: skip
def test_a_schema_the_column_cannot_take_is_dead_lettered_naming_column_and_encoding(
    kind: pa.DataType, field: dict[str, Any], raw: object, reason: str
) -> None:
    good = envelope([ID], after={"id": 1})  # no v in its schema: null
    bad = envelope([ID, field], after={"id": 2, "v": raw})
    parsed = parse(table(kind), [good, bad, good])
    assert parsed.dead.offsets.tolist() == [1]
    assert parsed.dead.values.to_pylist() == [bad]
    assert parsed.dead.reasons[0].as_py().startswith("unsupported encoding: column 'v'")
    assert re.search(reason, parsed.dead.reasons[0].as_py()), parsed.dead.reasons[0].as_py()
    assert parsed.changes.column("id").to_pylist() == [1, 1]


#: ZonedTimestamp texts and their instants: as many digits as the source column's precision (up
#: to 9 for databases other than PostgreSQL); more than the table's microseconds are floored.
ZONED = [
    ("2024-01-02T03:04:05Z", dt.datetime(2024, 1, 2, 3, 4, 5)),
    ("2024-01-02T03:04:05.1Z", dt.datetime(2024, 1, 2, 3, 4, 5, 100000)),
    ("2024-01-02T03:04:05.123Z", dt.datetime(2024, 1, 2, 3, 4, 5, 123000)),
    ("2024-01-02T03:04:05.123456Z", dt.datetime(2024, 1, 2, 3, 4, 5, 123456)),
    ("2024-01-02T03:04:05.1234567Z", dt.datetime(2024, 1, 2, 3, 4, 5, 123456)),
    ("2024-01-02T03:04:05.123456789Z", dt.datetime(2024, 1, 2, 3, 4, 5, 123456)),
    ("1969-12-31T23:59:59.999999999Z", dt.datetime(1969, 12, 31, 23, 59, 59, 999999)),
    ("2024-01-02T08:34:05.5+05:30", dt.datetime(2024, 1, 2, 3, 4, 5, 500000)),
]


def test_zoned_timestamps_land_on_their_instant_whatever_their_fractional_digits() -> None:
    kind = pa.timestamp("us", tz="UTC")
    zoned = [ID, column("v", "string", f"{T}ZonedTimestamp")]
    with_schema = [envelope(zoned, after={"id": i, "v": text}) for i, (text, _) in enumerate(ZONED)]
    bare = [json.dumps({"op": "c", "after": {"id": i, "v": text}}).encode() for i, (text, _) in enumerate(ZONED)]
    expected = [instant.replace(tzinfo=dt.UTC) for _, instant in ZONED]
    assert values(parse(table(kind), with_schema + bare), "v") == expected * 2


@pytest.mark.parametrize(
    ("encoding", "raw", "kind", "expected"),
    [
        (Encoding.MILLIS, pa.array([1, None, -1], pa.int64()), pa.timestamp("ns"), [1_000_000, None, -1_000_000]),
        (Encoding.NANOS, pa.array([1999, None, -1], pa.int64()), pa.timestamp("us"), [1, None, -1]),
        (Encoding.MICROS, pa.array([1999], pa.int64()), pa.timestamp("ms"), [1]),
        (Encoding.MILLIS, pa.array([86_399_999], pa.int64()), pa.time64("ns"), [86_399_999_000_000]),
    ],
)
def test_unit_conversion_floors_and_keeps_nulls(
    encoding: Encoding, raw: pa.Array, kind: pa.DataType, expected: list[int | None]
) -> None:
    assert from_debezium(raw, kind, encoding).cast(pa.int64()).to_pylist() == expected


def test_milliseconds_that_overflow_microseconds_are_refused() -> None:
    with pytest.raises(pa.ArrowInvalid, match="overflow"):
        from_debezium(pa.array([2**62], pa.int64()), pa.timestamp("us"), Encoding.MILLIS)


def test_a_schema_nested_deeper_than_pythons_json_reader_is_refused_not_raised() -> None:
    deep = "[" * 5000 + "]" * 5000
    messages = [f'{{"schema":{deep},"payload":{{}}}}', f'{{"payload":{{}},"schema":{deep}}}']
    found = batch_encodings(pa.array([m.encode() for m in messages], pa.binary()), table(pa.timestamp("us")))
    reasons = found.rejected()
    assert sorted(reasons) == [0, 1]
    assert all("nested deeper" in r for r in reasons.values())
