"""When reading Parquet columns by name gives what reading them by Iceberg field id would.

A name-based read (one multi-threaded pyarrow dataset scan) is right for a file when each wanted
column either has, in the file, the current name, field id and type, or is absent from the file
under both its name and its id (it then reads as nulls, as by id). Whether that holds for every
file of a store follows from the store's schema history alone: files are written with one of its
schemas. Pure: Arrow schemas in, a yes or no out.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyiceberg.schema import Schema

from mixed_iceberg.schema import arrow_schema

__all__ = ["fits_by_name", "history_fits_by_name"]

_FIELD_ID = b"PARQUET:field_id"
_NORMAL = {pa.large_string(): pa.string(), pa.large_binary(): pa.binary()}


def _field_id(field: pa.Field) -> int | None:
    raw = (field.metadata or {}).get(_FIELD_ID)
    return int(raw) if raw is not None else None


def _shape(field: pa.Field) -> tuple[object, ...]:
    """Names, field ids and types of ``field`` and its children (large types as their small kin)."""
    kind = field.type
    if pa.types.is_struct(kind):
        return (field.name, _field_id(field), "struct", tuple(_shape(kind.field(i)) for i in range(kind.num_fields)))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return (field.name, _field_id(field), "list", _shape(kind.value_field))
    if pa.types.is_map(kind):
        return (field.name, _field_id(field), "map", _shape(kind.key_field), _shape(kind.item_field))
    return (field.name, _field_id(field), str(_NORMAL.get(kind, kind)))


def fits_by_name(physical: pa.Schema, expected: Sequence[pa.Field]) -> bool:
    """Whether reading the ``expected`` columns (Arrow fields with field ids) from a file of
    ``physical`` schema by name gives what reading them by id would."""
    by_name = {f.name: f for f in physical}
    ids = {_field_id(f) for f in physical}
    for want in expected:
        found = by_name.get(want.name)
        if found is None:
            if _field_id(want) in ids:  # renamed since: only by id
                return False
            continue  # absent under both: nulls either way
        if _shape(found) != _shape(want):
            return False
    return True


def history_fits_by_name(schemas: Sequence[Schema], expected: Sequence[pa.Field], extra: Sequence[pa.Field] = ()) -> bool:
    """Whether :func:`fits_by_name` holds for a file written with any of ``schemas`` (plus the
    ``extra`` columns every file has, such as ``_file_offset``)."""
    for schema in schemas:
        physical = arrow_schema(schema)
        for column in extra:
            physical = physical.append(column)
        if not fits_by_name(physical, expected):
            return False
    return True
