"""Kafka Connect schemas in Debezium messages -> how each table column is encoded. Pure: no I/O.

With ``schemas.enable=true`` (Debezium's and Kafka Connect's default) the ``JsonConverter``
writes ``{"schema": {...}, "payload": {...}}``, and the schema names each column's semantic
type: ``schema.fields[]`` -> ``before`` / ``after`` -> ``fields[]`` -> ``{field, type, name,
parameters}``. The name is what says the unit: PostgreSQL's ``timestamp(0..3)`` comes as
``io.debezium.time.Timestamp`` (int64 milliseconds), ``timestamp(4..6)`` as ``MicroTimestamp``,
and ``time.precision.mode=connect`` sends Kafka Connect's own ``Timestamp``, ``Time`` and
``Date``. :func:`column_encodings` maps one schema to an :class:`~.decode.Encoding` per column,
or to the reason the table cannot take it; :func:`batch_encodings` does so for a batch.

A batch is read schema by schema, not message by message: a Debezium topic's messages carry
the same schema text until the source table changes. The first message's schema is parsed
once (Python's JSON reader, from where ``"schema":`` starts to where its value ends), then one
``starts_with`` kernel finds every message that begins with the same bytes; the rest are
grouped the same way, one schema at a time. A message that does not start with ``{"schema"``
but holds both words ``"schema"`` and ``"payload"`` is parsed alone with Python's reader: the
schema after the payload (a layout no converter writes), or a bare message with both words in
its values. That path costs a Python parse per such message; Kafka Connect's topics do not take
it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from mixed_iceberg.ingest.decode import Encoding, from_debezium

__all__ = ["BatchEncodings", "Images", "batch_encodings", "column_encodings"]

#: Per image (before, after), per table column: its encoding (None: the bare defaults).
Images = tuple[tuple[Encoding | None, ...], tuple[Encoding | None, ...]]

_DEBEZIUM_TIME = "io.debezium.time."
_CONNECT = "org.apache.kafka.connect.data."
_TIMESTAMPS = {
    f"{_DEBEZIUM_TIME}Timestamp": Encoding.MILLIS,
    f"{_CONNECT}Timestamp": Encoding.MILLIS,
    f"{_DEBEZIUM_TIME}MicroTimestamp": Encoding.MICROS,
    f"{_DEBEZIUM_TIME}NanoTimestamp": Encoding.NANOS,
}
_TIMES = {
    f"{_DEBEZIUM_TIME}Time": Encoding.MILLIS,
    f"{_CONNECT}Time": Encoding.MILLIS,
    f"{_DEBEZIUM_TIME}MicroTime": Encoding.MICROS,
    f"{_DEBEZIUM_TIME}NanoTime": Encoding.NANOS,
}
_DATES = {f"{_DEBEZIUM_TIME}Date": Encoding.DAYS, f"{_CONNECT}Date": Encoding.DAYS}
_ZONED = {f"{_DEBEZIUM_TIME}ZonedTimestamp": Encoding.ISO}
_DECIMAL = f"{_CONNECT}Decimal"
_BY_NAME: dict[str, dict[str, Encoding]] = {"timestamp": _TIMESTAMPS, "time": _TIMES, "date": _DATES, "timestamptz": _ZONED}
_SCHEMA_KEY = re.compile(r'\{[ \t\n\r]*"schema"[ \t\n\r]*:[ \t\n\r]*')
#: strict=False: control characters in strings, which the parser's own checks leave to Arrow.
_DECODER = json.JSONDecoder(strict=False)
#: What to do instead, by table type and what came (None: whatever came).
_HINTS: dict[tuple[str, str | None], str] = {
    ("timestamp", f"{_DEBEZIUM_TIME}ZonedTimestamp"): "for a timestamp with time zone declare the column timestamptz",
    ("time", f"{_DEBEZIUM_TIME}ZonedTime"): "timetz has no Iceberg type: declare the column string",
    ("binary", None): (
        "binary.handling.mode=base64, base64-url-safe and hex all send a string the schema does not tell "
        "apart; set it to bytes (the default), or declare the column string to keep the text"
    ),
    ("decimal", "double"): "decimal.handling.mode=double loses digits; use precise (the default) or string",
}


def _kind_name(kind: pa.DataType) -> str | None:
    """The table types whose decoding depends on the encoding; None for the others."""
    if pa.types.is_timestamp(kind):
        return "timestamptz" if kind.tz is not None else "timestamp"
    if pa.types.is_time(kind):
        return "time"
    if pa.types.is_date(kind):
        return "date"
    if pa.types.is_decimal128(kind):
        return "decimal"
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        return "binary"
    return None


def _accepted(kind_name: str) -> str:
    names = _BY_NAME.get(kind_name)
    if names is not None:
        return ", ".join(names)
    if kind_name == "decimal":
        return f"bytes {_DECIMAL} (decimal.handling.mode=precise) or string (decimal.handling.mode=string)"
    return "bytes (binary.handling.mode=bytes)"


#: Kafka Connect's type for a nested table column: a list comes as an array, a struct as a struct.
_NESTED = {"list": "array", "struct": "struct"}


def _nested(kind: pa.DataType, field: Mapping[str, Any]) -> str | None:
    """Why a list or struct column cannot take ``field``'s Connect type; None if it can (or
    ``kind`` is not nested). Elements and fields are read as JSON gives them (booleans, numbers,
    strings: decode.py), so their own Connect types are not looked at, nor is a struct's semantic
    name (a named record is still a record)."""
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        kind_name = "list"
    elif pa.types.is_struct(kind):
        kind_name = "struct"
    else:
        return None
    connect_type, name = field.get("type"), field.get("name")
    if connect_type == _NESTED[kind_name]:
        return None
    said = f"{connect_type} {name}" if name is not None else str(connect_type)
    return f"column {field.get('field')!r} is {kind_name} ({kind}): expected a Kafka Connect {_NESTED[kind_name]}, found {said}"


def _encoding(kind: pa.DataType, field: Mapping[str, Any]) -> Encoding | str | None:
    """The encoding of one column (None: the defaults), or why ``kind`` cannot take it."""
    kind_name = _kind_name(kind)
    if kind_name is None:
        return _nested(kind, field)
    connect_type, name = field.get("type"), field.get("name")
    found: Encoding | None = None
    if kind_name in _BY_NAME:
        found = _BY_NAME[kind_name].get(str(name))
    elif kind_name == "decimal":
        if connect_type == "bytes" and name == _DECIMAL:
            parameters = field.get("parameters")
            scale = parameters.get("scale") if isinstance(parameters, dict) else None
            if str(scale) != str(kind.scale):
                return f"column {field.get('field')!r}: expected {_DECIMAL} of scale {kind.scale} (the column's), found scale {scale}"
            found = Encoding.DECIMAL_BYTES
        elif connect_type == "string" and name is None:
            found = Encoding.DECIMAL_TEXT
    elif connect_type == "bytes" and name is None:
        found = Encoding.BASE64
    if found is not None:
        return found
    said = f"{connect_type} {name}" if name is not None else f"{connect_type} (no semantic type)"
    hint = _HINTS.get((kind_name, name), _HINTS.get((kind_name, connect_type), _HINTS.get((kind_name, None), "")))
    return (
        f"column {field.get('field')!r} is {kind_name} ({kind}): expected {_accepted(kind_name)}, found {said}"
        f"{f'; {hint}' if hint else ''}"
    )


def column_encodings(schema: object, table: pa.Schema) -> Images | str | None:
    """What a message's Kafka Connect ``schema`` says each column of ``table`` is.

    Returns:
        Per image, per table column, its encoding (None for a column the image's schema does
        not list, or whose type reads the same in every encoding); None if ``schema`` lists no
        ``before`` / ``after`` fields (nothing to go by: the defaults); or the reason, naming the
        column and the encoding, that the table cannot take a column as it comes.
    """
    if not isinstance(schema, dict) or not isinstance(schema.get("fields"), list):
        return None
    images: dict[str, dict[str, Mapping[str, Any]]] = {}
    for member in schema["fields"]:
        if isinstance(member, dict) and member.get("field") in ("before", "after") and isinstance(member.get("fields"), list):
            listed = (f for f in member["fields"] if isinstance(f, dict) and isinstance(f.get("field"), str))
            images[member["field"]] = {f["field"]: f for f in listed}
    if not images:
        return None
    out: list[tuple[Encoding | None, ...]] = []
    for image in ("before", "after"):
        fields = images.get(image, {})
        row: list[Encoding | None] = []
        for column in table:
            found = _encoding(column.type, fields[column.name]) if column.name in fields else None
            if isinstance(found, str):
                return f"unsupported encoding: {found}"  # before and after: one Value schema
            row.append(found)
        out.append(tuple(row))
    return out[0], out[1]


@dataclass(frozen=True, slots=True)
class BatchEncodings:
    """Which schema each message of a batch has: ``groups[i]`` indexes ``schemas`` (-1: none,
    the defaults). A schema is the per-column encodings, or the reason its messages are dead
    letters."""

    groups: npt.NDArray[np.int32]
    schemas: tuple[Images | str, ...]

    def __post_init__(self) -> None:
        if len(self.groups) and int(self.groups.max()) >= len(self.schemas):
            raise ValueError(f"expected groups below {len(self.schemas)}, found {int(self.groups.max())}")

    def take(self, rows: npt.NDArray[np.int64]) -> BatchEncodings:
        return BatchEncodings(self.groups[rows], self.schemas)

    def slice(self, start: int, stop: int) -> BatchEncodings:
        return BatchEncodings(self.groups[start:stop], self.schemas)

    def only(self, keep: npt.NDArray[np.bool_]) -> BatchEncodings:
        """The same, with the messages not in ``keep`` back on the defaults (bare messages)."""
        return BatchEncodings(np.where(keep, self.groups, -1).astype(np.int32), self.schemas)

    def rejected(self) -> dict[int, str]:
        """Position -> reason, for the messages whose schema the table cannot take."""
        bad = [g for g, s in enumerate(self.schemas) if isinstance(s, str)]
        if not bad:
            return {}
        rows = np.flatnonzero(np.isin(self.groups, bad))
        return {int(i): str(self.schemas[self.groups[i]]) for i in rows}

    def column(self, image: int, column: int) -> list[tuple[Encoding | None, npt.NDArray[np.int64] | None]]:
        """The encodings of one column in this batch, each with its rows (None: all rows)."""
        by_group = [None, *(None if isinstance(s, str) else s[image][column] for s in self.schemas)]
        distinct = list(dict.fromkeys(by_group))
        if len(distinct) == 1:
            return [(distinct[0], None)]
        codes = np.array([distinct.index(e) for e in by_group], np.int32)[self.groups + 1]
        present = np.unique(codes)
        if len(present) == 1:
            return [(distinct[int(present[0])], None)]
        return [(distinct[int(c)], np.flatnonzero(codes == c).astype(np.int64)) for c in present]

    def decode(self, values: pa.Array, kind: pa.DataType, image: int, column: int) -> pa.Array:
        """One column of one image (``values``, as read for ``kind``), each row decoded as its
        message's schema says."""
        parts = self.column(image, column)
        if len(parts) == 1:
            return from_debezium(values, kind, parts[0][0])
        # The batch's schemas disagree on this column: decode each one's rows, then put the rows
        # back in message order.
        rows = np.concatenate([r for _, r in parts if r is not None])
        decoded = pa.concat_arrays([from_debezium(values.take(pa.array(r)), kind, e) for e, r in parts if r is not None])
        order = np.empty(len(rows), np.int64)
        order[rows] = np.arange(len(rows))
        return decoded.take(pa.array(order))


