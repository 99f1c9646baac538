"""What the ingest job does outside Flink: prepare the table and topics, resume, run ingestors.

:func:`prepare` runs once in the job's client process: it creates what is missing (the table
from ``create-table``, the source, dead-letter and LogStore topics) and computes where each
source partition resumes: the smaller of the table's committed offset and the LogStore's
committed position (the earliest offset where neither has any). :class:`IngestRuntime` lives
in each writer subtask and owns one :class:`PartitionIngestor` per partition it sees; a
:class:`~mixed_iceberg.ingest.buffering.PartitionBuffer` buffers records per partition until
the partition is due (``commit-interval-ms`` since its oldest buffered record, or
``commit-max-records``), and in the job a background committer thread commits it while the
engine goes on reading.

If a background commit fails, the subtask must fail so that Flink's restart strategy restarts
it (the restarted writers reopen and resume from what the table and the LogStore hold). An
exception in a background thread fails nothing, and an idle PyFlink worker is never called:
the Python function only runs when records arrive. So the job's Kafka source also reads a
job-private *wake-up* topic (at least one partition per subtask, read from its end), and the
committer, after logging the failure, writes an empty message to every partition of it: each
subtask's function is called, and the failed one raises. Wake-ups reach the function with
partition ``-1`` and are otherwise ignored, also when a restarted subtask reads them again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from mixed_iceberg.catalog import load_catalog
from mixed_iceberg.exceptions import NoSuchTableError
from mixed_iceberg.ingest.buffering import DueBatch, PartitionBuffer
from mixed_iceberg.ingest.cdc import CdcParser
from mixed_iceberg.ingest.config import IngestConfig
from mixed_iceberg.ingest.metrics import IngestMetrics
from mixed_iceberg.ingest.writer import (
    PartitionIngestor,
    committed_offsets,
    log_position_group,
    log_transactional_id,
)
from mixed_iceberg.logstore.kafka import KafkaLogStore
from mixed_iceberg.table import MixedTable

__all__ = ["IngestRuntime", "ResumePlan", "load_table", "prepare"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ResumePlan:
    """Where each source partition resumes, and why."""

    start: dict[int, int]
    table_next: dict[int, int | None]
    log_next: dict[int, int | None]


def load_table(config: IngestConfig, *, create: bool = False) -> MixedTable:
    """The target table; created from ``create-table`` when missing and ``create`` is set."""
    catalog = load_catalog(config.catalog, config_path=config.catalog_config, **config.catalog_properties)
    try:
        return catalog.load_table(config.table)
    except NoSuchTableError:
        if not create or config.create_table is None:
            raise
        spec = config.create_table
        log.info("creating table %s", config.table)
        return catalog.create_table(
            config.table,
            spec.arrow_schema(),
            primary_key=list(spec.primary_key),
            partition_by=list(spec.partition_by) or None,
            properties=spec.properties,
        )


def _side_outputs(table: MixedTable, config: IngestConfig) -> tuple[str | None, str | None]:
    """(LogStore topic, dead-letter topic) the job writes besides the table."""
    options = table.config.layout
    log_topic = options.log_store_topic if options.log_store_enabled else None
    if options.log_store_enabled and not log_topic:
        raise ValueError(f"{table.name}: log-store.enabled needs log-store.message.topic (or log-store.topic)")
    return log_topic, config.dead_letter_topic


def prepare(config: IngestConfig) -> ResumePlan:
    """Create what is missing and compute the resume offsets (in the job's client process).

    Raises:
        UnsupportedColumnTypeError: the table has a column the source format or its LogStore
            cannot carry (checked before any topic is touched).
    """
    table = load_table(config, create=True)
    config.check_columns(table.arrow_schema(), log_store=table.config.layout.log_store_enabled)
    source = config.source
    log_topic, dead_topic = _side_outputs(table, config)
    with_log = log_topic is not None or dead_topic is not None
    with KafkaLogStore(source.bootstrap_servers) as kafka, KafkaLogStore(_log_address(table, config)) as log_store:
        kafka.ensure_topic(source.topic, source.partitions)
        if log_topic is not None:
            log_store.ensure_topic(log_topic, source.partitions)
        if dead_topic is not None:
            kafka.ensure_topic(dead_topic, 1)
        marks = kafka.watermarks(source.topic)
        partitions = sorted(marks)
        table_next = committed_offsets(table, config.job_name, source.topic, partitions)
        log_next: dict[int, int | None] = dict.fromkeys(partitions)
        if with_log:
            # A writer of the last run that died inside a Kafka transaction holds its partition's
            # position (and its LogStore rows) pending until fenced: fence them all first.
            ids = [log_transactional_id(config.job_name, source.topic, p) for p in partitions]
            log.info("fenced %d LogStore writer(s) of the last run in %.2f s", len(ids), log_store.fence(ids))
            log_next = log_store.committed_positions(log_position_group(config.job_name), source.topic, partitions)
        start = {}
        for p in partitions:
            known = [table_next[p], log_next[p]] if with_log else [table_next[p]]
            # Kafka's low watermark where either side has nothing yet (retention may have moved it).
            start[p] = max(marks[p][0], min(o if o is not None else -1 for o in known))
        log.info("resume plan for %s: start=%s table=%s log=%s", source.topic, start, table_next, log_next)
        _publish_start(kafka, config, start)
    return ResumePlan(start, table_next, log_next)


def _publish_start(kafka: KafkaLogStore, config: IngestConfig, start: dict[int, int]) -> None:
    """Commit the start offsets for the source's consumer group (the Kafka source starts from
    them), the wake-up topic's at its end: wake-ups of an earlier run are not read again."""
    kafka.ensure_partitions(config.wakeup_topic, config.parallelism)
    offsets = {(config.source.topic, p): o for p, o in start.items()}
    offsets.update({(config.wakeup_topic, p): high for p, (_, high) in kafka.watermarks(config.wakeup_topic).items()})
    kafka.commit_group_offsets(config.source_group, offsets)


