"""The PyFlink side of the ingest job: Kafka source in SQL, Arrow batches into Python, one writer per partition.

Per-record Python is the bottleneck of PyFlink, so records cross the JVM/Python boundary as
Arrow batches: Flink SQL reads the topic with the Kafka connector (``raw`` format plus the
``partition`` and ``offset`` metadata columns) and feeds it to a vectorized (pandas) scalar
function, :class:`IngestFunction`, chained to the source. Each source subtask owns whole Kafka
partitions (the connector assigns partitions to readers for the life of the job), so every
change of a key goes through one writer, in source order. The function hands its batches to
the subtask's :class:`IngestRuntime`, which buffers them per partition and returns; committer
threads commit a partition every ``commit-interval-ms`` (or at ``commit-max-records``), so the
JVM goes on reading while a partition commits (PyFlink waits for the function at every bundle
end). Its output (a zero per record) goes to a ``blackhole`` table.

Why this shape (measure it with ``python -m bench.ingest``): the previous plan, processing-time
windows per partition with ``ARRAY_AGG`` into a thread-mode process function, hashed all four
partitions of the bench topic onto one subtask, whose single thread then did the JVM window
work and all the Python work in turn (at most ~1 core busy). Here the JVM has no window state,
the source subtasks stay balanced, and the Python work runs in the Python worker process
(process mode: pandas functions are Arrow-based and need it) in parallel with the JVM.
Flink checkpoints are not needed: progress lives in the table (see
:mod:`mixed_iceberg.ingest.writer`), so the execution mode does not matter across restarts.
PyFlink imports live in this module only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd  # type: ignore[import-untyped]
import pyarrow as pa
from pyflink.common import Configuration
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import DataTypes, StreamTableEnvironment
from pyflink.table.udf import FunctionContext, ScalarFunction, udf

from mixed_iceberg.exceptions import ConfigError
from mixed_iceberg.ingest import arrow_input
from mixed_iceberg.ingest.buffering import WAKEUP_PARTITION
from mixed_iceberg.ingest.config import IngestConfig
from mixed_iceberg.ingest.metrics import COUNTERS, IngestMetrics

__all__ = ["IngestFunction", "build_pipeline", "flink_settings", "source_options"]

log = logging.getLogger(__name__)

#: Flink settings the job sets unless the config's ``flink`` section overrides them.
_DEFAULTS = {
    "python.execution-mode": "process",
    # Rows per Arrow batch into Python, and how long the JVM may hold a partial one.
    "python.fn-execution.arrow.batch.size": "10000",
    "python.fn-execution.bundle.size": "100000",
    "python.fn-execution.bundle.time": "500",
    # Chained operators hand records on without a defensive copy each (the SQL operators are
    # reuse-safe; the Python operator copies what it keeps and serializes its input at once).
    # Less job CPU with it (`.venv/bin/python -m bench.ingest`, job_cpu_s; A/B runs not stored).
    "pipeline.object-reuse": "true",
    # Without checkpoints Flink restarts nothing unless told to. A restarted subtask re-reads
    # from the job's start offsets and its writers drop what the table already holds.
    "restart-strategy.type": "exponential-delay",
    # ... but not forever: a failure that outlives 10 restarts (a bad jar, a missing table,
    # too few slots) fails the job, so the user sees it instead of a job that never runs.
    "restart-strategy.exponential-delay.attempts-before-reset-backoff": "10",
}
#: Kafka consumer settings of the source, under the config's ``source.properties``.
_FETCH = {"max.partition.fetch.bytes": str(8 << 20), "fetch.max.bytes": str(64 << 20)}
#: A local mini-cluster has one TaskManager: it needs a slot per subtask.
_SLOTS = "taskmanager.numberOfTaskSlots"


class IngestFunction(ScalarFunction):  # type: ignore[misc]
    """Vectorized: (partition, offset, value) Series in, a zero per record out; commits as a side effect."""

    def __init__(self, config_json: str) -> None:
        self._config_json = config_json

    def open(self, function_context: FunctionContext) -> None:
        from mixed_iceberg.ingest.runtime import IngestRuntime

        if not logging.getLogger().handlers:
            logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        # A worker's root logger may stop at WARNING (on a cluster the records go to the
        # TaskManager's log through Beam); the commit lines are INFO.
        logging.getLogger("mixed_iceberg").setLevel(logging.INFO)
        self._runtime = IngestRuntime(IngestConfig.from_json(self._config_json))
        log.info("ingest function input: %s", "Arrow arrays" if arrow_input.install() else "pandas Series")
        self._metrics = IngestMetrics()  # the writers' totals as of the last call
        group = function_context.get_metric_group().add_group("mixed_iceberg")
        self._counters = {name: group.counter(name) for name in COUNTERS}
        group.gauge("last_commit_ms", lambda: int(self._metrics.last_commit_ms))
        group.gauge("freshness_p50_ms", lambda: int(self._metrics.last_freshness_p50_ms))
        group.gauge("freshness_p99_ms", lambda: int(self._metrics.last_freshness_p99_ms))
        self._runtime.start_committer()

    def eval(self, partitions: pa.Array | pd.Series, offsets: pa.Array | pd.Series, values: pa.Array | pd.Series) -> pd.Series:
        """Buffer one batch: Arrow arrays (see :mod:`~mixed_iceberg.ingest.arrow_input`) or pandas Series."""
        count = len(values)
        if isinstance(values, pd.Series):
            messages = pa.array(values, pa.binary(), from_pandas=True)
            partition_ids, source_offsets = partitions.to_numpy(np.int32), offsets.to_numpy(np.int64)
        else:
            messages = values
            partition_ids = np.asarray(partitions.to_numpy(zero_copy_only=False), np.int32)
            source_offsets = np.asarray(offsets.to_numpy(zero_copy_only=False), np.int64)
        self._runtime.buffer(partition_ids, source_offsets, messages)
        self._report()
        return pd.Series(np.zeros(count, np.int64))

    def _report(self) -> None:
        # Counters move here, on the function's thread, for the commits the committers made.
        previous, self._metrics = self._metrics, self._runtime.metrics
        for name in COUNTERS:
            moved = int(getattr(self._metrics, name)) - int(getattr(previous, name))
            if moved:
                self._counters[name].inc(moved)

    def close(self) -> None:
        runtime = getattr(self, "_runtime", None)
        if runtime is not None:
            runtime.close()


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def flink_settings(config: IngestConfig, python: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The job's Flink configuration: its defaults, ``extra`` (the client's, such as the local
    mini-cluster's REST port), then the config's ``flink`` section.

    A local mini-cluster has one TaskManager, so its slots are raised to the parallelism
    (a session cluster ignores the key: its slots are its own).

    Raises:
        ConfigError: ``flink.taskmanager.numberOfTaskSlots`` is not a positive integer.
    """
    settings = {
        **_DEFAULTS,
        "python.executable": python,
        "python.client.executable": python,
        "pipeline.name": config.job_name,
        **(extra or {}),
        **config.flink,
    }
    slots = settings.get(_SLOTS, "1")
    if not slots.isdigit() or int(slots) < 1:
        raise ConfigError(f"flink.{_SLOTS}: expected a positive integer, found {slots!r}")
    if int(slots) < config.parallelism:
        log.info("%s: %s raised from %s to the parallelism, %d", config.job_name, _SLOTS, slots, config.parallelism)
        settings[_SLOTS] = str(config.parallelism)
    return settings


