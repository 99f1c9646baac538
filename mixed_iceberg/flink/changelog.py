"""A table's LogStore as an unbounded PyFlink changelog ``Table``: ``+I``/``-U``/``+U``/``-D`` rows
with their ``RowKind``, seconds after the ingest job (or the sink) committed them.

PyFlink 2.2 has no Python source API, and a Python function in the path would cost a call per
row; the rows never enter Python here. Flink's own Kafka SQL connector reads the LogStore topic
``read_committed`` (a LogStore row is committed in the Kafka transaction of its ChangeStore commit,
so an aborted commit's rows are never seen), and the ``mixed-iceberg-logstore`` format
(``java/changelog-format``, built on first use by :mod:`mixed_iceberg.flink.format_jar`) decodes
each message's header and JSON row in the JVM, the message's change action becoming the row's
``RowKind``. The columns are the table's, in its order and with :func:`~mixed_iceberg.flink.source.flink_type`'s
types (key columns ``NOT NULL``), so a view of it joins and aggregates like :func:`read_table`'s.

What the rows are: the changes as they were written, in commit order per key (the LogStore is
partitioned by key). For the ``deduplicate`` merge engine fed a consistent changelog (an update
carries its before image, as Debezium, Flink CDC and the sink's changelogs do) folding them gives
the merged view; under ``partial-update``, ``aggregation`` or ``first-row`` they are the inputs
the merge engine combines, not the merged rows.
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from typing import Literal

import pyarrow as pa
from pyflink.table import Schema, Table, TableDescriptor, TableEnvironment

from mixed_iceberg.exceptions import ConfigError, UnsupportedColumnTypeError
from mixed_iceberg.flink.format_jar import format_jar
from mixed_iceberg.flink.source import flink_row_type
from mixed_iceberg.ingest.job import connector_jars
from mixed_iceberg.logstore.format import check_log_schema
from mixed_iceberg.table import MixedTable

__all__ = ["read_changelog"]

_FORMAT = "mixed-iceberg-logstore"


def read_changelog(
    t_env: TableEnvironment,
    table: MixedTable,
    *,
    start: Literal["earliest", "latest"] | datetime = "earliest",
    stop: Literal["latest"] | None = None,
    bootstrap_servers: str | None = None,
    group_id: str | None = None,
) -> Table:
    """The changes of ``table`` from its LogStore as a PyFlink changelog ``Table`` (module docstring).

    ``start``: the LogStore's first retained change (``"earliest"``), only changes committed from
    now on (``"latest"``), or the changes logged at or after a time (a timezone-aware ``datetime``:
    Kafka's record timestamps). ``stop``: ``None`` reads forever (unbounded); ``"latest"`` ends the
    source at the changes committed when the job starts (for tests and backfills).

    Example:
        >>> t_env.create_temporary_view("orders_log", read_changelog(t_env, orders))     # doctest: +SKIP
        >>> t_env.sql_query("SELECT cust, SUM(qty) FROM orders_log GROUP BY cust")        # doctest: +SKIP

    Raises:
        ConfigError: the table has no LogStore (``log-store.enabled``), no Kafka address is known,
            or ``start`` is a naive ``datetime``.
        UnsupportedColumnTypeError: a column the LogStore or Flink cannot carry exactly, named: ``time``
            columns among them (Flink's JSON reader drops a time's fraction of a second).
    """
    layout = table.config.layout
    if not layout.log_store_enabled or not layout.log_store_topic:
        raise ConfigError(
            f"{table.name}: read_changelog reads the LogStore; expected log-store.enabled and a log-store topic, "
            f"found enabled={layout.log_store_enabled}, topic={layout.log_store_topic!r}"
        )
    bootstrap = bootstrap_servers or layout.log_store_address or os.environ.get("MIXED_ICEBERG_KAFKA_BOOTSTRAP")
    if not bootstrap:
        raise ConfigError(
            f"{table.name}: no LogStore address: set log-store.address, MIXED_ICEBERG_KAFKA_BOOTSTRAP or bootstrap_servers"
        )
    schema = table.arrow_schema()
    check_log_schema(schema, table=table.name)
    _refuse_times(schema, table=table.name)
    row_type = flink_row_type(schema, table=table.name)
    positions = _startup(start, table=table.name)
    if stop == "latest":
        positions["scan.bounded.mode"] = "latest-offset"
    elif stop is not None:
        raise ConfigError(f"{table.name}: stop: expected None or 'latest', found {stop!r}")

    descriptor = (
        TableDescriptor.for_connector("kafka")
        .schema(Schema.new_builder().from_row_data_type(row_type).build())
        .option("topic", layout.log_store_topic)
        .option("properties.bootstrap.servers", bootstrap)
        .option("properties.isolation.level", "read_committed")
        .option("value.format", _FORMAT)
    )
    if group_id is not None:
        descriptor = descriptor.option("properties.group.id", group_id)
    for key, value in positions.items():
        descriptor = descriptor.option(key, value)
    _add_jars(t_env)
    return t_env.from_descriptor(descriptor.build())


def _startup(start: Literal["earliest", "latest"] | datetime, *, table: str) -> dict[str, str]:
    if start == "earliest":
        return {"scan.startup.mode": "earliest-offset"}
    if start == "latest":
        return {"scan.startup.mode": "latest-offset"}
    if isinstance(start, datetime):
        if start.tzinfo is None:
            raise ConfigError(f"{table}: start: expected a timezone-aware datetime, found {start!r}")
        millis = int(start.timestamp() * 1000)
        return {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": str(millis)}
    raise ConfigError(f"{table}: start: expected 'earliest', 'latest' or a datetime, found {start!r}")


def _refuse_times(schema: pa.Schema, *, table: str) -> None:
    def has_time(kind: pa.DataType) -> bool:
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            return has_time(kind.value_type)
        if pa.types.is_struct(kind):
            return any(has_time(f.type) for f in kind)
        return bool(pa.types.is_time(kind))

    for field in schema:
        if has_time(field.type):
            raise UnsupportedColumnTypeError(
                f"{table}: column {field.name!r} ({field.type}): read_changelog cannot carry a time exactly (Flink's "
                "JSON reader drops its fraction of a second); read_table reads it"
            )


def _add_jars(t_env: TableEnvironment) -> None:
    """The Kafka connector and the format, for the planner (``ADD JAR``) and the job (``pipeline.jars``)."""
    jars = [jar.resolve() for jar in [*connector_jars(), format_jar()]]
    config = t_env.get_config()
    listed = [j for j in re.split(r";", config.get("pipeline.jars", "") or "") if j]
    config.set("pipeline.jars", ";".join(dict.fromkeys([*listed, *(jar.as_uri() for jar in jars)])))
    added = {str(row[0]) for row in t_env.execute_sql("SHOW JARS").collect()}
    for jar in jars:
        if str(jar) not in added:
            t_env.execute_sql(f"ADD JAR '{jar}'")
