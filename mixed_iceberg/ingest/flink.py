"""The PyFlink side of the ingest job: Kafka source in SQL, batches into Python, one writer per partition.

Per-record Python is the bottleneck of PyFlink (about 18k records/s measured here for a
Kafka source feeding a keyed Python function in thread mode), so records cross the JVM/Python
boundary in batches: Flink SQL reads the topic with the Kafka connector (``raw`` format plus
the ``partition`` and ``offset`` metadata columns) and groups it per Kafka partition into
processing-time tumbling windows of ``commit-interval-ms``, collecting values and offsets with
``ARRAY_AGG``. Each window row is one batch of one partition. The window aggregation is
hash-distributed by partition and the Python function is chained to it (forward, same
parallelism), so one writer subtask owns whole partitions and per-key order (a CDC topic is
keyed by primary key) is kept. There is deliberately no ``key_by``: its key selector would be a
Python function too, and every window row (all its values) would cross into Python twice
(measured: 12.2 vs 6.9 us CPU per record for the whole job with an empty body). The Python
function hands each batch to that partition's :class:`PartitionIngestor`, which orders it by
offset, drops what the table already holds and commits. Flink
checkpoints are not needed: progress lives in the table (see :mod:`mixed_iceberg.ingest.writer`).
PyFlink imports live in this module only.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from pyflink.common import Configuration
from pyflink.datastream import ProcessFunction, RuntimeContext, StreamExecutionEnvironment
from pyflink.table import StreamTableEnvironment

from mixed_iceberg.ingest.config import IngestConfig
from mixed_iceberg.ingest.metrics import IngestMetrics

__all__ = ["IngestFunction", "build_pipeline"]

log = logging.getLogger(__name__)

_METRICS = ("records_in", "changes_out", "log_messages", "dead_letters", "tombstones", "replayed_dropped", "commits")


class IngestFunction(ProcessFunction):  # type: ignore[misc]
    """Feeds each window batch (one Kafka partition's records) to that partition's ingestor."""

    def __init__(self, config_json: str) -> None:
        self._config_json = config_json

    def open(self, runtime_context: RuntimeContext) -> None:
        from mixed_iceberg.ingest.runtime import IngestRuntime

        if not logging.getLogger().handlers:
            logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        self._runtime = IngestRuntime(IngestConfig.from_json(self._config_json))
        self._metrics = self._runtime.metrics
        group = runtime_context.get_metrics_group().add_group("mixed_iceberg")
        self._counters = {name: group.counter(name) for name in _METRICS}
        self._reported = dict.fromkeys(_METRICS, 0)
        group.gauge("last_commit_ms", lambda: int(self._metrics.last_commit_ms))
        group.gauge("freshness_p50_ms", lambda: int(self._metrics.last_freshness_p50_ms))
        group.gauge("freshness_p99_ms", lambda: int(self._metrics.last_freshness_p99_ms))

    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> None:
        partition, values, offsets = value[0], value[1], value[2]
        self._runtime.ingest(int(partition), np.asarray(offsets, np.int64), pa.array(values, pa.binary()))
        self._report(self._metrics)

    def _report(self, metrics: IngestMetrics) -> None:
        for name in _METRICS:
            current = int(getattr(metrics, name))
            if current != self._reported[name]:
                self._counters[name].inc(current - self._reported[name])
                self._reported[name] = current

    def close(self) -> None:
        runtime = getattr(self, "_runtime", None)
        if runtime is not None:
            runtime.close()


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def build_pipeline(
    config: IngestConfig, start_offsets: dict[int, int], jars: list[Path], python: str, *, bounded: bool = False
) -> StreamExecutionEnvironment:
    """The job graph: Kafka (SQL, from ``start_offsets``) -> partition windows -> :class:`IngestFunction`."""
    flink = Configuration()
    flink.set_string("python.execution-mode", "thread")
    flink.set_string("python.executable", python)
    flink.set_string("python.client.executable", python)
    flink.set_string("pipeline.jars", ";".join(jar.resolve().as_uri() for jar in jars))
    flink.set_string("pipeline.name", config.job_name)
    for key, value in config.flink.items():
        flink.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(flink)
    env.set_parallelism(config.parallelism)
    t_env = StreamTableEnvironment.create(env)
    source = config.source
    offsets = ";".join(f"partition:{p},offset:{o}" for p, o in sorted(start_offsets.items()))
    options = {
        "connector": "kafka",
        "topic": source.topic,
        "properties.bootstrap.servers": source.bootstrap_servers,
        "properties.isolation.level": "read_committed",
        "format": "raw",
        "scan.startup.mode": "specific-offsets",
        "scan.startup.specific-offsets": offsets,
        **{f"properties.{k}": v for k, v in source.properties.items()},
    }
    if bounded:
        options["scan.bounded.mode"] = "latest-offset"
    with_clause = ", ".join(f"{_sql_string(k)} = {_sql_string(v)}" for k, v in options.items())
    t_env.execute_sql(
        "CREATE TEMPORARY TABLE cdc_source (msg BYTES, kafka_partition INT METADATA FROM 'partition' VIRTUAL, "
        f"kafka_offset BIGINT METADATA FROM 'offset' VIRTUAL, pt AS PROCTIME()) WITH ({with_clause})"
    )
    batches = t_env.sql_query(
        "SELECT kafka_partition, ARRAY_AGG(msg) AS msgs, ARRAY_AGG(kafka_offset) AS offs "
        f"FROM TABLE(TUMBLE(TABLE cdc_source, DESCRIPTOR(pt), INTERVAL '{config.commit_interval_ms / 1000:.3f}' SECOND(3, 3))) "
        "GROUP BY kafka_partition, window_start, window_end"
    )
    # Forward from the aggregation's subtask (hashed by partition): no Python key selector.
    t_env.to_data_stream(batches).process(IngestFunction(config.to_json())).name("mixed-iceberg-ingest")
    return env
