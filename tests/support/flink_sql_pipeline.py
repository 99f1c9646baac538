"""A Flink SQL user's pipeline: ``INSERT INTO`` a Mixed-Iceberg table from a query over another one
(``mixed_iceberg.flink.execute_insert`` around ``read_table``), then the target's LogStore read back
as a changelog (``read_changelog``) and aggregated in Flink SQL.

Run by ``tests/integration/test_flink_sql.py`` in a process of its own (one JVM for every job)::

    python -m tests.support.flink_sql_pipeline --name N --checkpoint-dir DIR --out DIR

over ``local.it.orders`` into ``local.it.totals`` (:data:`INSERT`), then writes to ``--out``:
``changelog.json`` (every LogStore row Flink read: its ``RowKind``, key and count, in order),
``folded.arrow`` (that changelog materialized by Flink, :data:`FOLDED`) and
``by_group.arrow`` (:data:`BY_GROUP` over the changelog).
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.feather

#: The user's statement: a GROUP BY, so Flink emits +I then -U/+U per key as orders arrive.
INSERT = """
    INSERT INTO local.it.totals
    SELECT cust, COUNT(*), CAST(SUM(amount) AS DECIMAL(14, 2)), MAX(`day`), MAX(`at`), MAX(atz), MAX(name), MAX(ratio)
    FROM orders GROUP BY cust
"""
#: The changelog materialized, temporal values and decimals as Flink prints them: PyFlink's own
#: conversion to Python truncates a TIMESTAMP to milliseconds (mixed_iceberg._pyflink).
FOLDED = """
    SELECT cust, n, CAST(total AS STRING) AS total, CAST(last_day AS STRING) AS last_day,
           CAST(last_at AS STRING) AS last_at, CAST(last_atz AS STRING) AS last_atz, top_name, top_ratio
    FROM totals_log
"""
#: Over the changelog: Flink must apply each -U/+U to get the merged table's figures.
BY_GROUP = """
    SELECT cust % 3 AS g, COUNT(*) AS customers, SUM(n) AS n, CAST(SUM(total) AS STRING) AS total,
           CAST(MAX(last_at) AS STRING) AS last_at, CAST(MIN(last_atz) AS STRING) AS first_atz
    FROM totals_log GROUP BY cust % 3
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", required=True)
    parser.add_argument("--checkpoint-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from mixed_iceberg.flink_client import loopback_agent, prepare_flink_client

    prepare_flink_client(agent=loopback_agent())
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.table import StreamTableEnvironment

    from mixed_iceberg import load_catalog
    from mixed_iceberg.flink import SinkOptions, execute_insert, read_changelog, read_table

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    t_env = StreamTableEnvironment.create(env)
    t_env.get_config().set_local_timezone("UTC")
    catalog = load_catalog("local")

    # The SQL user's few lines: the source table as a view, the INSERT through the sink.
    t_env.create_temporary_view("orders", read_table(t_env, catalog.load_table("it.orders")))
    execute_insert(INSERT, env=env, t_env=t_env, options=SinkOptions(name=args.name, checkpoint_dir=args.checkpoint_dir))

    # The target's changes, from its LogStore, up to what is committed now.
    totals = catalog.load_table("it.totals")
    t_env.create_temporary_view("totals_log", read_changelog(t_env, totals, stop="latest"))
    changes = []
    with t_env.sql_query("SELECT cust, n FROM totals_log").execute().collect() as rows:
        for row in rows:
            changes.append([str(row.get_row_kind()), row[0], row[1]])
    (args.out / "changelog.json").write_text(json.dumps(changes))
    folded = pa.Table.from_pandas(t_env.sql_query(FOLDED).to_pandas(), preserve_index=False)
    pa.feather.write_feather(folded, args.out / "folded.arrow")
    by_group = pa.Table.from_pandas(t_env.sql_query(BY_GROUP).to_pandas(), preserve_index=False)
    pa.feather.write_feather(by_group, args.out / "by_group.arrow")
    print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
