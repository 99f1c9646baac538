"""``partition_by`` specs written as strings: ``"region"``, ``"day(ts)"``, ``"bucket(16, id)"``.

Every transform of the Iceberg spec: identity, ``bucket(N, col)``, ``truncate(W, col)``, year,
month, day, hour and ``void(col)``. Partition fields get the names Iceberg Java's
``PartitionSpec.Builder`` gives them (``col``, ``col_bucket``, ``col_trunc``, ``col_year``, ...,
``col_null``), so the partition paths are the ones Amoro writes for the same spec.
"""

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
    VoidTransform,
    YearTransform,
)

from mixed_iceberg.exceptions import ConfigError

__all__ = ["partition_spec"]

# Column names may be dotted (a struct's field) so that the refusal of nested sources can say so.
_CALL = re.compile(r"^\s*(\w+)\s*\(\s*(?:(\d+)\s*,\s*)?([\w.]+)\s*\)\s*$")
#: Iceberg Java refuses two of these over one source column ("Cannot add redundant partition").
_TIME = (YearTransform, MonthTransform, DayTransform, HourTransform)
#: transform -> (transform, suffix of the partition field name, as Iceberg Java's builder names it)
_UNARY: dict[str, tuple[Transform[Any, Any], str]] = {
    "identity": (IdentityTransform(), ""),
    "year": (YearTransform(), "_year"),
    "month": (MonthTransform(), "_month"),
    "day": (DayTransform(), "_day"),
    "hour": (HourTransform(), "_hour"),
    "void": (VoidTransform(), "_null"),
}


def _transform(text: str) -> tuple[str, Transform[Any, Any], str]:
    """(source column, transform, partition field name) for one spec string."""
    if re.fullmatch(r"\s*[\w.]+\s*", text):
        column = text.strip()
        return column, IdentityTransform(), column
    match = _CALL.match(text)
    if not match:
        raise ConfigError(f"partition spec {text!r}: expected 'col', 'day(col)' or 'bucket(16, col)'")
    name, width, column = match.group(1).lower(), match.group(2), match.group(3)
    if name in _UNARY and width is None:
        transform, suffix = _UNARY[name]
        return column, transform, f"{column}{suffix}"
    if name in ("bucket", "truncate") and width is not None:
        if int(width) < 1:
            # pyiceberg-core's bucket kernel panics on 0 (a BaseException), and truncate(0) is undefined
            raise ConfigError(f"partition spec {text!r}: expected a {name} width >= 1, found {width}")
        if name == "bucket":
            return column, BucketTransform(int(width)), f"{column}_bucket"
        return column, TruncateTransform(int(width)), f"{column}_trunc"
    raise ConfigError(
        f"partition spec {text!r}: unknown transform {name!r}; expected identity, year, month, day, hour, void, "
        "bucket(N, col) or truncate(W, col)"
    )


def partition_spec(partition_by: Sequence[str] | PartitionSpec | None, schema: Schema) -> PartitionSpec:
    """A PartitionSpec over ``schema`` from transform strings (or a ready spec)."""
    if partition_by is None:
        return PartitionSpec()
    if isinstance(partition_by, PartitionSpec):
        return partition_by
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    fields: list[PartitionField] = []
    for offset, text in enumerate(partition_by):
        column, transform, name = _transform(text)
        try:
            source = schema.find_field(column)
        except ValueError as exc:
            raise ConfigError(
                f"partition spec {text!r}: column {column!r} not in schema {[f.name for f in schema.fields]}"
            ) from exc
        if column not in {f.name for f in schema.fields}:
            raise ConfigError(
                f"partition spec {text!r}: {column!r} is a nested field; expected a top-level column of "
                f"{[f.name for f in schema.fields]} (nested fields are payload only)"
            )
        if not transform.can_transform(source.field_type):
            raise ConfigError(f"partition spec {text!r}: {transform} does not apply to {column!r} of type {source.field_type}")
        # Iceberg Java's rules: partition names are unique, only an identity field may share its source's name,
        # and a source column takes at most one time transform.
        if name in {f.name for f in fields}:
            raise ConfigError(f"partition spec {text!r}: expected a new partition field name, found {name!r} twice")
        if name != column and name in {f.name for f in schema.fields}:
            raise ConfigError(f"partition spec {text!r}: partition field name {name!r} is also a column of the schema")
        if isinstance(transform, _TIME) and any(
            f.source_id == source.field_id and isinstance(f.transform, _TIME) for f in fields
        ):
            raise ConfigError(f"partition spec {text!r}: expected one time transform of {column!r}, found a second (redundant)")
        fields.append(
            PartitionField(source_id=source.field_id, field_id=PARTITION_FIELD_ID_START + offset, transform=transform, name=name)
        )
    return PartitionSpec(*fields)
