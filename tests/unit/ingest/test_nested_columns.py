"""List and struct columns through the ingest job's pieces: declared in ``create-table`` as
Iceberg spells them, parsed from Debezium (bare and in Kafka Connect's envelope) and Flink's
changelog JSON with nulls at every level, carried by the LogStore; and what cannot be carried
(maps, a LogStore's binary) refused at start naming the table and the column.

The real job runs them end to end in tests/integration/test_ingest_pipeline.py."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("confluent_kafka", reason="the kafka extra: mixed_iceberg.ingest.runtime imports the Kafka backend")

from mixed_iceberg.exceptions import ConfigError, UnsupportedColumnTypeError
from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser, ParsedChanges
from mixed_iceberg.ingest.config import load_ingest_config
from mixed_iceberg.ingest.runtime import prepare
from mixed_iceberg.logstore.format import decode_messages, encode_rows
from tests.support.connect_envelopes import column, envelope
from tests.support.tables import local_catalog
from tests.unit.ingest.test_config import SHIPPED

TAGS = pa.list_(pa.field("element", pa.int32()))
DIMS = pa.struct([pa.field("w", pa.float64()), pa.field("label", pa.string()), pa.field("ok", pa.bool_())])
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("tags", TAGS), pa.field("dims", DIMS)])
#: Nulls at every level: the column, an element, a field, an empty list.
ROWS: list[dict[str, Any]] = [
    {"id": 1, "tags": [3, None, -7], "dims": {"w": 1.5, "label": 'a "b"', "ok": True}},
    {"id": 2, "tags": [], "dims": {"w": None, "label": None, "ok": None}},
    {"id": 3, "tags": None, "dims": None},
]
CONNECT = [
    column("id", "int64"),
    {"type": "array", "items": {"type": "int32", "optional": True}, "optional": True, "field": "tags"},
    {
        "type": "struct",
        "fields": [column("w", "double"), column("label", "string"), column("ok", "boolean")],
        "optional": True,
        "name": "pg.public.t.dims",  # a named record is still a record
        "field": "dims",
    },
]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("list<int>", TAGS),
        ("struct<w: double, label: string, ok: boolean>", DIMS),
        ("list<struct<a: long, b: list<string>>>", pa.list_(pa.field("element", pa.struct([
            ("a", pa.int64()), ("b", pa.list_(pa.field("element", pa.string())))])))),
        ("map<string, decimal(9, 2)>", pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", pa.decimal128(9, 2)))),
    ],
)  # fmt: skip
def test_create_table_declares_nested_columns_as_iceberg_spells_them(text: str, kind: pa.DataType) -> None:
    columns = [{"name": "id", "type": "long", "required": True}, {"name": "c", "type": text}]
    # changelog-json and no LogStore: the parse alone (maps are refused by the others, below)
    overrides = {"create-table.columns": columns, "create-table.properties": {}, "source.format": "changelog-json"}
    if text.startswith("map"):
        with pytest.raises(UnsupportedColumnTypeError, match=r"column 'c': changelog-json: .*map<string, decimal"):
            load_ingest_config(SHIPPED, overrides)
        overrides["source.format"] = "debezium-json"
        with pytest.raises(UnsupportedColumnTypeError, match=r"column 'c': debezium-json: .*the map"):
            load_ingest_config(SHIPPED, overrides)
        return
    spec = load_ingest_config(SHIPPED, overrides).create_table
    assert spec is not None
    assert spec.arrow_schema().field("c").type == kind


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("list<int", "it ends where > should follow"),
        ("struct<a int>", "'int' where ':' should be"),
        ("struct<a: int, a: long>", "a struct's field names must differ"),
        ("list<uuid>", "declare a uuid column as string"),
        ("lst<int>", "no type named 'lst'"),
        ("list<int> x", "'x' after the type"),
        ("list<decimal(40, 2)>", "1 <= p <= 38"),
    ],
)
def test_a_malformed_type_is_refused_naming_the_column_and_what_is_wrong(text: str, says: str) -> None:
    columns = [{"name": "id", "type": "long", "required": True}, {"name": "odd", "type": text}]
    with pytest.raises(ConfigError, match="column odd: expected a type in") as info:
        load_ingest_config(SHIPPED, {"create-table.columns": columns})
    assert says in str(info.value)


def _parse(fmt: CdcFormat, messages: list[bytes]) -> ParsedChanges:
    parsed = CdcParser(SCHEMA, ["id"], fmt).parse(pa.array(messages, pa.binary()), np.arange(len(messages)))
    assert parsed.dead.reasons.to_pylist() == []
    return parsed


def _dumps(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


@pytest.mark.parametrize("layout", ["debezium-bare", "debezium-envelope", "changelog-json"])
def test_lists_and_structs_parse_with_nulls_at_every_level(layout: str) -> None:
    inserts, update_before, update_after = ROWS, ROWS[0], {"id": 1, "tags": [9], "dims": None}
    if layout == "changelog-json":
        fmt = CdcFormat.CHANGELOG_JSON
        messages = [_dumps({"op": "+I", "data": r}) for r in inserts]
        messages += [_dumps({"op": "-U", "data": update_before}), _dumps({"op": "+U", "data": update_after})]
    else:
        fmt = CdcFormat.DEBEZIUM_JSON
        if layout == "debezium-bare":
            messages = [_dumps({"op": "c", "before": None, "after": r}) for r in inserts]
            messages.append(_dumps({"op": "u", "before": update_before, "after": update_after}))
        else:
            messages = [envelope(CONNECT, after=r) for r in inserts]
            messages.append(envelope(CONNECT, op="u", before=update_before, after=update_after))
    parsed = _parse(fmt, messages)
    assert parsed.changes.column("_change_action").to_pylist() == ["+I", "+I", "+I", "-U", "+U"]
    assert parsed.changes.select(SCHEMA.names).to_pylist() == [*ROWS, update_before, update_after]
    assert parsed.changes.schema.field("tags").type == TAGS


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ({"type": "string", "optional": True, "field": "tags"}, "[1, 2]", "column 'tags' is list .*expected a Kafka Connect array, found string"),
        ({"type": "array", "items": {"type": "int32"}, "optional": True, "field": "dims"}, [1], "column 'dims' is struct .*expected a Kafka Connect struct, found array"),
    ],
)  # fmt: skip
def test_a_connect_schema_that_is_not_an_array_or_struct_for_such_a_column_is_a_dead_letter_naming_it(
    field: dict[str, Any], value: object, says: str
) -> None:
    good = envelope(CONNECT, after=ROWS[0])
    bad = envelope([column("id", "int64"), field], after={"id": 5, field["field"]: value})
    parsed = CdcParser(SCHEMA, ["id"], CdcFormat.DEBEZIUM_JSON).parse(pa.array([good, bad], pa.binary()), np.arange(2))
    assert parsed.dead.offsets.tolist() == [1]
    assert parsed.dead.reasons[0].as_py().startswith("unsupported encoding: ")
    assert re.search(says, parsed.dead.reasons[0].as_py()), parsed.dead.reasons[0].as_py()
    assert parsed.changes.column("id").to_pylist() == [1]


def test_the_logstore_carries_lists_and_structs_with_nulls_at_every_level() -> None:
    temporal = pa.struct([("at", pa.timestamp("us", tz="UTC")), ("day", pa.date32()), ("amount", pa.decimal128(9, 3))])
    schema = SCHEMA.append(pa.field("deep", pa.large_list(pa.field("element", temporal))))
    first = {
        "at": dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC),
        "day": dt.date(1969, 12, 31),
        "amount": decimal.Decimal("-1.250"),
    }
    deep = [[first, {"at": None, "day": None, "amount": None}, None], None, []]
    rows = pa.Table.from_pylist([{**r, "deep": d} for r, d in zip(ROWS, deep, strict=True)], schema=schema)
    for part in (rows, rows.slice(1)):  # a slice's offsets are not its buffers' first ones
        messages = encode_rows(part, np.zeros(part.num_rows, np.int8), upstream_id=b"test", epic=7)
        assert decode_messages(messages, schema).select(schema.names).to_pylist() == part.to_pylist()


@pytest.mark.parametrize(
    ("kind", "log_store", "says"),
    [
        (pa.map_(pa.string(), pa.int64()), False, "debezium-json: .*the map"),
        (pa.large_binary(), True, "the LogStore \\(log-store.enabled\\) carries .*found large_binary"),
        (pa.binary(4), True, "the LogStore .*found fixed_size_binary\\[4\\]"),
    ],
)
def test_an_existing_table_the_job_cannot_carry_is_refused_before_any_topic_is_touched(
    tmp_path: Path, kind: pa.DataType, log_store: bool, says: str
) -> None:
    """The job's client checks the table it finds, not only one it would create: a worker
    would otherwise fail on every batch, or the LogStore's writer after the table's commit."""
    catalog = local_catalog(tmp_path / "cat")
    properties = {"log-store.enabled": "true", "log-store.message.topic": "t_log"} if log_store else {}
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("odd", kind)])
    catalog.create_table("db.existing", schema, primary_key=["id"], properties=properties)
    overrides = {
        "table": "db.existing",
        "catalog-properties": {"uri": f"sqlite:///{tmp_path}/cat/catalog.db", "warehouse": str(tmp_path / "cat" / "wh")},
        "source.bootstrap-servers": "127.0.0.1:9",  # nothing listens there: no topic is reached
    }
    with pytest.raises(UnsupportedColumnTypeError, match=f"table db.existing: column 'odd': {says}"):
        prepare(load_ingest_config(SHIPPED, overrides))
