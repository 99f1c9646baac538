"""``partition_by`` specs written as strings: ``"region"``, ``"day(ts)"``, ``"bucket(16, id)"``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pyiceberg.partitioning import PARTITION_FIELD_ID_START, PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
)

from mixed_iceberg.exceptions import ConfigError

__all__ = ["partition_spec"]

_CALL = re.compile(r"^\s*(\w+)\s*\(\s*(?:(\d+)\s*,\s*)?(\w+)\s*\)\s*$")
_UNARY: dict[str, Transform[Any, Any]] = {
    "identity": IdentityTransform(),
    "year": YearTransform(),
    "month": MonthTransform(),
    "day": DayTransform(),
    "hour": HourTransform(),
}


def _transform(text: str) -> tuple[str, Transform[Any, Any], str]:
    """(source column, transform, partition field name) for one spec string."""
    if re.fullmatch(r"\s*\w+\s*", text):
        column = text.strip()
        return column, IdentityTransform(), column
    match = _CALL.match(text)
    if not match:
        raise ConfigError(f"partition spec {text!r}: expected 'col', 'day(col)' or 'bucket(16, col)'")
    name, width, column = match.group(1).lower(), match.group(2), match.group(3)
    if name in _UNARY and width is None:
        suffix = "" if name == "identity" else f"_{name}"
        return column, _UNARY[name], f"{column}{suffix}"
    if name in ("bucket", "truncate") and width is not None:
        transform: Transform[Any, Any] = BucketTransform(int(width)) if name == "bucket" else TruncateTransform(int(width))
        return column, transform, f"{column}_{name}"
    raise ConfigError(
        f"partition spec {text!r}: unknown transform {name!r}; expected identity, year, month, day, hour, bucket(N, col) or truncate(N, col)"
    )


def partition_spec(partition_by: Sequence[str] | PartitionSpec | None, schema: Schema) -> PartitionSpec:
    """A PartitionSpec over ``schema`` from transform strings (or a ready spec)."""
    if partition_by is None:
        return PartitionSpec()
    if isinstance(partition_by, PartitionSpec):
        return partition_by
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    fields = []
    for offset, text in enumerate(partition_by):
        column, transform, name = _transform(text)
        try:
            source = schema.find_field(column)
        except ValueError as exc:
            raise ConfigError(f"partition spec {text!r}: column {column!r} not in schema {schema.column_names}") from exc
        fields.append(
            PartitionField(source_id=source.field_id, field_id=PARTITION_FIELD_ID_START + offset, transform=transform, name=name)
        )
    return PartitionSpec(*fields)
