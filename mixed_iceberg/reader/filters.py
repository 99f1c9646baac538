"""Split a row filter into what may be pushed where. Pure.

Data rows (base and insert) may be filtered by the whole predicate before the merge: a data
row never removes another row. Delete rows may only be filtered by conjuncts over key
columns; filtering them by values could let an old version resurface.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce

from pyiceberg.expressions import AlwaysTrue, And, BooleanExpression
from pyiceberg.expressions.visitors import bind, extract_field_ids
from pyiceberg.schema import Schema
from pyiceberg.table import _parse_row_filter

__all__ = ["SplitFilter", "split_filter"]


class SplitFilter:
    """``full`` for data rows and partition pruning; ``keys`` for delete rows."""

    __slots__ = ("full", "keys")

    def __init__(self, full: BooleanExpression, keys: BooleanExpression) -> None:
        self.full = full
        self.keys = keys


def _conjuncts(expr: BooleanExpression) -> list[BooleanExpression]:
    if isinstance(expr, And):
        return [*_conjuncts(expr.left), *_conjuncts(expr.right)]
    return [expr]


def split_filter(
    row_filter: str | BooleanExpression | None, schema: Schema, primary_key: Sequence[str], case_sensitive: bool = True
) -> SplitFilter:
    """Parse ``row_filter`` and pick its key-only conjuncts."""
    full = _parse_row_filter(row_filter) if row_filter is not None else AlwaysTrue()
    key_ids = {schema.find_field(name, case_sensitive).field_id for name in primary_key}
    pushed = [c for c in _conjuncts(full) if extract_field_ids(bind(schema, c, case_sensitive)) <= key_ids]
    keys = reduce(And, pushed) if pushed else AlwaysTrue()
    return SplitFilter(full, keys)
