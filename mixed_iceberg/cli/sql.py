"""``mixed-iceberg sql "SELECT ..."``: read-only SQL over merged views (:mod:`mixed_iceberg.query`).

Tables are named ``[catalog.]namespace.table`` (the catalog defaults to ``--catalog``). A table
for people by default, ``--json`` (rows, and whether the limit cut them) or ``--csv`` for
scripts; ``--limit`` rows at most (a note on stderr when there were more), ``--timeout``
seconds at most.
"""

from __future__ import annotations

import argparse
import io
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv

from mixed_iceberg.cli.progress import Progress
from mixed_iceberg.cli.render import Result, table
from mixed_iceberg.query import DEFAULT_LIMIT, DEFAULT_TIMEOUT_S, run_query

__all__ = ["register"]


def _csv(rows: pa.Table) -> str:
    out = io.BytesIO()
    pacsv.write_csv(rows, out)
    return out.getvalue().decode().rstrip("\n")


def sql_result(args: argparse.Namespace, progress: Progress) -> Result:
    result = run_query(args.query, default_catalog=args.catalog, limit=args.limit, timeout=args.timeout)
    rows = result.rows
    warnings = []
    if result.truncated:
        warnings.append(f"showing the first {args.limit} rows; the query has more (--limit)")
    if args.csv:
        text = _csv(rows)
    else:
        text = table(rows.to_pylist(), rows.column_names, empty="(no rows)")
        text += f"\n({rows.num_rows} row{'s' if rows.num_rows != 1 else ''}{', truncated' if result.truncated else ''}, {result.seconds:.2f} s)"
    data: dict[str, Any] = {"columns": rows.column_names, "rows": rows.to_pylist(), "truncated": result.truncated}
    return Result(data, text, warnings=tuple(warnings))


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``sql`` to the verbs."""
    sql = sub.add_parser("sql", parents=[common], help="read-only SQL over merged views (DuckDB)")
    sql.add_argument("query", help='one SELECT, tables as [catalog.]namespace.table, e.g. "SELECT count(*) FROM db.orders"')
    sql.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help=f"rows at most (default {DEFAULT_LIMIT})")
    sql.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help=f"seconds at most (default {DEFAULT_TIMEOUT_S:g})")
    sql.add_argument("--csv", action="store_true", help="print CSV (header and rows) instead of a table")
    sql.set_defaults(func=sql_result)
