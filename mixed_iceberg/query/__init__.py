"""Read-only SQL over merged views (``mixed-iceberg sql``): :func:`run_query` runs DuckDB over
the reader's Arrow streams, :mod:`.plan` decides what each table's read needs (pure)."""

from mixed_iceberg.query.plan import QueryPlan, TableRead, TableRef, plan_query
from mixed_iceberg.query.terminal import DEFAULT_LIMIT, DEFAULT_TIMEOUT_S, QueryResult, run_query

__all__ = ["DEFAULT_LIMIT", "DEFAULT_TIMEOUT_S", "QueryPlan", "QueryResult", "TableRead", "TableRef", "plan_query", "run_query"]
