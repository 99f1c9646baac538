"""Null lists and maps of structs read back as null, not as empty (pyiceberg's projection).

pyiceberg 0.12's ``ArrowProjectionVisitor`` rebuilds a list whose elements are structs, and a
map whose values are structs, from their offsets and children alone, without the parent's
validity: a null ``list<struct>`` or ``map<k, struct>`` comes back as an empty one from every
read that projects through it (pyiceberg's ``ArrowScan``, and our reads of files written under
another schema). The Parquet file holds the null; only the read loses it. :func:`apply` wraps
the visitor's ``list`` and ``map`` so that the rebuilt array takes the parent's nulls.
Upstream: apache/iceberg-python#3833, PR #3834 (open).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyiceberg.io.pyarrow import ArrowProjectionVisitor

__all__ = ["apply", "with_parent_nulls"]

_APPLIED = "__mixed_iceberg_nested_nulls__"


def with_parent_nulls(result: pa.Array | None, parent: pa.Array | None) -> pa.Array | None:
    """``result`` (a list or map rebuilt from ``parent``) with ``parent``'s nulls."""
    if result is None or parent is None or not parent.null_count or result.null_count == parent.null_count:
        return result
    mask = parent.is_null()
    if isinstance(result, pa.MapArray):
        entries = result.values  # every entry, as the offsets index them
        return pa.MapArray.from_arrays(result.offsets, entries.field(0), entries.field(1), type=result.type, mask=mask)
    if isinstance(result, pa.LargeListArray | pa.ListArray):
        return type(result).from_arrays(result.offsets, result.values, type=result.type, mask=mask)
    return result


def apply() -> None:
    """Wrap ``ArrowProjectionVisitor.list`` and ``.map`` (idempotent)."""
    if getattr(ArrowProjectionVisitor, _APPLIED, False):
        return
    original_list = ArrowProjectionVisitor.list
    original_map = ArrowProjectionVisitor.map

    def list_(self: ArrowProjectionVisitor, list_type: Any, list_array: pa.Array | None, value_array: pa.Array | None) -> Any:
        return with_parent_nulls(original_list(self, list_type, list_array, value_array), list_array)

    def map_(
        self: ArrowProjectionVisitor, map_type: Any, map_array: pa.Array | None, key: pa.Array | None, value: pa.Array | None
    ) -> Any:
        return with_parent_nulls(original_map(self, map_type, map_array, key, value), map_array)

    ArrowProjectionVisitor.list = list_  # type: ignore[method-assign]
    ArrowProjectionVisitor.map = map_  # type: ignore[method-assign,assignment]
    setattr(ArrowProjectionVisitor, _APPLIED, True)
