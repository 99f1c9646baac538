"""Parse a row filter at the door, and split it into what may be pushed where. Pure.

:func:`parse_filter` turns a filter (text or expression) into an unbound expression over the
schema's own column names: a filter that does not parse, names a column the table lacks, or
compares a column with a value of another type is refused there with an
:class:`~mixed_iceberg.exceptions.InvalidFilterError`, and a case-insensitive filter comes out
spelled as the schema spells its columns, so every later bind may be case-sensitive.

Data rows (base and insert) may be filtered by the whole predicate before the merge: a data
row never removes another row. Delete rows may only be filtered by conjuncts over key
columns; filtering them by values could let an old version resurface.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce

from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundLiteralPredicate,
    BoundPredicate,
    BoundSetPredicate,
    BoundUnaryPredicate,
    Not,
    Or,
    Reference,
    UnboundPredicate,
)
from pyiceberg.expressions.parser import parse
from pyiceberg.expressions.visitors import BooleanExpressionVisitor, bind, extract_field_ids, visit
from pyiceberg.schema import Schema
from pyparsing import ParseException

from mixed_iceberg.exceptions import InvalidFilterError

__all__ = ["FILTER_EXAMPLE", "SplitFilter", "conjuncts", "parse_filter", "split_filter"]

#: The shape of a filter, quoted in every syntax error.
FILTER_EXAMPLE = "id < 100 AND cat = 'a'"


class SplitFilter:
    """``full`` for data rows and partition pruning; ``keys`` for delete rows."""

    __slots__ = ("full", "keys")

    def __init__(self, full: BooleanExpression, keys: BooleanExpression) -> None:
        self.full = full
        self.keys = keys


class _References(BooleanExpressionVisitor[list[str]]):
    """The column names an unbound expression refers to, in order."""

    def visit_true(self) -> list[str]:
        return []

    def visit_false(self) -> list[str]:
        return []

    def visit_not(self, child_result: list[str]) -> list[str]:
        return child_result

    def visit_and(self, left_result: list[str], right_result: list[str]) -> list[str]:
        return [*left_result, *right_result]

    def visit_or(self, left_result: list[str], right_result: list[str]) -> list[str]:
        return [*left_result, *right_result]

    def visit_unbound_predicate(self, predicate: UnboundPredicate) -> list[str]:
        term = predicate.term
        return [term.name] if isinstance(term, Reference) else []

    def visit_bound_predicate(self, predicate: BoundPredicate) -> list[str]:
        return []


class _Unbind(BooleanExpressionVisitor[BooleanExpression]):
    """A bound expression as an unbound one over the schema's exact column names."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema

    def visit_true(self) -> BooleanExpression:
        return AlwaysTrue()

    def visit_false(self) -> BooleanExpression:
        return AlwaysFalse()

    def visit_not(self, child_result: BooleanExpression) -> BooleanExpression:
        return Not(child_result)

    def visit_and(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return And(left_result, right_result)

    def visit_or(self, left_result: BooleanExpression, right_result: BooleanExpression) -> BooleanExpression:
        return Or(left_result, right_result)

    def visit_unbound_predicate(self, predicate: UnboundPredicate) -> BooleanExpression:
        return predicate  # pragma: no cover - bind() leaves no unbound predicate

    def visit_bound_predicate(self, predicate: BoundPredicate) -> BooleanExpression:
        name = self.schema.find_column_name(predicate.term.ref().field.field_id)
        reference = Reference(name or predicate.term.ref().field.name)
        if isinstance(predicate, BoundUnaryPredicate):
            return predicate.as_unbound(reference)
        if isinstance(predicate, BoundSetPredicate):
            return predicate.as_unbound(reference, predicate.literals)
        if isinstance(predicate, BoundLiteralPredicate):
            return predicate.as_unbound(reference, predicate.literal)
        raise TypeError(f"unexpected bound predicate {predicate!r}")  # pragma: no cover


def _references(expr: BooleanExpression) -> list[str]:
    names: list[str] = visit(expr, _References())
    return names


def _where(table: str) -> str:
    return f"table {table}: " if table else ""


def parse_filter(
    row_filter: str | BooleanExpression,
    schema: Schema,
    *,
    table: str = "",
    case_sensitive: bool = True,
    subject: str = "row filter",
) -> BooleanExpression:
    """Parse and check ``row_filter`` against ``schema``.

    Args:
        row_filter: pyiceberg's filter syntax (``"id < 100 AND cat = 'a'"``) or an expression.
        schema: the table schema the filter's columns are looked up in.
        table: the table name, named in errors.
        case_sensitive: how column names are matched.
        subject: what the filter is, named in errors (a property key, say).

    Returns:
        The filter, unbound, its columns spelled as in ``schema``.

    Raises:
        InvalidFilterError: the text does not parse, a column is not in ``schema``, or a value
            does not fit its column's type.

    Example:
        >>> from pyiceberg.schema import Schema
        >>> from pyiceberg.types import LongType, NestedField
        >>> parse_filter("ID < 100", Schema(NestedField(1, "id", LongType())), case_sensitive=False)
        LessThan(term=Reference(name='id'), literal=LongLiteral(100))
    """
    if isinstance(row_filter, str):
        try:
            expr = parse(row_filter)
        except ParseException as exc:
            raise InvalidFilterError(
                f"{_where(table)}{subject}: expected a predicate such as {FILTER_EXAMPLE!r}, "
                f"found {row_filter!r} (syntax error at column {exc.col})"
            ) from exc
    else:
        expr = row_filter
    names = schema.column_names
    unknown = []
    for name in dict.fromkeys(_references(expr)):
        try:
            schema.find_field(name, case_sensitive)
        except ValueError:
            unknown.append(name)
    if unknown:
        how = "" if case_sensitive else " (case-insensitive)"
        raise InvalidFilterError(
            f"{_where(table)}{subject} {str(row_filter)!r}: expected columns of {names}{how}, found {unknown}"
        )
    try:
        bound = bind(schema, expr, case_sensitive)
    except (ValueError, TypeError) as exc:  # a literal that does not convert to its column's type
        raise InvalidFilterError(
            f"{_where(table)}{subject} {str(row_filter)!r}: expected values of the columns' types, found {exc}"
        ) from exc
    return visit(bound, _Unbind(schema))


def conjuncts(expr: BooleanExpression) -> list[BooleanExpression]:
    """The conjuncts of ``expr`` (``a AND b AND c`` -> ``[a, b, c]``), bound or not."""
    if isinstance(expr, And):
        return [*conjuncts(expr.left), *conjuncts(expr.right)]
    return [expr]


def split_filter(
    row_filter: str | BooleanExpression | None,
    schema: Schema,
    primary_key: Sequence[str],
    case_sensitive: bool = True,
    *,
    table: str = "",
) -> SplitFilter:
    """Parse ``row_filter`` (see :func:`parse_filter`) and pick its key-only conjuncts.

    Raises:
        InvalidFilterError: the filter does not parse or does not fit ``schema``.
    """
    full = (
        parse_filter(row_filter, schema, table=table, case_sensitive=case_sensitive) if row_filter is not None else AlwaysTrue()
    )
    key_ids = {schema.find_field(name).field_id for name in primary_key}
    pushed = [c for c in conjuncts(full) if extract_field_ids(bind(schema, c, True)) <= key_ids]
    keys = reduce(And, pushed) if pushed else AlwaysTrue()
    return SplitFilter(full, keys)