def source_options(config: IngestConfig, *, bounded: bool = False) -> dict[str, str]:
    """The Kafka SQL source's options: the CDC topic and the wake-up topic, read committed,
    from the offsets :func:`~mixed_iceberg.ingest.runtime.prepare` committed for the job's group."""
    source = config.source
    options = {
        "connector": "kafka",
        "topic": f"{source.topic};{config.wakeup_topic}",
        "properties.bootstrap.servers": source.bootstrap_servers,
        "properties.isolation.level": "read_committed",
        "format": "raw",
        # Fewer, bigger fetches (the consumer's defaults are 1 MiB per partition, 50 MiB in all).
        # They catch a backlog up faster (python -m bench.ingest, alternating runs).
        # `source.properties` override them.
        **{f"properties.{k}": v for k, v in _FETCH.items()},
        **{f"properties.{k}": v for k, v in source.properties.items()},
        "scan.startup.mode": "group-offsets",
        "properties.group.id": config.source_group,
        # Only partitions created after prepare() have no committed offset: all of theirs is new.
        "properties.auto.offset.reset": "earliest",
    }
    if bounded:
        options["scan.bounded.mode"] = "latest-offset"
    return options


def build_pipeline(
    config: IngestConfig, jars: list[Path], python: str, *, bounded: bool = False, settings: Mapping[str, str] | None = None
) -> StreamExecutionEnvironment:
    """The job graph: Kafka (SQL) -> :class:`IngestFunction` (chained) -> blackhole.

    The source reads the CDC topic and the job's wake-up topic (see
    :mod:`mixed_iceberg.ingest.runtime`) from the offsets :func:`~mixed_iceberg.ingest.runtime.prepare`
    committed for ``config.source_group``: Flink's Kafka connector takes specific offsets only
    for a single topic.
    """
    flink = Configuration()
    for key, value in flink_settings(config, python, settings).items():
        flink.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(flink)
    # Appended to pipeline.jars, not set: under `flink run` that list already holds the
    # flink-python jar the CLI ships with every Python job.
    env.add_jars(*(jar.resolve().as_uri() for jar in jars))
    env.set_parallelism(config.parallelism)
    t_env = StreamTableEnvironment.create(env)
    options = source_options(config, bounded=bounded)
    with_clause = ", ".join(f"{_sql_string(k)} = {_sql_string(v)}" for k, v in options.items())
    # Short table names: the chained operator is named after them ("Source: cdc[1] -> ... ->
    # discard[4]: Writer"), and Flink warns about (and truncates) metric names over 80 characters.
    t_env.execute_sql(
        "CREATE TEMPORARY TABLE cdc (msg BYTES, kafka_topic STRING METADATA FROM 'topic' VIRTUAL, "
        "kafka_partition INT METADATA FROM 'partition' VIRTUAL, "
        f"kafka_offset BIGINT METADATA FROM 'offset' VIRTUAL) WITH ({with_clause})"
    )
    ingest = udf(IngestFunction(config.to_json()), result_type=DataTypes.BIGINT(), func_type="pandas")
    t_env.create_temporary_function("mixed_iceberg_ingest", ingest)
    t_env.execute_sql("CREATE TEMPORARY TABLE discard (n BIGINT) WITH ('connector' = 'blackhole')")
    statements = t_env.create_statement_set()
    partition = f"CASE WHEN kafka_topic = {_sql_string(config.wakeup_topic)} THEN {WAKEUP_PARTITION} ELSE kafka_partition END"
    statements.add_insert_sql(f"INSERT INTO discard SELECT mixed_iceberg_ingest({partition}, kafka_offset, msg) FROM cdc")
    statements.attach_as_datastream()
    return env
