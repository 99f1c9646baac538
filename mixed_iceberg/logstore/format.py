"""The LogStore message format, ``net1`` (Amoro's ``LogDataJsonSerialization``), vectorized.

Every Kafka record value is::

    bytes 0-3   version      b"net\\x01"  (FORMAT_VERSION_V1)
    bytes 4-7   upstream id  4 ASCII bytes naming the writer
    bytes 8-15  epic number  big-endian signed long (here: the ChangeStore commit sequence)
    byte  16    flip         1 = flip marker (never written by us), 0 = data
    byte  17    action       0 +I, 1 -U, 2 +U, 3 -D   (Amoro's ChangeAction bytes)
    bytes 18-   row          one JSON object, field name -> value

Row values follow Amoro: numbers as JSON numbers (decimals too; a float's NaN and infinities as
the literals ``NaN``, ``Infinity`` and ``-Infinity``), dates as ISO ``YYYY-MM-DD``
strings, timestamps as ISO strings, booleans, strings, lists as JSON arrays and structs as
JSON objects of their fields; ``null`` for nulls. Binary, fixed, uuid and map columns are
refused (:func:`check_log_schema`): pyarrow's JSON reader cannot read them back. Rows are encoded
and decoded column by column with Arrow kernels, never row by row.
"""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from mixed_iceberg.exceptions import UnsupportedColumnTypeError
from mixed_iceberg.typedef import ACTION_NAMES, action_names

__all__ = ["HEADER_SIZE", "MAGIC", "check_log_schema", "decode_messages", "encode_rows", "header", "join_lines"]

MAGIC = b"net\x01"
HEADER_SIZE = 18
#: binary_slice without a stop mishandles sliced arrays (pyarrow 20), so slices always get one.
_NO_STOP = (1 << 31) - 1
_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))


def join_lines(values: pa.Array) -> pa.Buffer:
    """``values`` (binary, no nulls) joined by newlines into one buffer, for ``pyarrow.json``."""
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values), b"\n")
    buffer: pa.Buffer = joined[0].as_buffer()
    return buffer


def header(upstream_id: bytes, epic: int, action: int, *, flip: bool = False) -> bytes:
    """The 18 header bytes of one message."""
    if len(upstream_id) != 4:
        raise ValueError(f"expected a 4-byte upstream id, found {upstream_id!r}")
    return MAGIC + upstream_id + struct.pack(">q", epic) + bytes([1 if flip else 0, action])


def _needs_escaping(strings: pa.Array) -> bool:
    """Whether any value holds a quote, a backslash or a control character (one NumPy pass)."""
    if len(strings) == 0:
        return False
    offsets = np.frombuffer(strings.buffers()[1], np.int32)[strings.offset : strings.offset + len(strings) + 1]
    data = strings.buffers()[2]
    if data is None or offsets[-1] == offsets[0]:
        return False
    used = np.frombuffer(data, np.uint8)[offsets[0] : offsets[-1]]
    return bool(np.count_nonzero((used < 0x20) | (used == 0x22) | (used == 0x5C)))


def _quoted(strings: pa.Array) -> pa.Array:
    if not _needs_escaping(strings):  # the usual case: five replace passes saved
        return pc.binary_join_element_wise('"', strings, '"', "")
    for old, new in _ESCAPES:
        strings = pc.replace_substring(strings, old, new)
    if pc.any(pc.match_substring_regex(strings, "[\\x00-\\x1f]")).as_py():
        # Rare: the remaining control characters, one kernel pass each.
        for code in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)):
            strings = pc.replace_substring(strings, chr(code), f"\\u{code:04x}")
    return pc.binary_join_element_wise('"', strings, '"', "")


