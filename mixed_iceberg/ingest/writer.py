"""Exactly-once ingestion of one source partition into a keyed table and its LogStore.

The table is the source of truth for progress. Every ChangeStore commit of partition ``p``
carries the commit id ``(ingest/<job>/<topic>/<p>, next offset)``: the sequence *is* the next
source offset, so the table itself says where to resume, and a replayed commit is a no-op.

With a LogStore (and/or a dead-letter topic) each batch runs as::

    begin Kafka transaction -> send LogStore rows and dead letters -> commit the table
    -> commit the Kafka transaction together with the next source offset

so the Kafka side never commits what the table does not hold. After a crash between the two
commits the Kafka transaction is aborted by the next writer with the same transactional id,
whose position then lags the table's: the source is re-read from the smaller of the two,
records below the table's offset are re-emitted to the LogStore only, and records below the
LogStore's position are dropped. A read-committed LogStore consumer therefore sees every
change exactly once, in source order per key.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pyiceberg.schema import Schema

from mixed_iceberg.changestore.batch import ACTION_COLUMN
from mixed_iceberg.exceptions import CommitConflictError
from mixed_iceberg.faults import crash_point
from mixed_iceberg.format import WriterIdentity
from mixed_iceberg.format.javahash import key_hash
from mixed_iceberg.ingest.cdc import CdcParser, DeadLetters, ParsedChanges
from mixed_iceberg.ingest.dead_letter import dead_letter_headers
from mixed_iceberg.ingest.metrics import IngestMetrics, valid_event_times
from mixed_iceberg.logstore.base import LogWriter
from mixed_iceberg.logstore.format import encode_rows
from mixed_iceberg.store.commit import last_committed_sequence
from mixed_iceberg.table import MixedTable
from mixed_iceberg.typedef import action_codes

__all__ = [
    "SUMMARY_PREFIX",
    "PartitionIngestor",
    "commit_writer_id",
    "committed_offsets",
    "log_position_group",
    "log_transactional_id",
    "upstream_id",
]

log = logging.getLogger(__name__)

SUMMARY_PREFIX = "mixed-iceberg.ingest."
#: Failure tests only: a path; the first table commit of the job fails (and creates the file).
FAIL_FIRST_TABLE_COMMIT = "MIXED_ICEBERG_TEST_FAIL_FIRST_TABLE_COMMIT"


def commit_writer_id(job: str, topic: str, partition: int) -> str:
    """The commit writer of one source partition (its sequence is the next source offset)."""
    return f"ingest/{job}/{topic}/{partition}"


def log_transactional_id(job: str, topic: str, partition: int) -> str:
    """The Kafka transactional id of one source partition's LogStore writer."""
    return f"mixed-iceberg/{job}/{topic}/{partition}"


def log_position_group(job: str) -> str:
    """The consumer group whose committed offsets are the LogStore writers' positions."""
    return f"mixed-iceberg-logstore.{job}"


def upstream_id(job: str) -> bytes:
    """The 4-byte ``net1`` upstream id of a job (stable across restarts)."""
    return hashlib.sha1(job.encode()).hexdigest()[:4].encode()


def committed_offsets(table: MixedTable, job: str, topic: str, partitions: Sequence[int]) -> dict[int, int | None]:
    """The next source offset the table holds per partition (None: nothing committed yet)."""
    store = table.change_store
    if store is None:
        raise ValueError(f"{table.name}: ingestion needs a keyed table")
    store.refresh()
    return {p: last_committed_sequence(store, commit_writer_id(job, topic, p)) for p in partitions}


def _fail_first_commit_for_tests(table: str) -> None:
    marker = os.environ.get(FAIL_FIRST_TABLE_COMMIT)
    if not marker:
        return
    try:  # O_EXCL: one failure per job, across subtasks, processes and restarts
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    raise OSError(f"{table}: injected table commit failure ({FAIL_FIRST_TABLE_COMMIT})")


