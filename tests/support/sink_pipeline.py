"""A user's PyFlink pipeline that emits retractions, sunk with :func:`mixed_iceberg.flink.sink`.

``python -m tests.support.sink_pipeline --table local.db.t --name n --rows 20000 --keys 100
--rate 5000 --checkpoint-dir DIR [--datastream]``: a ``datagen`` sequence 1..rows (its position is checkpointed,
so a restored job continues it) -> ``GROUP BY id % keys`` with ``COUNT(*)`` and ``SUM(id)`` (a
changelog of ``+I``, ``-U``, ``+U``) -> the sink. Flink's own final result, which the table must
equal, is :func:`expected`. Run as a process of its own so that tests can kill -9 it.
"""

from __future__ import annotations

import argparse
import logging
from datetime import timedelta
from pathlib import Path

__all__ = ["expected", "main"]


def expected(rows: int, keys: int) -> dict[int, tuple[int, int]]:
    """The aggregate's final result: per key ``id % keys``, the count and the sum of the ids."""
    result: dict[int, tuple[int, int]] = {}
    for key in range(keys):
        ids = range(key if key else keys, rows + 1, keys)
        if len(ids):
            result[key] = (len(ids), sum(ids))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--rate", type=int, default=5_000)
    parser.add_argument("--checkpoint-dir", type=Path, required=True)
    parser.add_argument("--checkpoint-ms", type=int, default=1000)
    parser.add_argument("--datastream", action="store_true", help="hand the sink a DataStream of Rows with RowKinds")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from mixed_iceberg.flink_client import loopback_agent, prepare_flink_client

    prepare_flink_client(agent=loopback_agent())
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.table import StreamTableEnvironment

    from mixed_iceberg.flink import SinkOptions, sink

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    t_env = StreamTableEnvironment.create(env)
    t_env.execute_sql(
        "CREATE TEMPORARY TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', "
        f"'fields.id.start' = '1', 'fields.id.end' = '{args.rows}', 'rows-per-second' = '{args.rate}')"
    )
    changelog = t_env.sql_query(f"SELECT id % {args.keys} AS k, COUNT(*) AS n, SUM(id) AS s FROM src GROUP BY id % {args.keys}")
    # A DataStream of Rows with their RowKind (what a DataStream pipeline has), converted in the JVM.
    source = t_env.to_changelog_stream(changelog) if args.datastream else changelog
    options = SinkOptions(
        name=args.name, checkpoint_dir=args.checkpoint_dir, checkpoint_interval=timedelta(milliseconds=args.checkpoint_ms)
    )
    with sink(source, args.table, env=env, t_env=t_env, options=options) as handle:
        print(f"RESTORED FROM {handle.restored_from}", flush=True)
        env.execute(f"user-{args.name}")
    print("CAUGHT UP", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