def _schema_span(text: str) -> tuple[object, int] | str | None:
    """The schema of a message that starts ``{"schema":`` and where its value ends; None if
    ``"schema"`` is not the first key; the reason if its value is not JSON."""
    head = _SCHEMA_KEY.match(text)
    if head is None:
        return None
    try:
        return _DECODER.raw_decode(text, head.end())
    except json.JSONDecodeError as exc:
        return f"malformed message: its schema is not JSON: {exc}"
    except RecursionError:  # Python's reader recurses per level of nesting
        return "malformed message: its schema is nested deeper than Python's JSON reader goes"


def batch_encodings(values: pa.Array, table: pa.Schema) -> BatchEncodings:
    """The encodings of each message of ``values`` (binary, valid UTF-8, one JSON object each)."""
    text = values.view(pa.string()) if pa.types.is_binary(values.type) else values
    groups = np.full(len(text), -1, np.int32)
    schemas: list[Images | str] = []
    known: dict[str, int] = {}

    def group_of(found: Images | str | None) -> int:
        if found is None:
            return -1
        key = repr(found)
        if key not in known:
            known[key] = len(schemas)
            schemas.append(found)
        return known[key]

    heads = np.array(pc.starts_with(text, pattern='{"schema"').to_numpy(zero_copy_only=False), np.bool_)
    remaining = np.flatnonzero(heads)
    while len(remaining):  # one round per distinct schema text
        first = text[int(remaining[0])].as_py()
        span = _schema_span(first)
        if span is None:  # {"schema..." but not that key: another layout
            heads[remaining[0]] = False
            remaining = remaining[1:]
            continue
        if isinstance(span, str):
            groups[remaining[0]] = group_of(span)
            remaining = remaining[1:]
            continue
        schema, end = span
        group = group_of(column_encodings(schema, table))
        if not isinstance(schema, (dict, list, str)) and schema is not None:
            # A number's text is not self-delimiting ("1" starts "12"): this message alone.
            groups[remaining[0]] = group
            remaining = remaining[1:]
            continue
        # Over the whole batch, not a take of the rest: no copy of the messages (a memcmp stops at
        # the first differing byte).
        same = np.asarray(pc.starts_with(text, pattern=first[:end]).to_numpy(zero_copy_only=False))[remaining]
        groups[remaining[same]] = group
        remaining = remaining[~same]
    # Other layouts (schema after payload, whitespace first): parsed one by one, see above.
    others = np.flatnonzero(~heads)
    if len(others):
        subset = text.take(pa.array(others))
        both = pc.and_(pc.match_substring(subset, '"schema"'), pc.match_substring(subset, '"payload"'))
        for i in others[both.to_numpy(zero_copy_only=False)]:
            try:
                message = _DECODER.decode(text[int(i)].as_py())
            except json.JSONDecodeError:
                continue  # not JSON at all: the JSON reader dead-letters it
            except RecursionError:
                groups[i] = group_of("malformed message: nested deeper than Python's JSON reader goes")
                continue
            if isinstance(message, dict) and "payload" in message:
                groups[i] = group_of(column_encodings(message.get("schema"), table))
    return BatchEncodings(groups, tuple(schemas))