def _json_values(column: pa.Array) -> pa.Array:
    """One JSON literal per value (``null`` for nulls).

    Raises:
        UnsupportedColumnTypeError: a type :func:`check_log_schema` refuses.
    """
    kind = column.type
    if pa.types.is_boolean(kind):
        text = pc.if_else(column, "true", "false")
    elif pa.types.is_integer(kind) or pa.types.is_decimal(kind):
        text = pc.cast(column, pa.string())
    elif pa.types.is_floating(kind):
        # JSON has no literal for NaN and the infinities; null would be a wrong value. They go
        # as NaN, Infinity and -Infinity, which pyarrow's and Python's JSON readers take (and
        # Jackson with ALLOW_NON_NUMERIC_NUMBERS).
        infinite = pc.if_else(pc.greater(column, 0), "Infinity", "-Infinity")
        text = pc.if_else(pc.is_nan(column), "NaN", pc.if_else(pc.is_inf(column), infinite, pc.cast(column, pa.string())))
    elif (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_date(kind)
        or pa.types.is_timestamp(kind)
        or pa.types.is_time(kind)
    ):
        text = _quoted(pc.cast(column, pa.string()))
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        # The elements' literals, joined per list: flatten skips null lists, whose length counts 0.
        elements = _json_values(pc.list_flatten(column))
        lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False)
        offsets = np.zeros(len(column) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        joined = pc.binary_join(pa.LargeListArray.from_arrays(pa.array(offsets), elements), ",")
        text = pc.if_else(pc.is_valid(column), pc.binary_join_element_wise("[", joined, "]", ""), pa.scalar(None, pa.string()))
    elif pa.types.is_struct(kind):
        parts: list[pa.Array | str] = []
        for index, field in enumerate(kind):
            parts += [("{" if index == 0 else ",") + _quoted(pa.array([field.name]))[0].as_py() + ":"]
            parts.append(_json_values(pc.struct_field(column, [index])))
        parts.append("}" if kind.num_fields else "{}")
        whole = pc.binary_join_element_wise(*parts, "")
        text = pc.if_else(pc.is_valid(column), whole, pa.scalar(None, pa.string()))
    else:
        raise UnsupportedColumnTypeError(f"LogStore JSON: {_REFUSED}, found {kind}")
    return pc.fill_null(text, "null")


def check_log_schema(schema: pa.Schema, *, table: str) -> None:
    """Raise if a column of ``schema`` cannot travel in the LogStore's ``net1`` JSON rows.

    Raises:
        UnsupportedColumnTypeError: naming the table, the column and its type.
    """
    for field in schema:
        if not _carried(field.type):
            raise UnsupportedColumnTypeError(
                f"table {table}: column {field.name!r}: the LogStore (log-store.enabled) carries {_REFUSED[len('expected ') :]}"
                f", found {field.type}"
            )


_REFUSED = (
    "expected booleans, numbers, decimals, strings, dates, times and timestamps, and lists and structs of them "
    "(no binary, fixed, uuid or map)"
)


def _carried(kind: pa.DataType) -> bool:
    t = pa.types
    if t.is_list(kind) or t.is_large_list(kind):
        return _carried(kind.value_type)
    if t.is_struct(kind):
        return all(_carried(f.type) for f in kind)
    if isinstance(kind, pa.BaseExtensionType):
        return False
    checks = (t.is_boolean, t.is_integer, t.is_floating, t.is_decimal, t.is_string, t.is_large_string, t.is_date)
    return any(bool(check(kind)) for check in (*checks, t.is_timestamp, t.is_time))


def encode_rows(rows: pa.Table, actions: npt.NDArray[np.int8], *, upstream_id: bytes, epic: int) -> pa.Array:
    """``net1`` messages (a binary array) for ``rows`` (table columns only) and their action bytes."""
    if rows.num_rows != len(actions):
        raise ValueError(f"expected one action per row ({rows.num_rows}), found {len(actions)}")
    if rows.num_rows == 0:
        return pa.array([], pa.binary())
    headers = pa.array([header(upstream_id, epic, code) for code in range(len(ACTION_NAMES))], pa.binary())
    parts: list[pa.Array | str] = [pc.take(headers, pa.array(actions.astype(np.int32)))]
    for index, name in enumerate(rows.column_names):
        key = ("{" if index == 0 else ",") + _quoted(pa.array([name]))[0].as_py() + ":"
        parts += [key, _json_values(rows.column(name).combine_chunks())]
    parts.append("}" if rows.num_columns else "{}")
    parts = [pc.cast(p, pa.binary()) if isinstance(p, pa.Array) else p.encode() for p in parts]
    return pc.binary_join_element_wise(*parts, b"")


def _json_type(kind: pa.DataType) -> pa.DataType:
    """What pyarrow's JSON reader parses a ``kind`` value as: dates, times and timestamps come as
    strings, and the reader takes no large lists; a cast makes ``kind`` of it."""
    if pa.types.is_date(kind) or pa.types.is_timestamp(kind) or pa.types.is_time(kind):
        return pa.string()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return pa.list_(kind.value_field.with_type(_json_type(kind.value_type)))
    if pa.types.is_struct(kind):
        return pa.struct([f.with_type(_json_type(f.type)) for f in kind])
    return kind


def _json_schema(schema: pa.Schema) -> pa.Schema:
    """What pyarrow's JSON reader can parse directly (:func:`_json_type` per column)."""
    return pa.schema([pa.field(f.name, _json_type(f.type)) for f in schema])


def decode_messages(values: pa.Array, schema: pa.Schema) -> pa.Table:
    """Decode ``net1`` messages into ``schema`` columns plus ``_change_action``, ``_upstream_id``, ``_epic``.

    Raises:
        ValueError: a message does not start with the ``net1`` magic, or is a flip marker.
    """
    values = pc.cast(values, pa.binary())
    if len(values) == 0:
        empty = pa.Table.from_batches([], schema)
        return (
            empty.append_column("_change_action", pa.array([], pa.string()))
            .append_column("_upstream_id", pa.array([], pa.string()))
            .append_column("_epic", pa.array([], pa.int64()))
        )
    magic = pc.binary_slice(values, 0, 4)
    if not pc.all(pc.equal(magic, pa.scalar(MAGIC))).as_py():
        raise ValueError(f"LogStore message: expected the {MAGIC!r} version header, found another")
    head = pc.cast(pc.binary_slice(values, 4, HEADER_SIZE), pa.binary(HEADER_SIZE - 4))
    if head.null_count:
        raise ValueError(f"LogStore message: expected {HEADER_SIZE} header bytes, found a shorter message")
    start = head.offset * (HEADER_SIZE - 4)
    raw = np.frombuffer(head.buffers()[1], dtype=np.uint8)[start : start + len(head) * (HEADER_SIZE - 4)].reshape(-1, 14)
    if raw[:, 12].any():
        raise ValueError("LogStore message: expected data messages, found a flip marker")
    epic = raw[:, 4:12].copy().view(">i8").ravel().astype(np.int64)
    upstream = pc.cast(pc.binary_slice(values, 4, 8), pa.string())
    lines = join_lines(pc.binary_slice(values, HEADER_SIZE, _NO_STOP))
    json_schema = _json_schema(schema)
    options = pj.ParseOptions(explicit_schema=json_schema, unexpected_field_behavior="ignore")
    data = pj.read_json(
        pa.BufferReader(lines), parse_options=options, read_options=pj.ReadOptions(block_size=max(1 << 20, lines.size + 1))
    )
    if data.num_rows != len(values):
        raise ValueError(f"LogStore message: expected {len(values)} JSON rows, found {data.num_rows}")
    columns = [data.column(f.name).cast(f.type) for f in schema]
    actions = action_names(raw[:, 13])
    return pa.Table.from_arrays(
        [*columns, actions, upstream, pa.array(epic)],
        names=[*schema.names, "_change_action", "_upstream_id", "_epic"],
    )
