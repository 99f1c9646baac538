"""Read-only SQL over the merged views of Mixed-Iceberg tables and over plain Iceberg tables:
DuckDB over the reader's Arrow streams (``mixed-iceberg sql``, docs/cli.md).

A query names tables as ``[catalog.]namespace.table`` (the catalog defaults to ``--catalog``).
Each is read by :meth:`MixedTable.scan` with the columns and filter :mod:`.plan` finds, as a
stream of Arrow batches (a table the query scans twice is read once and kept), and exposed to
DuckDB under the same name. Before the query runs, DuckDB's file system access is switched off
and its configuration locked: the query reaches the catalogs' tables and nothing else (no file
reads or writes, no ``ATTACH``, no extension installs). One ``SELECT`` statement only; at most
``limit`` rows come back (``truncated`` says whether there were more) and the query is
interrupted after ``timeout`` seconds.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from mixed_iceberg.catalog import MixedCatalog, load_catalog
from mixed_iceberg.exceptions import QueryError
from mixed_iceberg.query.plan import QueryPlan, TableRead, TableRef, distinct, plan_query, table_refs
from mixed_iceberg.table import MixedTable

__all__ = ["DEFAULT_LIMIT", "DEFAULT_TIMEOUT_S", "QueryResult", "run_query"]

DEFAULT_LIMIT = 1000
DEFAULT_TIMEOUT_S = 60.0
_BATCH_ROWS = 8192


@dataclass(frozen=True, slots=True)
class QueryResult:
    """At most ``limit`` rows of the answer; ``truncated``: the query had more."""

    rows: pa.Table
    truncated: bool
    plan: QueryPlan
    seconds: float


def _duckdb() -> Any:
    try:
        import duckdb
    except ModuleNotFoundError as exc:  # an optional dependency (pip install 'mixed-iceberg[duckdb]')
        raise QueryError("SQL needs duckdb: pip install 'mixed-iceberg[duckdb]'") from exc
    return duckdb


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _scan_rows(table: MixedTable, read: TableRead) -> pa.RecordBatchReader | pa.Table:
    columns = read.columns
    if columns is not None and not columns:  # count(*) and the like: the key (or any column) will do
        columns = tuple(table.primary_key) or (table.schema().fields[0].name,)
    scan = table.scan(row_filter=read.row_filter, selected_fields=columns if columns is not None else ("*",))
    # A stream is read once: a table the query scans twice is kept whole.
    return scan.to_arrow_batch_reader() if read.occurrences == 1 else scan.to_arrow()


def _expose(con: Any, index: int, read: TableRead, rows: pa.RecordBatchReader | pa.Table) -> None:
    ref = read.ref
    source = f"__mixed_iceberg_{index}"
    con.register(source, rows)
    if ref.catalog is not None:
        attached = {row[0].lower() for row in con.execute("SELECT database_name FROM duckdb_databases()").fetchall()}
        if ref.catalog.lower() not in attached:
            con.execute(f"ATTACH ':memory:' AS {_quote(ref.catalog)}")
        schema = f"{_quote(ref.catalog)}.{_quote(ref.namespace)}"
    else:
        schema = _quote(ref.namespace)
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    con.execute(f"CREATE VIEW {schema}.{_quote(ref.name)} AS SELECT * FROM {source}")


def _iceberg_types(table: MixedTable) -> dict[str, str]:
    return {field.name: str(field.field_type) for field in table.schema().fields}


def run_query(
    sql: str,
    *,
    default_catalog: str = "local",
    limit: int = DEFAULT_LIMIT,
    timeout: float = DEFAULT_TIMEOUT_S,
    config_path: str | Path | None = None,
    open_catalog: Callable[[str], MixedCatalog] | None = None,
) -> QueryResult:
    """Run one read-only ``SELECT``; ``open_catalog`` opens a catalog by name (default:
    :func:`load_catalog` with ``config_path``).

    Raises:
        QueryError: not one SELECT, a table named without its namespace, a DuckDB error, the
            timeout, or duckdb not installed.
        NoSuchTableError, ConfigError: a table or catalog the query names does not exist.
    """
    if limit < 0 or timeout <= 0:
        raise QueryError(f"expected a limit >= 0 and a timeout > 0, found limit {limit} and timeout {timeout}")
    duckdb = _duckdb()
    started = time.monotonic()
    opener = open_catalog or (lambda name: load_catalog(name, config_path=config_path))
    con = duckdb.connect(":memory:")
    try:
        try:
            statements = con.extract_statements(sql)
            if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
                kinds = ", ".join(s.type.name for s in statements) or "none"
                raise QueryError(f"expected one read-only SELECT statement, found: {kinds}")
            ast = json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
        except duckdb.Error as exc:
            raise QueryError(f"the query does not parse: {exc}") from exc
        catalogs: dict[str, MixedCatalog] = {}
        tables: dict[TableRef, MixedTable] = {}
        for ref in distinct(table_refs(ast)):
            name = ref.catalog or default_catalog
            if name not in catalogs:
                catalogs[name] = opener(name)
            tables[ref] = catalogs[name].load_table(f"{ref.namespace}.{ref.name}")
        plan = plan_query(ast, {ref: _iceberg_types(table) for ref, table in tables.items()})
        for index, read in enumerate(plan.reads):
            _expose(con, index, read, _scan_rows(tables[read.ref], read))
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        rows, truncated = _fetch(con, duckdb, sql, limit, timeout)
        return QueryResult(rows, truncated, plan, time.monotonic() - started)
    finally:
        con.close()


def _fetch(con: Any, duckdb: Any, sql: str, limit: int, timeout: float) -> tuple[pa.Table, bool]:
    timer = threading.Timer(timeout, con.interrupt)
    timer.daemon = True
    timer.start()
    batches: list[pa.RecordBatch] = []
    seen = 0
    try:
        reader = con.execute(sql).to_arrow_reader(_BATCH_ROWS)
        for batch in reader:
            batches.append(batch)
            seen += batch.num_rows
            if seen > limit:
                break
        schema = reader.schema
    except duckdb.InterruptException as exc:
        raise QueryError(f"the query ran past its timeout of {timeout:g} s and was interrupted") from exc
    except duckdb.Error as exc:
        raise QueryError(str(exc).strip().splitlines()[0]) from exc
    finally:
        timer.cancel()
    rows = pa.Table.from_batches(batches, schema=schema).slice(0, limit)
    return rows, seen > limit
