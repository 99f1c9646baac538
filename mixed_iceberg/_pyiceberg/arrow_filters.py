"""Iceberg row filters as pyarrow expressions, uuid columns included.

pyiceberg's ``expression_to_pyarrow`` compares a uuid column (Arrow's ``arrow.uuid`` extension
type) with a uuid scalar, and Arrow has no comparison kernel for extension types: any filter
that compares a uuid (``u = '...'``, ``u IN (...)``, ``u < '...'``) failed with
``ArrowNotImplementedError``. A uuid's order and equality are those of its 16 big-endian bytes
(Iceberg's), so :func:`arrow_filter` compares the column's storage with the literals' bytes.
It subclasses pyiceberg's private ``_ConvertToArrowExpression``; every other predicate is
pyiceberg's. Upstream: none known.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import BooleanExpression
from pyiceberg.expressions.literals import Literal
from pyiceberg.expressions.visitors import visit as boolean_expression_visit
from pyiceberg.io.pyarrow import _ConvertToArrowExpression
from pyiceberg.schema import Schema
from pyiceberg.types import UUIDType

__all__ = ["arrow_filter"]

_STORAGE = pa.binary(16)


def _bytes(value: Any) -> bytes:
    return value.bytes if isinstance(value, uuid.UUID) else bytes(value)


class _WithUuids(_ConvertToArrowExpression):
    def _uuid(self, term: Any) -> bool:
        return isinstance(term.ref().field.field_type, UUIDType)

    def _storage(self, term: Any) -> pc.Expression:
        return pc.field(self._get_field_name(term)).cast(_STORAGE)

    def _compare(
        self, term: Any, literal: Literal[Any], op: Callable[[pc.Expression, pa.Scalar], pc.Expression], fallback: Any
    ) -> pc.Expression:
        if not self._uuid(term):
            return fallback(term, literal)
        return op(self._storage(term), pa.scalar(_bytes(literal.value), _STORAGE))

    def visit_in(self, term: Any, literals: set[Any]) -> pc.Expression:
        if not self._uuid(term):
            return super().visit_in(term, literals)
        return self._storage(term).isin(pa.array([_bytes(v) for v in literals], _STORAGE))

    def visit_not_in(self, term: Any, literals: set[Any]) -> pc.Expression:
        if not self._uuid(term):
            return super().visit_not_in(term, literals)
        return ~self._storage(term).isin(pa.array([_bytes(v) for v in literals], _STORAGE))

    def visit_equal(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return self._compare(term, literal, lambda a, b: a == b, super().visit_equal)

    def visit_not_equal(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return self._compare(term, literal, lambda a, b: a != b, super().visit_not_equal)

    def visit_greater_than_or_equal(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return self._compare(term, literal, lambda a, b: a >= b, super().visit_greater_than_or_equal)

    def visit_greater_than(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return self._compare(term, literal, lambda a, b: a > b, super().visit_greater_than)

    def visit_less_than(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return self._compare(term, literal, lambda a, b: a < b, super().visit_less_than)

    def visit_less_than_or_equal(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return self._compare(term, literal, lambda a, b: a <= b, super().visit_less_than_or_equal)


def arrow_filter(expr: BooleanExpression, schema: Schema) -> pc.Expression:
    """``expr`` (bound to ``schema``) as a pyarrow expression, as pyiceberg's
    ``expression_to_pyarrow`` gives it but for comparisons of uuid columns, which compare bytes."""
    result: pc.Expression = boolean_expression_visit(expr, _WithUuids(schema))
    return result
