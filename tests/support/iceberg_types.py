"""Every Iceberg v2 type as Arrow spells it, with hypothesis strategies for schemas and values.

:data:`PRIMITIVES` and :data:`NESTED` are the types a table reads back as they were written;
:data:`WIDENED` the Arrow types a table takes and reads back as another (same values).
:func:`values` draws values of a type with nulls at every level; :func:`canonical` makes a
read value comparable with a written one (NaN equal to NaN, a map as its pairs, a uuid as bytes).
"""

from __future__ import annotations

import datetime
import decimal
import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

__all__ = [
    "KEY_TYPES",
    "NESTED",
    "PRIMITIVES",
    "WIDENED",
    "arrow_array",
    "arrow_table",
    "canonical",
    "column_types",
    "values",
]

_STRUCT = pa.struct(
    [
        pa.field("a", pa.int32()),
        pa.field("b", pa.large_list(pa.field("element", pa.large_string()))),
        pa.field("c", pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.decimal128(9, 3))])),
    ]
)

#: One Arrow type per Iceberg v2 primitive (decimals at the precisions where Parquet changes
#: its physical type), as a table reads it back.
PRIMITIVES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "decimal_1_0": pa.decimal128(1, 0),
    "decimal_9_2": pa.decimal128(9, 2),
    "decimal_10_0": pa.decimal128(10, 0),
    "decimal_18_6": pa.decimal128(18, 6),
    "decimal_19_4": pa.decimal128(19, 4),
    "decimal_38_10": pa.decimal128(38, 10),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
    "string": pa.large_string(),
    "uuid": pa.uuid(),
    "fixed": pa.binary(3),
    "binary": pa.large_binary(),
}


def _list(element: pa.DataType) -> pa.DataType:
    return pa.large_list(pa.field("element", element))


def _map(key: pa.DataType, value: pa.DataType) -> pa.DataType:
    return pa.map_(pa.field("key", key, nullable=False), pa.field("value", value))


#: Nested types, nested in each other.
NESTED: dict[str, pa.DataType] = {
    "list_int": _list(pa.int32()),
    "list_list_string": _list(_list(pa.large_string())),
    "struct": _STRUCT,
    "map_string_long": _map(pa.large_string(), pa.int64()),
    "map_int_struct": _map(pa.int32(), _STRUCT),
    "list_map_struct": _list(_map(pa.large_string(), _STRUCT)),
    "list_decimal": _list(pa.decimal128(20, 5)),
    "struct_of_times": pa.struct(
        [pa.field("d", pa.date32()), pa.field("t", pa.time64("us")), pa.field("ts", pa.timestamp("us", tz="UTC"))]
    ),
}

#: Arrow types a table takes and reads back as another, every value kept: written, read.
WIDENED: dict[str, tuple[pa.DataType, pa.DataType]] = {
    "int8": (pa.int8(), pa.int32()),
    "int16": (pa.int16(), pa.int32()),
    "uint8": (pa.uint8(), pa.int32()),
    "uint16": (pa.uint16(), pa.int32()),
    "uint32": (pa.uint32(), pa.int64()),
    "timestamp_ms": (pa.timestamp("ms"), pa.timestamp("us")),
    "time_ms": (pa.time32("ms"), pa.time64("us")),
    "utf8": (pa.string(), pa.large_string()),
    "dictionary": (pa.dictionary(pa.int32(), pa.string()), pa.large_string()),
    "list": (pa.list_(pa.int32()), _list(pa.int32())),
    "decimal256": (pa.decimal256(20, 2), pa.decimal128(20, 2)),
}

#: Types a primary-key column may take (mixed_iceberg.schema.KEY_TYPES), as Arrow writes them.
KEY_TYPES: dict[str, pa.DataType] = {
    "int": pa.int32(),
    "long": pa.int64(),
    "string": pa.large_string(),
    "decimal": pa.decimal128(12, 3),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
    "fixed": pa.binary(4),
    "binary": pa.large_binary(),
}

_UTC = datetime.UTC
# pyarrow's time and timestamp conversions take every microsecond of Python's range.
_DATETIMES = st.datetimes(min_value=datetime.datetime(1, 1, 1), max_value=datetime.datetime(9999, 12, 31, 23, 59, 59))


def _decimals(kind: pa.Decimal128Type) -> st.SearchStrategy[decimal.Decimal]:
    # Unscaled integers, scaled exactly: Python's default context (and hypothesis's decimals,
    # which use it) rounds at 28 digits, so 10^28 - 1e-10 becomes 10^28 there, past precision 38.
    exact = decimal.Context(prec=kind.precision + 2)
    unscaled = st.integers(-(10**kind.precision) + 1, 10**kind.precision - 1)
    return unscaled.map(lambda i: decimal.Decimal(i).scaleb(-kind.scale, context=exact))