def _log_address(table: MixedTable, config: IngestConfig) -> str:
    return table.config.layout.log_store_address or config.source.bootstrap_servers


class IngestRuntime:
    """The ingestors of one writer subtask (one per source partition it is sent).

    :meth:`ingest` commits one batch of one partition at once; :meth:`buffer` takes records of
    any partitions and commits each partition when it is due (:class:`PartitionBuffer`).
    After :meth:`start_committer` the commits run in a background thread, so the engine keeps
    reading while a partition commits; a failure there stops it, wakes every subtask through
    the wake-up topic and is raised by the next :meth:`buffer` call (see the module docstring).
    """

    def __init__(self, config: IngestConfig) -> None:
        self.config = config
        self.table = load_table(config)
        self.parser = CdcParser(self.table.arrow_schema(), self.table.primary_key, config.source.format)
        self.log_topic, self.dead_letter_topic = _side_outputs(self.table, config)
        # Client objects build their Kafka clients on first use: the partitions' writers share one.
        self._source_kafka = KafkaLogStore(config.source.bootstrap_servers)
        self._log_store = KafkaLogStore(_log_address(self.table, config))
        self._ingestors: dict[int, PartitionIngestor] = {}
        self._buffer = PartitionBuffer(
            self._commit_due,
            interval_s=config.commit_interval_ms / 1000,
            max_records=config.commit_max_records,
            threads=config.commit_threads,
            prepare=self._ingestor,  # opens a partition's writers while its first records wait
            on_failure=self._background_failure,
            name=self.table.name,
        )

    def _ingestor(self, partition: int) -> PartitionIngestor:
        found = self._ingestors.get(partition)
        if found is not None:
            return found
        config, topic = self.config, self.config.source.topic
        writer = None
        if self.log_topic is not None or self.dead_letter_topic is not None:
            writer = self._log_store.writer(
                log_transactional_id(config.job_name, topic, partition),
                log_position_group(config.job_name),
                topic,
                partition,
            )
        ingestor = PartitionIngestor(
            load_table(config),  # its own: partitions commit from different threads
            self.parser,
            job=config.job_name,
            topic=topic,
            partition=partition,
            log_writer=writer,
            log_topic=self.log_topic,
            dead_letter_topic=self.dead_letter_topic,
            metrics=IngestMetrics(),  # updated by the one thread that commits this partition
        )
        start = ingestor.open()
        log.info(
            "%s: partition %d opened (table next=%s, log next=%s, reading from %s)",
            self.table.name,
            partition,
            ingestor.table_next,
            ingestor.log_next,
            start,
        )
        self._ingestors[partition] = ingestor
        return ingestor

    @property
    def metrics(self) -> IngestMetrics:
        """The partitions' counters and latest figures, added up now."""
        return IngestMetrics.total([ingestor.metrics for ingestor in list(self._ingestors.values())])

    def ingest(self, partition: int, offsets: npt.NDArray[np.int64], values: pa.Array, *, received_ms: int | None = None) -> None:
        """One batch of ``partition``, committed now."""
        self._ingestor(partition).process(offsets, values, received_ms=received_ms)

    def _commit_due(self, batch: DueBatch) -> None:
        self.ingest(batch.partition, batch.offsets, batch.values, received_ms=batch.received_ms)

    def buffer(self, partitions: npt.NDArray[np.int32], offsets: npt.NDArray[np.int64], values: pa.Array) -> None:
        """Records of any partitions (in source order per partition); commits the partitions that are due.

        Raises:
            WriterFailedError: an earlier commit failed; this subtask must fail (and be restarted).
        """
        self._buffer.add(partitions, offsets, values)

    def flush_due(self) -> None:
        """Commit every partition that is due (inline, unless the committer runs)."""
        self._buffer.flush_due()

    def start_committer(self) -> None:
        """Commit in a background thread from now on, also while no records arrive."""
        self._buffer.start()

    def _background_failure(self, exc: BaseException) -> None:
        log.error(
            "%s: background commit failed; waking the job through %s to fail this subtask (Flink then "
            "restarts it, and it resumes from what the table and the LogStore hold)",
            self.table.name,
            self.config.wakeup_topic,
            exc_info=exc,
        )
        try:
            self._source_kafka.send_wakeups(self.config.wakeup_topic)
        except Exception:  # then the next record fails the subtask
            log.exception(
                "%s: could not write to %s; the next record fails this subtask", self.table.name, self.config.wakeup_topic
            )

    def close(self) -> None:
        """Commit what is buffered (a bounded source ends here; a cancelled job may as well keep
        what it read), stop the committer and release the writers.

        Raises:
            WriterFailedError: a background commit had failed and no :meth:`buffer` call has
                raised it yet. A bounded source reads its wake-up partitions only up to their end
                at launch, so it may reach its end without noticing; it must not finish as if
                everything were committed. (After :meth:`buffer` raised, PyFlink closes the
                function while handling that error; raising again would replace it.)
        """
        try:
            self._buffer.close()
        finally:
            totals = IngestMetrics.total([ingestor.metrics for ingestor in self._ingestors.values()], samples=True)
            log.info("%s: ingest writer closing: %s", self.table.name, totals.summary())
            for ingestor in self._ingestors.values():
                ingestor.close()
            self._log_store.close()  # after its writers
            self._source_kafka.close()
