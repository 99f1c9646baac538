"""Which Arrow types a table takes, and which batch types a column accepts. Pure: no I/O.

Iceberg v2 has fewer types than Arrow. At create, an Arrow type Iceberg lacks is mapped where
every value keeps its meaning exactly, and refused otherwise, naming the type to use instead:

==========================================  =================================================
Arrow                                       table column
==========================================  =================================================
int8, int16, uint8, uint16                  int
uint32                                      long (an int would overflow at 2^31)
float16                                     float
time32 (s, ms)                              time (microseconds)
timestamp (s, ms), with or without UTC      timestamp / timestamptz (microseconds)
decimal32, decimal64, decimal256 (p <= 38)  decimal(p, s)
dictionary<values=T>                        T
string, large_string, string_view           string (read back as large_string)
binary, large_binary, binary_view           binary (read back as large_binary)
list, large_list, fixed_size_list           list (read back as large_list)
uint64, timestamp[ns], time64[ns],          refused with UnsupportedColumnTypeError, which says
zones other than UTC, date64, decimal > 38, what to use (int64 or decimal(20, 0); timestamp('us');
null, duration, interval, views of lists    tz='UTC'; date32; ...)
==========================================  =================================================

A batch written to a table (change rows, ``bulk_load``) must have each column's type, or a
type whose values all fit it exactly: one of the representations above of the same Iceberg
type, or a widening Iceberg allows (int to long, float to double, decimal(p, s) to
decimal(p', s) with p' >= p, fixed(16) to uuid). Anything else (a string key for a long column,
an int64 for a string column, a uint32 for an int column) is refused with
:class:`~mixed_iceberg.exceptions.SchemaMismatchError` in Iceberg's type names: a value is
never converted silently. Struct fields are matched by name, as top-level columns are.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.types import (
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    StructType,
    UUIDType,
)

from mixed_iceberg._pyiceberg.schemas import to_iceberg_schema
from mixed_iceberg.exceptions import InvalidSchemaError, SchemaMismatchError, UnsupportedColumnTypeError

__all__ = ["conform_column", "creatable_schema", "empty_table", "iceberg_type", "type_name"]

_UTC = {"UTC", "Etc/UTC", "+00:00", "Z", "utc", "GMT", "Etc/GMT"}


def _refuse(kind: pa.DataType, use: str) -> UnsupportedColumnTypeError:
    return UnsupportedColumnTypeError(f"Iceberg v2 has no type that holds {kind} exactly; use {use}")


def _exact(kind: pa.DataType) -> pa.DataType:
    """``kind`` as an Arrow type pyiceberg converts to the Iceberg type that holds its values exactly.

    Raises:
        UnsupportedColumnTypeError: no Iceberg type holds every value of ``kind``.
    """
    t = pa.types
    if t.is_dictionary(kind):
        return _exact(kind.value_type)
    if t.is_uint8(kind) or t.is_uint16(kind):
        return pa.int32()
    if t.is_uint32(kind):
        return pa.int64()
    if t.is_uint64(kind):
        raise _refuse(kind, "int64 (values below 2^63) or decimal128(20, 0)")
    if t.is_timestamp(kind):
        if kind.unit == "ns":
            raise _refuse(kind, f"timestamp('us'{', tz=' + repr(kind.tz) if kind.tz else ''}) (Iceberg v2 keeps microseconds)")
        if kind.tz is not None and kind.tz not in _UTC:
            raise _refuse(kind, f"timestamp('{kind.unit}', tz='UTC') (timestamptz stores instants in UTC; convert the values)")
        return kind
    if t.is_time32(kind):
        return pa.time64("us")
    if t.is_time64(kind) and kind.unit == "ns":
        raise _refuse(kind, "time64('us') (Iceberg v2 keeps microseconds)")
    if t.is_date64(kind):
        raise _refuse(kind, "date32 (Iceberg dates are days)")
    if t.is_decimal(kind) and not t.is_decimal128(kind):
        if kind.precision > 38:
            raise _refuse(kind, "a decimal of precision 38 or less")
        return pa.decimal128(kind.precision, kind.scale)
    if t.is_null(kind):
        raise _refuse(kind, "a concrete type (a column of nulls still needs one, e.g. pa.string())")
    if t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind):
        return pa.large_list(kind.value_field.with_type(_exact(kind.value_type)))
    if t.is_map(kind):
        return pa.map_(kind.key_field.with_type(_exact(kind.key_type)), kind.item_field.with_type(_exact(kind.item_type)))
    if t.is_struct(kind):
        _check_unique([kind.field(i).name for i in range(kind.num_fields)], f"struct {kind}")
        return pa.struct([f.with_type(_exact(f.type)) for f in (kind.field(i) for i in range(kind.num_fields))])
    supported = (
        t.is_boolean(kind)
        or t.is_int32(kind)
        or t.is_int64(kind)
        or t.is_int8(kind)
        or t.is_int16(kind)
        or t.is_floating(kind)
        or t.is_decimal128(kind)
        or t.is_date32(kind)
        or t.is_time64(kind)
        or t.is_string(kind)
        or t.is_large_string(kind)
        or t.is_string_view(kind)
        or t.is_binary(kind)
        or t.is_large_binary(kind)
        or t.is_binary_view(kind)
        or t.is_fixed_size_binary(kind)
        or (isinstance(kind, pa.BaseExtensionType) and kind.extension_name == "arrow.uuid")
    )
    if not supported:
        raise UnsupportedColumnTypeError(
            f"Iceberg v2 has no type for {kind}; expected boolean, integers, floats, decimal, date, time, timestamp, "
            "string, binary, fixed, uuid, or a list, map or struct of them"
        )
    return kind


def empty_table(schema: pa.Schema) -> pa.Table:
    """``schema.empty_table()`` for every schema a table has: pyarrow 20's builds each column
    from an empty Python list, which a uuid inside a list, map or struct cannot take
    (``ArrowNotImplementedError: extension``)."""
    return pa.Table.from_arrays([pa.nulls(0, field.type) for field in schema], schema=schema)


def _check_unique(names: Sequence[str], where: str) -> None:
    seen: dict[str, str] = {}
    for name in names:
        if name.lower() in seen:
            raise InvalidSchemaError(
                f"{where}: expected distinct field names (case-insensitively, as Iceberg engines resolve them), "
                f"found {seen[name.lower()]!r} and {name!r}"
            )
        seen[name.lower()] = name


def creatable_schema(schema: pa.Schema, *, table: str) -> pa.Schema:
    """``schema`` with every type mapped to one Iceberg holds exactly (see the module docstring).

    Raises:
        InvalidSchemaError: two columns (or two fields of a struct) share a name.
        UnsupportedColumnTypeError: a column's type has no exact Iceberg counterpart, naming
            the column and the type to use instead.
    """
    where = f"table {table}" if table else "schema"
    _check_unique(schema.names, where)
    fields = []
    for field in schema:
        try:
            fields.append(field.with_type(_exact(field.type)))
        except UnsupportedColumnTypeError as exc:
            raise UnsupportedColumnTypeError(f"{where}: column {field.name!r}: {exc}") from exc
        except InvalidSchemaError as exc:
            raise InvalidSchemaError(f"{where}: column {field.name!r}: {exc}") from exc
    return pa.schema(fields, metadata=schema.metadata)


@functools.lru_cache(maxsize=256)
def iceberg_type(kind: pa.DataType) -> IcebergType:
    """The Iceberg type a table column of Arrow type ``kind`` gets (field ids are arbitrary).

    Raises:
        UnsupportedColumnTypeError: no Iceberg type holds every value of ``kind``.
    """
    return to_iceberg_schema(pa.schema([pa.field("c", _exact(kind))])).fields[0].field_type


def type_name(kind: IcebergType) -> str:
    """Iceberg's spelling of a type, nested ones included (``list<int>``, ``struct<a: int>``)."""
    if isinstance(kind, ListType):
        return f"list<{type_name(kind.element_type)}>"
    if isinstance(kind, MapType):
        return f"map<{type_name(kind.key_type)}, {type_name(kind.value_type)}>"
    if isinstance(kind, StructType):
        return "struct<" + ", ".join(f"{f.name}: {type_name(f.field_type)}" for f in kind.fields) + ">"
    return str(kind)


