"""What a query reads (mixed_iceberg/query/plan.py): its tables, their columns, and the filter
pushed into the merged read. Pushdown may only ever narrow the read to rows and columns the
query cannot need; the queries are parsed by DuckDB as the terminal parses them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyiceberg.expressions import (
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    In,
    IsNull,
    LessThanOrEqual,
    NotEqualTo,
    NotNull,
    Reference,
)

from mixed_iceberg.exceptions import QueryError
from mixed_iceberg.query.plan import QueryPlan, TableRef, plan_query, table_refs

duckdb = pytest.importorskip("duckdb")

ORDERS = {"id": "long", "cat": "string", "qty": "int", "price": "double", "tags": "list<int>"}
T = TableRef(None, "db", "t")
U = TableRef("lake", "db", "u")


def ast(sql: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(duckdb.sql("SELECT json_serialize_sql(?)", params=[sql]).fetchone()[0])
    return parsed


def plan(sql: str, schemas: dict[TableRef, dict[str, str]] | None = None) -> QueryPlan:
    return plan_query(ast(sql), schemas or {T: ORDERS, U: ORDERS})


def test_tables_are_found_in_joins_subqueries_and_ctes_but_not_cte_names() -> None:
    sql = "WITH w AS (SELECT id FROM db.t) SELECT * FROM w JOIN lake.db.u USING (id) WHERE id IN (SELECT id FROM db.t)"
    assert sorted(table_refs(ast(sql)), key=repr) == sorted([T, T, U], key=repr)


def test_a_table_without_its_namespace_is_refused_with_how_to_name_it() -> None:
    with pytest.raises(QueryError, match=r"name it as \[catalog.\]namespace.table"):
        table_refs(ast("SELECT * FROM orders"))


def test_columns_are_those_the_query_mentions_anywhere() -> None:
    (read,) = plan("SELECT cat, sum(qty) FROM db.t WHERE price > 1 GROUP BY cat ORDER BY cat").reads
    assert read.columns == ("cat", "qty", "price")
    (star,) = plan("SELECT * EXCLUDE (tags) FROM db.t").reads
    assert star.columns is None
    (count,) = plan("SELECT count(*) FROM db.t").reads
    assert count.columns == ()


@pytest.mark.parametrize(
    ("where", "pushed"),
    [
        ("id = 3", EqualTo("id", 3)),
        ("3 < id", GreaterThan("id", 3)),
        ("NOT (qty > 2)", LessThanOrEqual("qty", 2)),
        ("cat IS NULL", IsNull(Reference("cat"))),
        ("cat IS NOT NULL", NotNull(Reference("cat"))),
        ("CAT <> 'a'", NotEqualTo("cat", "a")),
        ("id IN (1, 2) AND cat = 'x'", And(In(Reference("id"), {1, 2}), EqualTo("cat", "x"))),
    ],
)
def test_simple_conjuncts_of_a_one_table_query_are_pushed(where: str, pushed: BooleanExpression) -> None:
    (read,) = plan(f"SELECT id FROM db.t WHERE {where}").reads
    assert read.row_filter == pushed


def test_only_the_conjuncts_that_fit_are_pushed_the_rest_left_to_duckdb() -> None:
    (read,) = plan(
        "SELECT id FROM db.t WHERE id IN (1, 2) AND (qty = 1 OR qty = 2) AND cat = 1 AND price > 2.5 AND upper(cat) = 'A'"
    ).reads
    text = repr(read.row_filter)
    assert "In(" in text
    assert "qty" not in text  # a disjunction
    assert "cat" not in text  # a string column against a number, and a function of a column
    assert "price" not in text  # 2.5 is a DECIMAL constant in DuckDB: not pushed


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM db.t a JOIN db.t b USING (id) WHERE a.id = 1",  # a self-join: two scans
        "SELECT * FROM db.t WHERE id = 1 AND cat IN (SELECT cat FROM db.t)",  # the subquery scans it too
        "SELECT * FROM db.t JOIN lake.db.u USING (id) WHERE id = 1",  # two tables
        "SELECT * FROM (SELECT * FROM db.t) WHERE id = 1",  # the WHERE is not the scan's
    ],
)
def test_no_filter_is_pushed_where_a_scan_could_lose_rows_the_query_needs(sql: str) -> None:
    assert all(read.row_filter == AlwaysTrue() for read in plan(sql).reads)


def test_a_table_scanned_twice_is_marked_to_be_kept() -> None:
    (read,) = plan("SELECT * FROM db.t a JOIN db.t b USING (id)").reads
    assert read.occurrences == 2
