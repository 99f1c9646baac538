"""A changelog sink for users' own PyFlink pipelines, exactly once across kill -9 (docs/flink.md).

PyFlink gives Python functions no checkpoint hooks, so the sink writes nothing to the table from
the user's job. It stages instead, in two exactly-once halves:

1. **In the user's job**, an ``INSERT`` into Flink's Kafka SQL connector writes the changelog to a
   per-sink *staging topic*, keyed by the primary key, as ``{"op": "+U", "data": {...}}`` (the
   ``mixed-iceberg-changelog-json`` format, ``java/changelog-format``: Flink's own changelog
   formats turn ``-U``/``+U`` into ``-D``/``+I``). ``sink.delivery-guarantee=exactly-once`` makes
   it Flink's transactional Kafka sink: each checkpoint's rows are committed in Kafka when the
   checkpoint completes, and a job restored from its last checkpoint neither loses nor repeats
   one. The sink turns checkpointing on (retained on cancellation and failure) and, by default,
   restores the job from the latest checkpoint its directory holds.
2. **Beside it**, the ingest job (:mod:`mixed_iceberg.ingest`) reads the staging topic
   ``read_committed`` and commits to the ChangeStore with commit ids = staging offsets, the
   LogStore double-written where the table has one: the proven exactly-once path of
   ``jobs/ingest_cdc.py``, with the table's merge engine and ``sequence.field``.

Why a second job rather than the ingest pipeline inside the user's: the ingest job's progress is
in the table, not in Flink state, and it must stay so. Inside a checkpointed job its Kafka source
would be restored (on any failover, not only on a restart) from offsets read at the checkpoint,
ahead of what the table had committed: the records in between would be lost. As a job of its own,
without checkpoints, it restarts from the table's positions (``prepare``), as it always has.

Freshness: a change is visible in the merged read at most one checkpoint interval (staging commit)
plus one commit interval (ingest commit) after Flink produced it.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from pyflink.common import Configuration
from pyflink.datastream import CheckpointingMode, DataStream, StreamExecutionEnvironment
from pyflink.table import Schema, StreamTableEnvironment, Table, TableDescriptor

from mixed_iceberg._pyflink import column_types
from mixed_iceberg.catalog import load_catalog
from mixed_iceberg.exceptions import ConfigError, InvalidIdentifierError, MixedIcebergError, NotKeyedTableError
from mixed_iceberg.flink.format_jar import format_jar
from mixed_iceberg.flink.schema import check_sink_schema
from mixed_iceberg.flink_client import LOCAL_CLUSTER_DEFAULTS, prepare_flink_client
from mixed_iceberg.flink_job import TERMINAL, JobClient, ended_because, job_status
from mixed_iceberg.ingest.cdc import CdcFormat
from mixed_iceberg.ingest.config import IngestConfig, SourceConfig, pin_catalog
from mixed_iceberg.ingest.job import caught_up, connector_jars
from mixed_iceberg.ingest.runtime import prepare

__all__ = ["ChangelogSink", "SinkOptions", "format_jar", "latest_checkpoint", "sink"]

log = logging.getLogger(__name__)

_FORMAT = "mixed-iceberg-changelog-json"
_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
#: The sink's own planner settings, set only while its INSERT is translated: a keyed shuffle in
#: front of the Kafka writers, so all changes of a key go through one producer, in order.
_PLANNER = {"table.exec.sink.keyed-shuffle": "FORCE"}


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkOptions:
    """How :func:`sink` stages and commits.

    Attributes:
        name: names the staging topic, the Kafka transactional ids, the ingest job and its commit
            ids; keep it across restarts (default: the table identifier). One per sink.
        checkpoint_interval: Flink's checkpoint interval: staged changes become visible to the
            ingest job when a checkpoint completes.
        commit_interval: how long the ingest job buffers a staging partition before it commits.
        checkpoint_dir: where the user's job keeps its checkpoints (default:
            ``<tmp>/mixed-iceberg-checkpoints/<name>``).
        restore: start the user's job from the latest checkpoint in ``checkpoint_dir``, if any.
        bootstrap_servers: the Kafka of the staging topic (default ``MIXED_ICEBERG_KAFKA_BOOTSTRAP``,
            else ``127.0.0.1:19092``).
        partitions: the staging topic's partitions, and the ingest job's parallelism.
        catalog_config: the ``catalogs.yaml`` to find the catalog in (default: the usual lookup).
        flink: extra Flink settings of the ingest job.
    """

    name: str | None = None
    checkpoint_interval: timedelta = timedelta(seconds=1)
    commit_interval: timedelta = timedelta(milliseconds=500)
    checkpoint_dir: Path | None = None
    restore: bool = True
    bootstrap_servers: str | None = None
    partitions: int = 2
    catalog_config: Path | None = None
    flink: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name is not None and not _NAME.match(self.name):
            raise ConfigError(f"sink name: expected letters, digits, '.', '_' or '-', found {self.name!r}")
        if self.checkpoint_interval < timedelta(milliseconds=100):
            raise ConfigError(f"checkpoint_interval: expected at least 100 ms, found {self.checkpoint_interval}")
        if self.commit_interval < timedelta(milliseconds=100):
            raise ConfigError(f"commit_interval: expected at least 100 ms, found {self.commit_interval}")
        if self.partitions < 1:
            raise ConfigError(f"partitions: expected a positive count, found {self.partitions}")


def latest_checkpoint(directory: Path) -> Path | None:
    """The newest complete checkpoint under ``directory`` (``<job id>/chk-<n>`` with its
    ``_metadata``; each run of a job has a job id of its own), or None."""
    found = [meta.parent for meta in directory.glob("*/chk-*/_metadata") if meta.is_file()]
    return max(found, key=lambda path: path.joinpath("_metadata").stat().st_mtime_ns, default=None)


def _split(identifier: str) -> tuple[str, str]:
    parts = identifier.split(".")
    if len(parts) != 3 or not all(parts):
        raise InvalidIdentifierError(f"expected 'catalog.namespace.table', found {identifier!r}")
    return parts[0], f"{parts[1]}.{parts[2]}"


class ChangelogSink:
    """One sink: its ingest job (started by :func:`sink`) and what to wait for.

    Use it as a context manager around the user's ``execute()``: leaving it waits until the
    table holds every staged change, then stops the ingest job.
    """

    def __init__(self, config: IngestConfig, staging_table: str, checkpoint_dir: Path, restored_from: Path | None) -> None:
        self.config = config
        self.staging_table = staging_table
        self.checkpoint_dir = checkpoint_dir
        self.restored_from = restored_from
        self._client: JobClient | None = None

    @property
    def staging_topic(self) -> str:
        return self.config.source.topic

    def start(self) -> None:
        """Create the staging topic, compute the ingest job's resume offsets and submit it."""
        from mixed_iceberg.ingest.flink import build_pipeline

        prepare(self.config)
        # The ingest job's pandas function needs Python workers as processes (a local
        # environment's default runs them as threads of this client): read at execute time.
        prepare_flink_client()
        # Under `flink run` (the CLI's gateway, as in mixed_iceberg.ingest.job) the cluster's own
        # configuration decides; a local mini-cluster listens on loopback only.
        on_cli = "PYFLINK_GATEWAY_PORT" in os.environ
        settings = {} if on_cli else dict(LOCAL_CLUSTER_DEFAULTS)
        env = build_pipeline(self.config, connector_jars(), sys.executable, settings=settings)
        self._client = env.execute_async(self.config.job_name)
        log.info("sink %s: ingest job %s reads %s", self.config.table, self.config.job_name, self.staging_topic)

    def caught_up(self) -> bool:
        """Whether the table holds every change committed to the staging topic so far.

        Raises:
            MixedIcebergError: the ingest job ended (failed or was cancelled) first.
        """
        if self._client is not None:
            ended = ended_because(self._client)
            if ended is not None:
                raise MixedIcebergError(f"{self.config.table}: the sink's ingest job ended: {ended}")
        return caught_up(self.config)

    def wait(self, timeout: float = 300.0) -> None:
        """Block until :meth:`caught_up` (after the user's job ended, everything it produced).

        Raises:
            TimeoutError: not caught up within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while not self.caught_up():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.config.table}: the table did not catch up with {self.staging_topic} in {timeout} s")
            time.sleep(0.2)

    def close(self) -> None:
        """Stop the ingest job (what it has not committed, the next start commits)."""
        if self._client is not None and job_status(self._client) not in TERMINAL:
            self._client.cancel().result()
        self._client = None

    def __enter__(self) -> ChangelogSink:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if kind is None:
                self.wait()
        finally:
            self.close()


def sink(
    source: Table | DataStream,
    table: str,
    *,
    env: StreamExecutionEnvironment,
    t_env: StreamTableEnvironment,
    options: SinkOptions | None = None,
) -> ChangelogSink:
    """Write a changelog ``Table`` (or a ``DataStream`` of ``Row``s with their ``RowKind``) into
    the keyed Mixed-Iceberg ``table`` (``catalog.namespace.table``), exactly once.

    Adds an INSERT into the staging topic to ``env`` (run it with ``env.execute()``), turns on
    checkpointing, restores from the latest checkpoint where ``options.restore`` says so, and
    starts the ingest job that commits the staging topic to the table (module docstring)::

        with sink(t_env.sql_query("SELECT k, COUNT(*) AS n FROM src GROUP BY k"), "local.db.t",
                  env=env, t_env=t_env):
            env.execute("my pipeline")  # leaving the block waits until the table holds it all

    Raises:
        InvalidIdentifierError: ``table`` is not ``catalog.namespace.table``.
        NotKeyedTableError: the table has no primary key.
        SchemaMismatchError: a Flink column is not a table column or its type does not fit
            (naming the column), or a key column is missing.
        ConfigError: bad options, or a jar is missing (the changelog format's is built on
            first use: :mod:`mixed_iceberg.flink.format_jar`).
        JdkNotFoundError: the format's jar must be built and no JDK is installed.
    """
    options = options or SinkOptions()
    catalog_name, identifier = _split(table)
    catalog_path = str(options.catalog_config) if options.catalog_config else None
    target = load_catalog(catalog_name, config_path=catalog_path).load_table(identifier)
    keys = list(target.primary_key)
    if not keys:
        raise NotKeyedTableError(f"{table}: the sink writes keyed tables only; expected a primary key, found none")
    changelog = t_env.from_changelog_stream(source) if isinstance(source, DataStream) else source
    # Not get_resolved_schema(): PyFlink's conversion makes every TIMESTAMP a TIMESTAMP(3), and
    # the staging table declared from it would truncate the values (mixed_iceberg._pyflink).
    names, types = column_types(changelog)
    check_sink_schema(names, types, target.arrow_schema(), keys, table=table)

    name = options.name or identifier
    bootstrap = options.bootstrap_servers or os.environ.get("MIXED_ICEBERG_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
    topic = f"mixed-iceberg-sink.{name}"
    checkpoints = (options.checkpoint_dir or Path(tempfile.gettempdir()) / "mixed-iceberg-checkpoints" / name).resolve()
    restored_from = latest_checkpoint(checkpoints) if options.restore else None
    _checkpointing(env, options.checkpoint_interval, checkpoints, restored_from)
    _add_jars(env, t_env, [*connector_jars(), format_jar()])

    staging = f"mixed_iceberg_staging_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"
    t_env.create_temporary_table(staging, _staging_descriptor(names, types, keys, topic, bootstrap, name))
    _attach_insert(t_env, staging, changelog)

    config = pin_catalog(
        IngestConfig(
            job_name=f"sink-{name}",
            catalog=catalog_name,
            catalog_config=catalog_path,
            table=identifier,
            source=SourceConfig(
                bootstrap_servers=bootstrap, topic=topic, format=CdcFormat.CHANGELOG_JSON, partitions=options.partitions
            ),
            dead_letter_topic=f"{topic}.dlq",
            parallelism=options.partitions,
            commit_interval_ms=max(100, int(options.commit_interval.total_seconds() * 1000)),
            flink=dict(options.flink),
        )
    )
    handle = ChangelogSink(config, staging, checkpoints, restored_from)
    handle.start()
    if restored_from is not None:
        log.info("sink %s: the job restores from %s", table, restored_from)
    return handle


def _checkpointing(env: StreamExecutionEnvironment, interval: timedelta, directory: Path, restore: Path | None) -> None:
    """Exactly-once checkpoints every ``interval``, kept in ``directory`` when the job is
    cancelled or fails (a kill -9 leaves them too), the job restored from ``restore``."""
    env.enable_checkpointing(int(interval.total_seconds() * 1000), CheckpointingMode.EXACTLY_ONCE)
    settings: dict[str, Any] = {
        "execution.checkpointing.dir": directory.as_uri(),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "execution.checkpointing.num-retained": "2",
    }
    if restore is not None:
        settings["execution.state-recovery.path"] = restore.as_uri()
    configuration = Configuration()
    for key, value in settings.items():
        configuration.set_string(key, str(value))
    env.configure(configuration)


def _add_jars(env: StreamExecutionEnvironment, t_env: StreamTableEnvironment, jars: list[Path]) -> None:
    """The Kafka connector and the format, for the planner (``ADD JAR``: the table environment's
    class loader) and for the job (appended to the environment's ``pipeline.jars``, which
    ``flink run`` ships)."""
    env.add_jars(*(jar.resolve().as_uri() for jar in jars))
    added = {str(row[0]) for row in t_env.execute_sql("SHOW JARS").collect()}
    for jar in jars:
        if str(jar.resolve()) not in added:
            t_env.execute_sql(f"ADD JAR '{jar.resolve()}'")


def _staging_descriptor(
    names: list[str], types: list[Any], keys: list[str], topic: str, bootstrap: str, name: str
) -> TableDescriptor:
    """The staging topic as a Flink table: keyed (Kafka key = the primary key as JSON, so a key's
    changes share a partition), written in Kafka transactions that commit with each checkpoint."""
    # A key column must be NOT NULL to be declared a key; a null key fails the job at the sink
    # (Flink's not-null enforcer), as the table would refuse it anyway.
    fields = [kind.not_null() if column in keys else kind for column, kind in zip(names, types, strict=True)]
    schema = Schema.new_builder().from_fields(names, fields).primary_key(*keys).build()
    return (
        TableDescriptor.for_connector("kafka")
        .schema(schema)
        .option("topic", topic)
        .option("properties.bootstrap.servers", bootstrap)
        .option("key.format", "json")
        .option("key.fields", ";".join(keys))
        .option("value.format", _FORMAT)
        .option("sink.delivery-guarantee", "exactly-once")
        .option("sink.transactional-id-prefix", f"mixed-iceberg-sink.{name}")
        # Below the broker's transaction.max.timeout.ms (15 min by default); Flink's default is 1 h.
        .option("properties.transaction.timeout.ms", str(10 * 60 * 1000))
        .build()
    )


def _attach_insert(t_env: StreamTableEnvironment, staging: str, changelog: Table) -> None:
    """Add ``INSERT INTO staging`` to the environment's job, translated under :data:`_PLANNER`
    (restored after, so the user's own statements keep their settings)."""
    table_config = t_env.get_config()
    previous = {key: table_config.get(key, None) for key in _PLANNER}
    for key, value in _PLANNER.items():
        table_config.set(key, value)
    try:
        statements = t_env.create_statement_set()
        statements.add_insert(staging, changelog)
        statements.attach_as_datastream()
    finally:
        for key, value in previous.items():
            if value is not None:
                table_config.set(key, value)
            else:
                table_config.get_configuration().remove_config(key)