def _widens(found: IcebergType, expected: IcebergType) -> bool:
    """Whether every value of ``found`` is a value of ``expected``: the same type (field ids
    aside), or a widening Iceberg's schema evolution allows."""
    if isinstance(expected, StructType):
        if not isinstance(found, StructType):
            return False
        ours = {f.name: f.field_type for f in found.fields}
        return set(ours) == {f.name for f in expected.fields} and all(
            _widens(ours[f.name], f.field_type) for f in expected.fields
        )
    if isinstance(expected, ListType):
        return isinstance(found, ListType) and _widens(found.element_type, expected.element_type)
    if isinstance(expected, MapType):
        return (
            isinstance(found, MapType)
            and _widens(found.key_type, expected.key_type)
            and _widens(found.value_type, expected.value_type)
        )
    if found == expected:
        return True
    if isinstance(found, IntegerType):
        return isinstance(expected, LongType)
    if isinstance(found, FloatType):
        return isinstance(expected, DoubleType)
    if isinstance(found, DecimalType) and isinstance(expected, DecimalType):
        return found.scale == expected.scale and found.precision <= expected.precision
    if isinstance(found, FixedType):
        return isinstance(expected, UUIDType) and len(found) == 16
    return False


def conform_column(column: pa.ChunkedArray, target: pa.Field, *, table: str) -> pa.ChunkedArray:
    """``column`` as the table column ``target`` (its Arrow field), or why it cannot be.

    Raises:
        SchemaMismatchError: the column's type is not the table's, nor one whose values all fit
            it exactly (see the module docstring); or a required field holds nulls.
    """
    if column.type == target.type:
        _check_required(column, target, table)
        return column
    expected = iceberg_type(target.type)
    try:
        found = iceberg_type(column.type)
    except (UnsupportedColumnTypeError, InvalidSchemaError) as exc:
        raise SchemaMismatchError(f"{table}: column {target.name!r} expected type {type_name(expected)}, found {exc}") from exc
    if not _widens(found, expected):
        raise SchemaMismatchError(
            f"{table}: column {target.name!r} expected type {type_name(expected)}, found {type_name(found)} "
            f"(Arrow {column.type}); cast it first, where every value converts"
        )
    _check_required(column, target, table)
    try:
        column = pa.chunked_array([_cast(chunk, target.type) for chunk in column.chunks], type=target.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaMismatchError(
            f"{table}: column {target.name!r} expected values of type {type_name(expected)}, found {exc}"
        ) from exc
    return column


def _cast(array: pa.Array, target: pa.DataType) -> pa.Array:
    """``array`` cast to ``target``, struct fields matched by name (Arrow matches them by position)."""
    array = _by_name(array, target)
    if array.type == target:
        return array
    if isinstance(target, pa.BaseExtensionType) and not isinstance(array.type, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(target, array.cast(target.storage_type, safe=True))
    return array.cast(target, safe=True)


def _by_name(array: pa.Array, target: pa.DataType) -> pa.Array:
    """``array`` with the fields of every struct in it in ``target``'s order."""
    kind = array.type
    if pa.types.is_struct(kind) and pa.types.is_struct(target):
        names = [target.field(i).name for i in range(target.num_fields)]
        children = [_by_name(array.field(name), target.field(name).type) for name in names]
        if [kind.field(i).name for i in range(kind.num_fields)] == names and all(
            c is array.field(n) for c, n in zip(children, names, strict=True)
        ):
            return array
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, names=names, mask=mask)
    if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and _has_struct(target):
        values = _by_name(array.values, target.value_type)
        if values is array.values:
            return array
        mask = array.is_null() if array.null_count else None
        build = pa.LargeListArray if pa.types.is_large_list(kind) else pa.ListArray
        return build.from_arrays(array.offsets, values, mask=mask)
    if pa.types.is_map(kind) and _has_struct(target):
        entries = array.values  # keys and items of every map, as ``offsets`` index them
        keys, items = _by_name(entries.field(0), target.key_type), _by_name(entries.field(1), target.item_type)
        mask = array.is_null() if array.null_count else None
        return pa.MapArray.from_arrays(array.offsets, keys, items, mask=mask)
    return array


def _has_struct(kind: pa.DataType) -> bool:
    if pa.types.is_struct(kind):
        return True
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _has_struct(kind.value_type)
    if pa.types.is_map(kind):
        return _has_struct(kind.key_type) or _has_struct(kind.item_type)
    return False


def _check_required(column: pa.ChunkedArray, target: pa.Field, table: str) -> None:
    """Refuse nulls in required fields at every level (Parquet would write them as garbage)."""
    for chunk in column.chunks:
        where = _null_in_required(chunk, target, target.name)
        if where is not None:
            raise SchemaMismatchError(f"{table}: field {where!r} is required; expected no nulls, found some")


def _elements(array: pa.Array) -> pa.Array:
    """The elements of the lists (or entries of the maps) of ``array``, sliced or not."""
    start, end = (array.offsets[0].as_py(), array.offsets[-1].as_py()) if len(array) else (0, 0)
    return array.values.slice(start, end - start)


def _null_in_required(array: pa.Array, field: pa.Field, path: str) -> str | None:
    """The path of a required field of ``array`` (of ``field``'s type, or one that conforms to it:
    struct fields are found by name) that holds a null where its parent is valid."""
    if not field.nullable and array.null_count:
        return path
    kind = field.type
    if pa.types.is_struct(kind):
        valid = None
        for i in range(kind.num_fields):
            child = kind.field(i)
            values = array.field(child.name)
            if not child.nullable and values.null_count:
                valid = pc.is_valid(array) if valid is None else valid
                if np.asarray(pc.and_(valid, pc.is_null(values)).to_numpy(zero_copy_only=False)).any():
                    return f"{path}.{child.name}"
            found = _null_in_required(values, child.with_nullable(True), f"{path}.{child.name}")
            if found is not None:
                return found
    elif pa.types.is_large_list(kind) or pa.types.is_list(kind):
        # Not flatten(): pyarrow 20's cannot build a uuid nested in a list of lists.
        return _null_in_required(_elements(array), kind.value_field, f"{path}.element")
    elif pa.types.is_map(kind):
        entries = _elements(array)
        return _null_in_required(entries.field(0), kind.key_field, f"{path}.key") or _null_in_required(
            entries.field(1), kind.item_field, f"{path}.value"
        )
    return None
