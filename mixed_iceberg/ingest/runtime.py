"""What the ingest job does outside Flink: prepare the table and topics, resume, run ingestors.

:func:`prepare` runs once in the job's client process: it creates what is missing (the table
from ``create-table``, the source, dead-letter and LogStore topics) and computes where each
source partition resumes: the smaller of the table's committed offset and the LogStore's
committed position (the earliest offset where neither has any). :class:`IngestRuntime` lives
in each writer subtask and owns one :class:`PartitionIngestor` per partition it sees.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from mixed_iceberg.catalog import load_catalog
from mixed_iceberg.exceptions import NoSuchTableError
from mixed_iceberg.ingest.cdc import CdcParser
from mixed_iceberg.ingest.config import IngestConfig
from mixed_iceberg.ingest.metrics import IngestMetrics
from mixed_iceberg.ingest.writer import (
    PartitionIngestor,
    committed_offsets,
    log_position_group,
    log_transactional_id,
)
from mixed_iceberg.logstore.kafka import KafkaLogWriter, committed_positions, ensure_topic, watermarks
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
    catalog = load_catalog(config.catalog, config_path=config.catalog_config)
    try:
        return catalog.load_table(config.table)
    except NoSuchTableError:
        if not create or config.create_table is None:
            raise
        spec = config.create_table
        log.info("creating table %s", config.table)
        return catalog.create_table(
            config.table, spec.arrow_schema(), primary_key=list(spec.primary_key), properties=spec.properties
        )


def _side_outputs(table: MixedTable, config: IngestConfig) -> tuple[str | None, str | None]:
    """(LogStore topic, dead-letter topic) the job writes besides the table."""
    options = table.options
    log_topic = options.log_store_topic if options.log_store_enabled else None
    if options.log_store_enabled and not log_topic:
        raise ValueError(f"{table.name}: log-store.enabled needs log-store.message.topic (or log-store.topic)")
    return log_topic, config.dead_letter_topic


def prepare(config: IngestConfig) -> ResumePlan:
    """Create what is missing and compute the resume offsets (in the job's client process)."""
    table = load_table(config, create=True)
    source = config.source
    ensure_topic(source.bootstrap_servers, source.topic, source.partitions)
    log_topic, dead_topic = _side_outputs(table, config)
    if log_topic is not None:
        ensure_topic(table.options.log_store_address or source.bootstrap_servers, log_topic, source.partitions)
    if dead_topic is not None:
        ensure_topic(source.bootstrap_servers, dead_topic, 1)
    marks = watermarks(source.bootstrap_servers, source.topic)
    partitions = sorted(marks)
    table_next = committed_offsets(table, config.job_name, source.topic, partitions)
    log_next: dict[int, int | None] = dict.fromkeys(partitions)
    if log_topic is not None or dead_topic is not None:
        log_next = committed_positions(_log_address(table, config), log_position_group(config.job_name), source.topic, partitions)
    with_log = log_topic is not None or dead_topic is not None
    start = {}
    for p in partitions:
        known = [table_next[p], log_next[p]] if with_log else [table_next[p]]
        # Kafka's low watermark where either side has nothing yet (retention may have moved it).
        start[p] = max(marks[p][0], min(o if o is not None else -1 for o in known))
    log.info("resume plan for %s: start=%s table=%s log=%s", source.topic, start, table_next, log_next)
    return ResumePlan(start, table_next, log_next)


def _log_address(table: MixedTable, config: IngestConfig) -> str:
    return table.options.log_store_address or config.source.bootstrap_servers


class IngestRuntime:
    """The ingestors of one writer subtask (one per source partition it is sent)."""

    def __init__(self, config: IngestConfig) -> None:
        self.config = config
        self.table = load_table(config)
        self.parser = CdcParser(self.table.arrow_schema(), self.table.primary_key, config.source.format)
        self.log_topic, self.dead_letter_topic = _side_outputs(self.table, config)
        self.metrics = IngestMetrics()
        self._ingestors: dict[int, PartitionIngestor] = {}

    def _ingestor(self, partition: int) -> PartitionIngestor:
        found = self._ingestors.get(partition)
        if found is not None:
            return found
        config, topic = self.config, self.config.source.topic
        writer = None
        if self.log_topic is not None or self.dead_letter_topic is not None:
            writer = KafkaLogWriter(
                _log_address(self.table, config),
                log_transactional_id(config.job_name, topic, partition),
                log_position_group(config.job_name),
                topic,
                partition,
            )
        ingestor = PartitionIngestor(
            self.table.refresh(),
            self.parser,
            job=config.job_name,
            topic=topic,
            partition=partition,
            log_writer=writer,
            log_topic=self.log_topic,
            dead_letter_topic=self.dead_letter_topic,
            metrics=self.metrics,
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

    def ingest(self, partition: int, offsets: npt.NDArray[np.int64], values: pa.Array) -> None:
        """One batch of ``partition``."""
        self._ingestor(partition).process(offsets, values)

    def close(self) -> None:
        log.info("%s: ingest writer closing: %s", self.table.name, self.metrics.summary())
        for ingestor in self._ingestors.values():
            ingestor.close()
        self._ingestors.clear()
