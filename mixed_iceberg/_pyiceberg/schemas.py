"""An Iceberg schema from an Arrow one, as pyiceberg's catalogs convert it (private ``Catalog._convert_schema_if_needed``)."""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.schema import Schema

__all__ = ["to_iceberg_schema"]


def to_iceberg_schema(schema: Schema | pa.Schema) -> Schema:
    """``schema`` as an Iceberg schema (an Arrow schema's fields get ids in order); an Iceberg one as is."""
    converted: Schema = Catalog._convert_schema_if_needed(schema)
    return converted