def _integers(kind: pa.DataType) -> st.SearchStrategy[int]:
    bits = kind.bit_width
    if pa.types.is_unsigned_integer(kind):
        return st.integers(0, 2**bits - 1)
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def _primitive(kind: pa.DataType) -> st.SearchStrategy[Any]:
    t = pa.types
    if isinstance(kind, pa.BaseExtensionType):  # arrow.uuid: its storage takes 16 bytes
        return st.uuids().map(lambda u: u.bytes)
    if t.is_dictionary(kind):
        return _primitive(kind.value_type)
    if t.is_boolean(kind):
        return st.booleans()
    if t.is_integer(kind):
        return _integers(kind)
    if t.is_float32(kind):
        return st.floats(width=32)
    if t.is_floating(kind):
        return st.floats()
    if t.is_decimal(kind):
        return _decimals(kind)
    if t.is_date(kind):
        return st.dates()
    if t.is_time(kind):
        times = st.times()
        return times.map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000)) if kind.unit in ("s", "ms") else times
    if t.is_timestamp(kind):
        stamps = (
            _DATETIMES.map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000)) if kind.unit == "ms" else _DATETIMES
        )
        return stamps.map(lambda v: v.replace(tzinfo=_UTC)) if kind.tz else stamps
    if t.is_string(kind) or t.is_large_string(kind):
        return st.text(max_size=8)
    if t.is_fixed_size_binary(kind):
        return st.binary(min_size=kind.byte_width, max_size=kind.byte_width)
    if t.is_binary(kind) or t.is_large_binary(kind):
        return st.binary(max_size=8)
    raise AssertionError(f"no strategy for {kind}")


def values(kind: pa.DataType, *, nullable: bool = True) -> st.SearchStrategy[Any]:
    """Values of ``kind`` that ``pa.array(..., type=kind)`` takes, with nulls at every level."""
    t = pa.types
    if t.is_list(kind) or t.is_large_list(kind):
        drawn: st.SearchStrategy[Any] = st.lists(values(kind.value_type, nullable=kind.value_field.nullable), max_size=3)
    elif t.is_map(kind):
        drawn = st.dictionaries(
            values(kind.key_type, nullable=False), values(kind.item_type, nullable=kind.item_field.nullable), max_size=3
        ).map(lambda d: list(d.items()))
    elif t.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        drawn = st.fixed_dictionaries({f.name: values(f.type, nullable=f.nullable) for f in fields})
    else:
        drawn = _primitive(kind)
    return st.one_of(st.none(), drawn) if nullable else drawn


def column_types() -> st.SearchStrategy[pa.DataType]:
    """Any Iceberg v2 type: a primitive, or lists, maps and structs of each other (depth <= 3)."""
    leaves = st.sampled_from(list(PRIMITIVES.values()))
    keys = st.sampled_from([pa.int32(), pa.int64(), pa.large_string(), pa.date32(), pa.decimal128(9, 2)])

    def nest(children: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[pa.DataType]:
        struct_fields = st.lists(children, min_size=1, max_size=3).map(
            lambda kinds: pa.struct([pa.field(f"f{i}", k) for i, k in enumerate(kinds)])
        )
        return st.one_of(children.map(_list), st.tuples(keys, children).map(lambda kv: _map(*kv)), struct_fields)

    return st.recursive(leaves, nest, max_leaves=4)


def _storage(kind: pa.DataType) -> pa.DataType:
    """``kind`` with every extension type (uuid) in it replaced by its storage type."""
    t = pa.types
    if isinstance(kind, pa.BaseExtensionType):
        return kind.storage_type
    if t.is_list(kind) or t.is_large_list(kind):
        field = kind.value_field.with_type(_storage(kind.value_type))
        return pa.large_list(field) if t.is_large_list(kind) else pa.list_(field)
    if t.is_map(kind):
        return pa.map_(kind.key_field.with_type(_storage(kind.key_type)), kind.item_field.with_type(_storage(kind.item_type)))
    if t.is_struct(kind):
        return pa.struct([kind.field(i).with_type(_storage(kind.field(i).type)) for i in range(kind.num_fields)])
    return kind


def arrow_array(items: Sequence[Any], kind: pa.DataType) -> pa.Array:
    """``pa.array(items, type=kind)``, also where a uuid sits inside a list, map or struct
    (pyarrow 20 builds extension types from Python values at the top level only)."""
    storage = _storage(kind)
    built = pa.array(items, type=storage)
    return built if storage == kind else built.cast(kind)


def arrow_table(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """``pa.Table.from_pylist(rows, schema)`` through :func:`arrow_array` (a missing key is null)."""
    columns = [arrow_array([row.get(f.name) for row in rows], f.type) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def canonical(value: Any) -> Any:
    """``value`` (as ``to_pylist`` gives it, or as it was written) in a form ``==`` compares
    exactly: NaN as a marker, a uuid as its bytes, a map as its pairs, a struct's fields by name."""
    if isinstance(value, float) and math.isnan(value):
        return ("NaN",)
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, Mapping):  # a struct's fields by name
        return tuple(sorted((k, canonical(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(canonical(v) for v in value)
    return value
