"""What a SQL query reads, from its parsed form: the tables, their columns, and the filter a
merged read may be asked for. Pure: the input is DuckDB's JSON form of the parsed statement
(``json_serialize_sql``), the output a :class:`QueryPlan`.

Pushdown only ever narrows what is read, and DuckDB evaluates the whole query on what arrives,
so every rule here errs towards reading more:

* **columns**: every column name the query mentions anywhere (qualified or not, in any clause
  or subquery) that the table has, or every column once the query holds a ``*``;
* **filter**: for a query that scans one table once, the top-level ``WHERE`` conjuncts of the form
  column-op-constant (``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``, ``IN`` constants, ``IS [NOT]
  NULL``) whose constant fits the column's type; the merged read applies them after the merge
  (``MixedScan``'s row filter), so an old version never resurfaces.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyiceberg.expressions import (
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotNull,
    Reference,
)

from mixed_iceberg.exceptions import QueryError

__all__ = ["QueryPlan", "TableRead", "TableRef", "distinct", "plan_query", "table_refs"]


@dataclass(frozen=True, slots=True)
class TableRef:
    """A table as the query names it: ``catalog`` is None when the query leaves it out."""

    catalog: str | None
    namespace: str
    name: str

    @property
    def dotted(self) -> str:
        return ".".join(p for p in (self.catalog, self.namespace, self.name) if p)


def distinct(refs: list[TableRef]) -> list[TableRef]:
    """``refs`` without repeats, in a stable order."""
    return sorted(set(refs), key=lambda ref: (ref.catalog or "", ref.namespace, ref.name))


@dataclass(frozen=True, slots=True)
class TableRead:
    """How to read one table: its columns (None: all) and the row filter to push down."""

    ref: TableRef
    columns: tuple[str, ...] | None
    row_filter: BooleanExpression
    occurrences: int  # how often the query scans it (a second scan needs the rows kept)


@dataclass(frozen=True, slots=True)
class QueryPlan:
    reads: tuple[TableRead, ...]


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _statement(ast: Mapping[str, Any]) -> dict[str, Any]:
    if ast.get("error"):
        raise QueryError(f"the query does not parse: {ast.get('error_message', 'syntax error')}")
    statements = ast.get("statements") or []
    if len(statements) != 1:
        raise QueryError(f"expected one SELECT statement, found {len(statements)}")
    node: dict[str, Any] = statements[0]["node"]
    return node


def table_refs(ast: Mapping[str, Any]) -> list[TableRef]:
    """Every base table the query scans, once per scan (CTE names excepted).

    Raises:
        QueryError: the query does not parse, or names a table without its namespace.
    """
    root = _statement(ast)
    ctes = {entry["key"].lower() for node in _walk(root) for entry in (node.get("cte_map") or {}).get("map", [])}
    refs = []
    for node in _walk(root):
        if node.get("type") != "BASE_TABLE":
            continue
        catalog, namespace, name = node.get("catalog_name") or None, node.get("schema_name") or "", node["table_name"]
        if not namespace:
            if catalog is None and name.lower() in ctes:
                continue
            raise QueryError(f"table {name!r}: name it as [catalog.]namespace.table (e.g. local.db.{name})")
        refs.append(TableRef(catalog, namespace, name))
    return refs


def _mentioned(root: dict[str, Any]) -> tuple[set[str], bool]:
    names: set[str] = set()
    star = False
    for node in _walk(root):
        kind = node.get("class")
        if kind == "COLUMN_REF":
            parts = node.get("column_names") or []
            names.update(p.lower() for p in parts)  # a qualifier too: harmless, it only widens
        elif kind == "STAR":
            star = True
    return names, star


_COMPARISONS = {
    "COMPARE_EQUAL": EqualTo,
    "COMPARE_NOTEQUAL": NotEqualTo,
    "COMPARE_LESSTHAN": LessThan,
    "COMPARE_LESSTHANOREQUALTO": LessThanOrEqual,
    "COMPARE_GREATERTHAN": GreaterThan,
    "COMPARE_GREATERTHANOREQUALTO": GreaterThanOrEqual,
}
_FLIPPED = {
    "COMPARE_LESSTHAN": "COMPARE_GREATERTHAN",
    "COMPARE_LESSTHANOREQUALTO": "COMPARE_GREATERTHANOREQUALTO",
    "COMPARE_GREATERTHAN": "COMPARE_LESSTHAN",
    "COMPARE_GREATERTHANOREQUALTO": "COMPARE_LESSTHANOREQUALTO",
    "COMPARE_EQUAL": "COMPARE_EQUAL",
    "COMPARE_NOTEQUAL": "COMPARE_NOTEQUAL",
}
_INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}
#: Which constants (DuckDB's type ids) may be compared with a column of an Iceberg type.
_FITS = {
    "int": _INTEGERS,
    "long": _INTEGERS,
    "float": _INTEGERS | {"DOUBLE", "FLOAT"},
    "double": _INTEGERS | {"DOUBLE", "FLOAT"},
    "string": {"VARCHAR"},
    "boolean": {"BOOLEAN"},
}


def _column(node: Any, columns: Mapping[str, tuple[str, str]]) -> tuple[str, str] | None:
    """(name, Iceberg type) of a column reference to the table, else None."""
    if not isinstance(node, dict) or node.get("class") != "COLUMN_REF":
        return None
    parts = node.get("column_names") or []
    return columns.get(parts[-1].lower()) if parts else None


def _constant(node: Any, column_type: str) -> tuple[bool, Any]:
    """(fits, value) of a constant compared with a column of ``column_type``."""
    if not isinstance(node, dict) or node.get("class") != "CONSTANT":
        return False, None
    value = node.get("value") or {}
    if value.get("is_null"):
        return False, None
    type_id = (value.get("type") or {}).get("id")
    return type_id in _FITS.get(column_type, set()), value.get("value")


def _predicate(node: dict[str, Any], columns: Mapping[str, tuple[str, str]]) -> BooleanExpression | None:
    kind = node.get("type")
    if kind in _COMPARISONS:
        left, right = node.get("left"), node.get("right")
        if _column(left, columns) is None:
            left, right, kind = right, left, _FLIPPED[kind]
        column = _column(left, columns)
        if column is None:
            return None
        fits, value = _constant(right, column[1])
        return _COMPARISONS[kind](column[0], value) if fits else None
    if kind in ("OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL"):
        children = node.get("children") or []
        column = _column(children[0], columns) if len(children) == 1 else None
        if column is None:
            return None
        return IsNull(Reference(column[0])) if kind == "OPERATOR_IS_NULL" else NotNull(Reference(column[0]))  # type: ignore[call-arg]
    if kind == "COMPARE_IN":
        children = node.get("children") or []
        column = _column(children[0], columns) if children else None
        if column is None or len(children) < 2:
            return None
        constants = [_constant(child, column[1]) for child in children[1:]]
        if not all(fits for fits, _ in constants):
            return None
        return In(Reference(column[0]), {value for _, value in constants})  # type: ignore[call-arg, arg-type]
    return None


def _filter(root: dict[str, Any], columns: Mapping[str, tuple[str, str]]) -> BooleanExpression:
    where = root.get("where_clause")
    if not isinstance(where, dict):
        return AlwaysTrue()
    conjuncts = where.get("children", []) if where.get("type") == "CONJUNCTION_AND" else [where]
    pushed = [p for p in (_predicate(c, columns) for c in conjuncts if isinstance(c, dict)) if p is not None]
    result: BooleanExpression = AlwaysTrue()
    for predicate in pushed:
        result = And(result, predicate)
    return result


def plan_query(ast: Mapping[str, Any], schemas: Mapping[TableRef, Mapping[str, str]]) -> QueryPlan:
    """The reads of a query: ``ast`` is DuckDB's ``json_serialize_sql`` of it, ``schemas`` maps
    each table of :func:`table_refs` to its top-level columns (name -> Iceberg type name, e.g.
    ``long``, ``string``; nested types by any other name, never pushed down).

    Raises:
        QueryError: the query does not parse, or names a table without its namespace.
    """
    root = _statement(ast)
    refs = table_refs(ast)
    mentioned, star = _mentioned(root)
    # One scan only: a filter pushed into a table scanned twice (a self-join, a subquery) would
    # narrow the other scan too.
    single = len(refs) == 1 and root.get("type") == "SELECT_NODE" and (root.get("from_table") or {}).get("type") == "BASE_TABLE"
    reads = []
    for ref in distinct(refs):
        schema = schemas[ref]
        by_lower = {name.lower(): (name, kind) for name, kind in schema.items()}
        columns = None if star else tuple(name for name in schema if name.lower() in mentioned)
        row_filter = _filter(root, by_lower) if single else AlwaysTrue()
        reads.append(TableRead(ref, columns, row_filter, refs.count(ref)))
    return QueryPlan(tuple(reads))
