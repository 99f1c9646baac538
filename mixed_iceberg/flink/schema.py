"""A Flink schema checked against a Mixed-Iceberg table's, by column name and type.

The sink's rows travel as Flink's JSON (:mod:`mixed_iceberg.flink.sink`) and are read back with
the table's own types, so a Flink column must name a table column and carry a type that reads
as the table's without loss: the same kind, a narrower integer into a wider one, a float into a
double, a decimal of the table's scale and no more precision, a timestamp of at most
microseconds (``TIMESTAMP_LTZ`` for ``timestamptz``, ``TIMESTAMP`` for ``timestamp``). Table
columns the pipeline does not carry arrive as nulls; a key column must be there.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyflink.table import types as flink

from mixed_iceberg.exceptions import SchemaMismatchError

__all__ = ["arrow_type", "check_sink_schema"]

_INTEGERS = (pa.int8(), pa.int16(), pa.int32(), pa.int64())


def arrow_type(kind: flink.DataType) -> pa.DataType:
    """The Arrow type a Flink type's values read as: timestamps in microseconds, ``TIMESTAMP_LTZ``
    with the UTC zone, strings and bytes unbounded.

    Raises:
        SchemaMismatchError: a Flink type no table column can take (a raw or structured type).
    """
    simple: dict[type[flink.DataType], pa.DataType] = {
        flink.TinyIntType: pa.int8(),
        flink.SmallIntType: pa.int16(),
        flink.IntType: pa.int32(),
        flink.BigIntType: pa.int64(),
        flink.BooleanType: pa.bool_(),
        flink.FloatType: pa.float32(),
        flink.DoubleType: pa.float64(),
        flink.CharType: pa.string(),
        flink.VarCharType: pa.string(),
        flink.BinaryType: pa.binary(),
        flink.VarBinaryType: pa.binary(),
        flink.DateType: pa.date32(),
    }
    if type(kind) in simple:
        return simple[type(kind)]
    if isinstance(kind, flink.DecimalType):
        return pa.decimal128(kind.precision, kind.scale)
    if isinstance(kind, flink.TimeType):
        return pa.time64("us")
    if isinstance(kind, flink.LocalZonedTimestampType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(kind, flink.TimestampType):
        return pa.timestamp("us")
    if isinstance(kind, flink.ArrayType):
        return pa.list_(arrow_type(kind.element_type))
    if isinstance(kind, flink.MapType):
        return pa.map_(arrow_type(kind.key_type), arrow_type(kind.value_type))
    if isinstance(kind, flink.RowType):
        return pa.struct([pa.field(f.name, arrow_type(f.data_type)) for f in kind])
    raise SchemaMismatchError(f"expected a Flink type a table column can hold, found {kind}")


def _normal(kind: pa.DataType) -> pa.DataType:
    """``kind`` with the distinctions the JSON hop does not keep removed (string/large string,
    binary widths, timestamp units, nullability of nested fields)."""
    if pa.types.is_large_string(kind):
        return pa.string()
    if pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        return pa.binary()
    if pa.types.is_timestamp(kind):
        return pa.timestamp("us", tz="UTC" if kind.tz is not None else None)
    if pa.types.is_time(kind):
        return pa.time64("us")
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return pa.list_(_normal(kind.value_type))
    if pa.types.is_map(kind):
        return pa.map_(_normal(kind.key_type), _normal(kind.item_type))
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _normal(f.type)) for f in kind])
    return kind


def _fits(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether every value of ``source`` reads as ``target`` unchanged."""
    source, target = _normal(source), _normal(target)
    if source == target:
        return True
    if source in _INTEGERS and target in _INTEGERS:
        return _INTEGERS.index(source) <= _INTEGERS.index(target)
    if source == pa.float32() and target == pa.float64():
        return True
    if pa.types.is_decimal(source) and pa.types.is_decimal(target):
        return bool(source.scale == target.scale and source.precision <= target.precision)
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        fields = {f.name: f.type for f in target}
        return all(f.name in fields and _fits(f.type, fields[f.name]) for f in source)
    if pa.types.is_list(source) and pa.types.is_list(target):
        return _fits(source.value_type, target.value_type)
    return False


def check_sink_schema(
    names: Sequence[str], types: Sequence[flink.DataType], schema: pa.Schema, primary_key: Sequence[str], *, table: str
) -> None:
    """Raise unless the Flink columns ``names``/``types`` can be written into a table of
    ``schema`` and ``primary_key`` (module docstring).

    Raises:
        SchemaMismatchError: naming the table and the first column that does not fit, with both types.
    """
    columns = {field.name: field.type for field in schema}
    for name, kind in zip(names, types, strict=True):
        if name not in columns:
            raise SchemaMismatchError(f"{table}: Flink column {name!r} is not a table column; expected one of {list(columns)}")
        try:
            found = arrow_type(kind)
        except SchemaMismatchError as exc:
            raise SchemaMismatchError(f"{table}: column {name!r}: {exc}") from exc
        if not _fits(found, columns[name]):
            raise SchemaMismatchError(
                f"{table}: column {name!r}: expected a Flink type that reads as {columns[name]}, found {kind} ({found})"
            )
    missing = [key for key in primary_key if key not in names]
    if missing:
        raise SchemaMismatchError(f"{table}: expected the key column(s) {missing} in the Flink schema, found {list(names)}")