class PartitionIngestor:
    """Turns the records of one source partition into ChangeStore commits (and LogStore rows)."""

    def __init__(
        self,
        table: MixedTable,
        parser: CdcParser,
        *,
        job: str,
        topic: str,
        partition: int,
        log_writer: LogWriter | None = None,
        log_topic: str | None = None,
        dead_letter_topic: str | None = None,
        metrics: IngestMetrics | None = None,
        commit_retries: int = 8,
    ) -> None:
        if log_topic is not None and log_writer is None:
            raise ValueError("a LogStore topic needs a log writer")
        if dead_letter_topic is not None and log_writer is None:
            raise ValueError("a dead-letter topic needs a log writer")
        self.table = table
        self.parser = parser
        self._schema: Schema | None = None  # the Iceberg schema the parser was last checked against
        self.job, self.topic, self.partition = job, topic, partition
        self.log_writer = log_writer
        self.log_topic = log_topic
        self.dead_letter_topic = dead_letter_topic
        self.metrics = metrics or IngestMetrics()
        self.commit_retries = commit_retries
        self.writer = commit_writer_id(job, topic, partition)
        self._identity = WriterIdentity(partition_id=partition)
        self._upstream = upstream_id(job)
        self.table_next: int | None = None
        self.log_next: int | None = None

    def open(self) -> int | None:
        """Read the committed positions (fencing an earlier log writer); the offset to read from."""
        self.table_next = committed_offsets(self.table, self.job, self.topic, [self.partition])[self.partition]
        if self.log_writer is not None:
            self.log_next = self.log_writer.open()
            return self.log_next
        return self.table_next

    def close(self) -> None:
        if self.log_writer is not None:
            self.log_writer.close()

    def process(self, offsets: npt.NDArray[np.int64], values: pa.Array, *, received_ms: int | None = None) -> None:
        """Ingest one batch of records of this partition (any order; replays are dropped).

        ``received_ms``: wall-clock time the batch's first record reached the writer (recorded in
        the snapshot summary: how long records waited for their commit)."""
        offsets = np.asarray(offsets, np.int64)
        self.metrics.records_in += len(offsets)
        # Below both positions everything is already in the table and (if any) the LogStore.
        floor = min(self.table_next or 0, self.log_next or 0) if self.log_writer is not None else (self.table_next or 0)
        order = np.argsort(offsets, kind="stable")
        keep = order[offsets[order] >= floor]
        self.metrics.replayed_dropped += len(offsets) - len(keep)
        if len(keep) == 0:
            return
        offsets = offsets[keep]
        self._follow_schema()
        parsed = self.parser.parse(values.take(pa.array(keep)), offsets)
        self.metrics.tombstones += parsed.tombstones
        self._commit(parsed, int(offsets[-1]) + 1, received_ms)

    def _follow_schema(self) -> None:
        """Parse with the table's current schema: a schema change committed while the job runs
        applies from the next batch on (one catalog query per batch when nothing changed).
        The batch in flight when it lands is written with the schema it was parsed with, which
        readers resolve by field id (its rows read a column added meanwhile as null)."""
        base = self.table.base_store
        base.refresh()
        current = base.schema()
        if self._schema is not None and (current is self._schema or current == self._schema):
            self._schema = current
            return
        self.table.refresh()  # also completes a schema change cut short on the ChangeStore
        self._schema = self.table.schema()
        target = self.table.arrow_schema()
        if not self.parser.schema.equals(target):
            log.info(
                "%s: ingest %s/%d parses with schema %d from now on",
                self.table.name,
                self.topic,
                self.partition,
                self._schema.schema_id,
            )
            self.parser = CdcParser(target, self.table.primary_key, self.parser.format)

    def _commit(self, parsed: ParsedChanges, next_offset: int, received_ms: int | None = None) -> None:
        table_from = self.table_next or 0
        log_from = self.log_next or 0
        if self.log_writer is not None:
            self.log_writer.begin()
            try:
                self._send_side_outputs(parsed, log_from)
            except BaseException:
                self.log_writer.abort()
                raise
            crash_point("after-log-send")
        if next_offset > table_from:
            self._commit_table(parsed, table_from, next_offset, received_ms)
            crash_point("after-table-commit")
        if self.log_writer is not None:
            position = max(next_offset, log_from)  # a position never moves back
            self.log_writer.commit(position)
            self.log_next = position
            crash_point("after-kafka-commit")
            if next_offset <= table_from:  # a replay after a crash between the two commits
                log.info(
                    "%s: ingest commit %s/%d next=%d to the LogStore only (the table holds up to %d)",
                    self.table.name,
                    self.topic,
                    self.partition,
                    position,
                    table_from,
                )

    def _send_side_outputs(self, parsed: ParsedChanges, log_from: int) -> None:
        assert self.log_writer is not None
        if self.log_topic is not None:
            mask = parsed.offsets >= log_from
            rows = parsed.changes.filter(pa.array(mask))
            if rows.num_rows:
                actions = action_codes(rows.column(ACTION_COLUMN))
                data = rows.drop_columns([ACTION_COLUMN])
                messages = encode_rows(data, actions, upstream_id=self._upstream, epic=int(parsed.offsets[-1]) + 1)
                keys = [data.column(k) for k in self.table.primary_key]
                count = self.log_writer.partition_count(self.log_topic)
                partitions = (key_hash(keys).astype(np.int64) % count).astype(np.int32)
                self.log_writer.send(self.log_topic, messages, partitions)
                self.metrics.log_messages += len(messages)
        dead_mask = parsed.dead.offsets >= log_from
        if dead_mask.any():
            dead = DeadLetters(
                parsed.dead.offsets[dead_mask],
                parsed.dead.values.filter(pa.array(dead_mask)),
                parsed.dead.reasons.filter(pa.array(dead_mask)),
            )
            for offset, reason in zip(dead.offsets[:5].tolist(), dead.reasons[:5].to_pylist(), strict=True):
                log.warning("%s: dead letter %s/%d@%d: %s", self.table.name, self.topic, self.partition, offset, reason)
            if self.dead_letter_topic is not None:
                # Kafka Connect's DLQ record: the message's own bytes, the context in headers.
                headers = dead_letter_headers(dead, self.topic, self.partition)
                self.log_writer.send(self.dead_letter_topic, dead.values, headers=headers)
            self.metrics.dead_letters += len(dead)

    def _commit_table(self, parsed: ParsedChanges, table_from: int, next_offset: int, received_ms: int | None) -> None:
        mask = parsed.offsets >= table_from
        changes = parsed.changes.filter(pa.array(mask))
        dead = int((parsed.dead.offsets >= table_from).sum())
        if self.log_writer is None:  # otherwise counted with the LogStore's side outputs
            self.metrics.dead_letters += dead
        # The records of [table_from, next_offset) that were dead-lettered, and the event times
        # the freshness figures are taken from: the client's progress report reads them here
        # (the dead-letter topic is transactional, so its offsets over-count).
        summary = {
            f"{SUMMARY_PREFIX}topic": self.topic,
            f"{SUMMARY_PREFIX}partition": str(self.partition),
            f"{SUMMARY_PREFIX}next-offset": str(next_offset),
            f"{SUMMARY_PREFIX}rows": str(changes.num_rows),
            f"{SUMMARY_PREFIX}dead-letters": str(dead),
        }
        if received_ms is not None:
            summary[f"{SUMMARY_PREFIX}received-ms"] = str(received_ms)
        events = parsed.event_ms[mask]
        valid = events[valid_event_times(events, time.time() * 1000)]
        if len(valid):
            # Freshness p50/p99 at commit = the snapshot's timestamp minus these.
            p50, p1 = np.percentile(valid, [50, 1])
            summary[f"{SUMMARY_PREFIX}event-ms-p50"] = str(int(p50))
            summary[f"{SUMMARY_PREFIX}event-ms-p1"] = str(int(p1))
        _fail_first_commit_for_tests(self.table.name)
        started = time.monotonic()
        for attempt in range(self.commit_retries + 1):
            try:
                with self.table.new_transaction((self.writer, next_offset), summary=summary, writer=self._identity) as txn:
                    txn.write(changes)
                break
            except CommitConflictError:
                if attempt == self.commit_retries:
                    raise
                time.sleep(min(2.0, 0.05 * 2**attempt))
        duration_ms = (time.monotonic() - started) * 1000
        self.metrics.observe_commit(duration_ms, events, time.time() * 1000)
        self.metrics.changes_out += changes.num_rows
        self.table_next = next_offset
        log.info(
            "%s: ingest commit %s/%d next=%d changes=%d dead=%d commit_ms=%.0f freshness_p50_ms=%.0f p99_ms=%.0f",
            self.table.name,
            self.topic,
            self.partition,
            next_offset,
            changes.num_rows,
            self.metrics.dead_letters,
            duration_ms,
            self.metrics.last_freshness_p50_ms,
            self.metrics.last_freshness_p99_ms,
        )
