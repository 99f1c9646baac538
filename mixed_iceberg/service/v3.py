"""Format-version 3 table metadata, which pyiceberg 0.12 reads but will not write.

pyiceberg's ``TableMetadataV3.model_dump_json`` raises ("Writing V3 is not yet supported",
apache/iceberg-python#1551) because pyiceberg cannot yet *produce* v3 data (row lineage,
deletion vectors). The REST server only stores what a v3-capable client (Iceberg Java, Spark)
committed, so it writes the same JSON through pydantic's ``model_dump``. A v3 table always
carries ``next-row-id`` (Java's parser requires it): 0 until a snapshot assigns row ids.
``upgrade-format-version`` to 3 is applied here too (pyiceberg's stops at 2), and column
defaults (``initial-default``, ``write-default``, v3) survive a create, where pyiceberg's
fresh-id assignment drops them.
"""

from __future__ import annotations

import json

from pyiceberg.io import FileIO
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, TableMetadataV3
from pyiceberg.types import IcebergType, NestedField, StructType

__all__ = ["upgraded_to_v3", "with_column_defaults", "with_row_lineage", "write_v3_metadata"]


def with_row_lineage(metadata: TableMetadata) -> TableMetadata:
    """``metadata`` with ``next-row-id`` set when it is v3 and has none."""
    if metadata.format_version >= 3 and getattr(metadata, "next_row_id", 0) is None:
        return metadata.model_copy(update={"next_row_id": 0})
    return metadata


def write_v3_metadata(metadata: TableMetadata, io: FileIO, location: str) -> None:
    """Write v3 ``metadata`` to ``location`` (a new file; an existing one is an error)."""
    document = metadata.model_dump(mode="json", by_alias=True, exclude_none=True)
    with io.new_output(location).create(overwrite=False) as out:
        out.write(json.dumps(document).encode())


def upgraded_to_v3(metadata: TableMetadata) -> TableMetadata:
    """``metadata`` as format version 3 (pyiceberg's ``upgrade-format-version`` stops at 2):
    the same fields, ``next-row-id`` 0, as Iceberg Java's upgrade."""
    if metadata.format_version >= 3:
        return metadata
    fields = {name: getattr(metadata, name) for name in TableMetadataV3.model_fields if hasattr(metadata, name)}
    fields.update(format_version=3, next_row_id=0)
    upgraded: TableMetadata = TableMetadataV3.model_construct(**fields)
    return upgraded


def _with_defaults(original: IcebergType, fresh: IcebergType) -> IcebergType:
    if isinstance(original, StructType) and isinstance(fresh, StructType):
        return StructType(*(_field_with_defaults(o, f) for o, f in zip(original.fields, fresh.fields, strict=True)))
    return fresh


def _field_with_defaults(original: NestedField, fresh: NestedField) -> NestedField:
    return NestedField(
        field_id=fresh.field_id,
        name=fresh.name,
        field_type=_with_defaults(original.field_type, fresh.field_type),
        required=fresh.required,
        doc=fresh.doc,
        initial_default=original.initial_default,
        write_default=original.write_default,
    )


def with_column_defaults(requested: Schema, metadata: TableMetadata) -> TableMetadata:
    """``metadata`` whose current schema keeps the ``initial-default`` / ``write-default`` of the
    requested schema's columns (pyiceberg's fresh-id assignment drops them; Java keeps them)."""
    struct = requested.as_struct()
    if not any(f.initial_default is not None or f.write_default is not None for f in _struct_fields(struct)):
        return metadata
    fresh = metadata.schema()
    restored = _with_defaults(struct, fresh.as_struct())
    assert isinstance(restored, StructType)
    schema = Schema(*restored.fields, schema_id=fresh.schema_id, identifier_field_ids=fresh.identifier_field_ids)
    return metadata.model_copy(update={"schemas": [schema if s.schema_id == fresh.schema_id else s for s in metadata.schemas]})


def _struct_fields(struct: StructType) -> list[NestedField]:
    found = []
    for field in struct.fields:
        found.append(field)
        if isinstance(field.field_type, StructType):
            found += _struct_fields(field.field_type)
    return found
