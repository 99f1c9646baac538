"""Flink SQL users' path into a table: ``INSERT INTO catalog.db.table SELECT ...`` run through the sink.

Flink's planner cannot resolve a Mixed-Iceberg table in an ``INSERT`` (there is no Java connector
for it), so :func:`execute_insert` reads the statement's target and column list, plans its query
with the table environment (every view and table registered there, :func:`read_table`'s and
:func:`read_changelog`'s among them), and hands the result to :func:`~mixed_iceberg.flink.sink.sink`:
the same staging, exactly-once guarantee and schema check. As in Flink SQL, the query's columns
go to the table's by position: to every column in the table's order, or to the statement's column
list (the table's other columns stay null).
"""

from __future__ import annotations

import re

from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import StreamTableEnvironment

from mixed_iceberg.catalog import load_catalog
from mixed_iceberg.exceptions import InvalidIdentifierError, QueryError, SchemaMismatchError
from mixed_iceberg.flink.sink import ChangelogSink, SinkOptions, sink

__all__ = ["execute_insert", "parse_insert"]

_PART = r"(?:`[^`]+`|[A-Za-z_][A-Za-z0-9_$]*)"
_INSERT = re.compile(
    rf"^\s*INSERT\s+INTO\s+(?P<target>{_PART}(?:\s*\.\s*{_PART})*)\s*(?:\((?P<columns>[^()]*)\))?\s*"
    r"(?P<query>(?:SELECT|WITH|VALUES|\()[\s\S]*?)\s*;?\s*$",
    re.IGNORECASE,
)


def _unquote(part: str) -> str:
    part = part.strip()
    return part[1:-1] if part.startswith("`") else part


def parse_insert(statement: str) -> tuple[str, list[str] | None, str]:
    """``INSERT INTO catalog.db.table [(columns)] <query>`` -> (``catalog.db.table``, the column
    list or None, the query).

    Raises:
        QueryError: the statement is not such an ``INSERT`` (``INSERT OVERWRITE``, a ``PARTITION``
            clause and statement sets are not taken).
        InvalidIdentifierError: the target is not ``catalog.namespace.table``.
    """
    found = _INSERT.match(statement)
    if found is None:
        raise QueryError(
            "execute_insert: expected `INSERT INTO catalog.db.table [(col, ...)] SELECT ...`, found "
            f"{' '.join(statement.split())[:120]!r}"
        )
    parts = [_unquote(p) for p in re.findall(_PART, found["target"])]
    if len(parts) != 3:
        raise InvalidIdentifierError(
            f"execute_insert: expected the target as 'catalog.namespace.table', found {found['target']!r}"
        )
    columns = [_unquote(c) for c in found["columns"].split(",")] if found["columns"] is not None else None
    if columns is not None and not all(columns):
        raise QueryError(f"execute_insert: an empty name in the column list ({found['columns']!r})")
    return ".".join(parts), columns, found["query"]


def execute_insert(
    statement: str,
    *,
    env: StreamExecutionEnvironment,
    t_env: StreamTableEnvironment,
    options: SinkOptions | None = None,
    job_name: str | None = None,
    timeout: float = 300.0,
) -> ChangelogSink:
    """Run ``INSERT INTO catalog.db.table [(columns)] SELECT ...`` into a keyed Mixed-Iceberg
    table through :func:`~mixed_iceberg.flink.sink.sink`, and return when the job has ended and
    the table holds every change it produced (an unbounded query runs until it is cancelled or
    fails, as ``env.execute`` does)::

        t_env.create_temporary_view("orders", read_table(t_env, catalog.load_table("db.orders")))
        execute_insert("INSERT INTO local.db.totals SELECT cust, SUM(amount) FROM orders GROUP BY cust",
                       env=env, t_env=t_env)

    Raises:
        QueryError, InvalidIdentifierError: as :func:`parse_insert`.
        SchemaMismatchError: the query's column count is not the target's (the table's, or the
            column list's); else the sink's schema check, naming the column.
        TimeoutError: the table did not catch up within ``timeout`` seconds after the job ended.
        The sink's errors (:func:`~mixed_iceberg.flink.sink.sink`).
    """
    target, columns, query = parse_insert(statement)
    options = options or SinkOptions()
    catalog_name, namespace, name = target.split(".")
    catalog_path = str(options.catalog_config) if options.catalog_config else None
    names = columns or load_catalog(catalog_name, config_path=catalog_path).load_table(f"{namespace}.{name}").arrow_schema().names
    result = t_env.sql_query(query)
    produced = list(result.get_schema().get_field_names())
    if len(produced) != len(names):
        raise SchemaMismatchError(
            f"{target}: the query produces {len(produced)} columns ({', '.join(produced)}); expected {len(names)}, "
            f"{'the column list' if columns else 'the table'}'s ({', '.join(names)}), by position as in Flink SQL"
        )
    handle = sink(result.alias(*names), target, env=env, t_env=t_env, options=options)
    with handle:
        env.execute(job_name or f"insert-into-{target}")
        handle.wait(timeout)
    return handle
