"""A user's PyFlink pipeline over Mixed-Iceberg tables read with ``mixed_iceberg.flink.read_table``.

Run by ``tests/integration/test_flink_source.py`` in a process of its own (its own JVM):

    python -m tests.support.source_pipeline CATALOG_URI WAREHOUSE SNAPSHOT_ID OUT_DIR

It reads ``db.orders`` (now and as of ``SNAPSHOT_ID``) and ``db.customers`` into Flink, in a
session whose time zone is not UTC, and writes what Flink computed, as Arrow IPC files in OUT_DIR:
``orders.arrow`` and ``orders_then.arrow`` (every row, through Flink), ``by_region.arrow`` (a join
and an aggregate, :data:`BY_REGION`), ``in_zone.arrow`` (timestamptz values printed by Flink in a
session zone that is not UTC, :data:`IN_ZONE`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.feather

from mixed_iceberg.flink_client import prepare_flink_client

#: The join and aggregate the test also runs in DuckDB over the merged reads.
BY_REGION = """
    SELECT c.region, COUNT(*) AS n, SUM(CAST(o.qty AS BIGINT)) AS qty, SUM(o.amount) AS amount,
           MIN(o.`at`) AS first_at, MAX(o.atz) AS last_atz, COUNT(DISTINCT o.name) AS names
    FROM orders AS o JOIN customers AS c ON o.cust = c.id
    WHERE o.flag
    GROUP BY c.region
"""
#: Not UTC, and not a whole hour from it: a TIMESTAMP_LTZ must keep its instant whatever the zone.
#: Its offset has been +05:45 since 1986 (every time zone database agrees on that much).
SESSION_ZONE = "Asia/Kathmandu"
#: Each timestamptz from 1987 on as Flink prints it in the session zone: its instant, not shifted.
IN_ZONE = "SELECT id, CAST(atz AS STRING) AS wall FROM orders WHERE atz >= TO_TIMESTAMP_LTZ(536457600000, 3)"


def _arrow(frame: object, schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pandas(frame, schema=schema, preserve_index=False)


def main(uri: str, warehouse: str, snapshot_id: int, out: Path) -> None:
    prepare_flink_client()
    from pyflink.table import EnvironmentSettings, TableEnvironment

    from mixed_iceberg import load_catalog
    from mixed_iceberg.flink import read_table

    catalog = load_catalog("local", uri=uri, warehouse=warehouse)
    orders, customers = catalog.load_table("db.orders"), catalog.load_table("db.customers")
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "2")
    # PyFlink's to_pandas reads a TIMESTAMP_LTZ as the session zone's wall clock (through pytz,
    # whose offsets before 1920 differ from Java's): UTC while results come back as pandas.
    t_env.get_config().set_local_timezone("UTC")

    t_env.create_temporary_view("orders", read_table(t_env, orders))
    t_env.create_temporary_view("customers", read_table(t_env, customers))
    schema = orders.scan().to_arrow().schema
    pa.feather.write_feather(_arrow(t_env.from_path("orders").to_pandas(), schema), out / "orders.arrow")
    then = read_table(t_env, orders, snapshot_id=snapshot_id)
    pa.feather.write_feather(_arrow(then.to_pandas(), schema), out / "orders_then.arrow")
    pa.feather.write_feather(
        pa.Table.from_pandas(t_env.sql_query(BY_REGION).to_pandas(), preserve_index=False), out / "by_region.arrow"
    )
    t_env.get_config().set_local_timezone(SESSION_ZONE)
    in_zone = pa.Table.from_pandas(t_env.sql_query(IN_ZONE).to_pandas(), preserve_index=False)
    pa.feather.write_feather(in_zone, out / "in_zone.arrow")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))
