"""The Kafka LogStore writer: a transactional producer whose committed position is a source offset.

See :mod:`mixed_iceberg.logstore.kafka.offsets` for how the position is kept.
"""

from __future__ import annotations

import collections
import functools
import itertools
import logging
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from confluent_kafka import KafkaException, TopicPartition

from mixed_iceberg.exceptions import LogStoreError
from mixed_iceberg.faults import crash_point
from mixed_iceberg.logstore.base import Headers, LogWriter
from mixed_iceberg.logstore.kafka.offsets import committed
from mixed_iceberg.logstore.kafka.transport import KafkaTransport

__all__ = ["KafkaLogWriter"]

log = logging.getLogger(__name__)

#: Messages per ``produce`` loop in C: the GIL changes hands between them.
_PRODUCE_CHUNK = 4096


def _payloads(values: pa.Array) -> list[bytes]:
    """confluent-kafka takes Python bytes (the I/O edge). Through NumPy: ``to_pylist`` builds a
    pyarrow scalar per value first and costs several times as much."""
    payloads: list[bytes] = values.to_numpy(zero_copy_only=False).tolist()
    return payloads


class KafkaLogWriter(LogWriter):
    """A Kafka transactional producer whose position is the source offset of one partition.

    Built by :meth:`KafkaLogStore.writer <mixed_iceberg.logstore.kafka.client.KafkaLogStore.writer>`:
    the producer is its own (a transactional id is one producer session); the consumer that
    reads and sends the position's group metadata is the client object's, shared by its writers.

    Args:
        transport: the client object's Kafka clients and retry policy.
        transactional_id: stable per source partition and job (fencing and abort on restart).
        position_group: consumer group whose committed offset records the position.
        source_topic: the source topic the position refers to.
        source_partition: the source partition the position refers to.
        properties: extra producer properties (``log-store.properties.*``).
    """

    def __init__(
        self,
        transport: KafkaTransport,
        transactional_id: str,
        position_group: str,
        source_topic: str,
        source_partition: int,
        properties: Mapping[str, Any] | None = None,
    ) -> None:
        config: dict[str, Any] = {
            "transactional.id": transactional_id,
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 500_000,
            "transaction.timeout.ms": 120_000,
        }
        config.update(properties or {})
        self._id = transactional_id
        self._transport = transport
        self._timeout = transport.timeout
        self._producer = transport.new_producer(config)  # never auto-creates a topic (partition_count)
        self._group = position_group
        self._source = TopicPartition(source_topic, source_partition)
        self._partitions: dict[str, int] = {}

    def open(self) -> int | None:
        self._producer.init_transactions(self._timeout)
        found = committed(self._transport, self._group, [TopicPartition(self._source.topic, self._source.partition)])
        offset = found[0].offset
        return offset if offset >= 0 else None

    def begin(self) -> None:
        self._producer.begin_transaction()

    def send(
        self,
        topic: str,
        values: pa.Array,
        partitions: npt.NDArray[np.int32] | None = None,
        headers: Sequence[Headers] | None = None,
    ) -> None:
        if headers is not None:
            self._produce_with_headers(topic, _payloads(values), partitions, headers)
            return
        if partitions is None:
            self._produce(topic, _payloads(values), -1)
            return
        # produce_batch ignores a per-message "partition" for some messages (confluent-kafka
        # 2.16.1), so rows are grouped by partition (stable: per-key order is kept).
        order = np.argsort(partitions, kind="stable")
        ordered = partitions[order]
        bounds = np.flatnonzero(np.diff(ordered)) + 1
        payloads = _payloads(values.take(pa.array(order)))
        for start, stop in zip([0, *bounds.tolist()], [*bounds.tolist(), len(order)], strict=True):
            self._produce(topic, payloads[start:stop], int(ordered[start]))

    def _produce(self, topic: str, payloads: list[bytes], partition: int) -> None:
        # ``map`` over ``produce`` keeps the per-message loop in C: produce_batch needs a dict per
        # message, which cost more than the produce itself (and fed the garbage collector).
        # Positional (topic, value, key, partition): a keyword partial would build a dict per call.
        produce = functools.partial(self._producer.produce, topic)
        start = 0
        while start < len(payloads):
            # A ``map`` runs in C and holds the GIL until it ends; in chunks, other threads of
            # the process (the PyFlink harness feeding the job) get the GIL between them.
            remaining = iter(payloads[start : start + _PRODUCE_CHUNK])
            try:
                collections.deque(map(produce, remaining, itertools.repeat(None), itertools.repeat(partition)), maxlen=0)
                start += _PRODUCE_CHUNK
            except BufferError:
                # Queue full: the message that failed was taken from ``remaining`` just before;
                # let the queue drain, then resume from it.
                start = min(start + _PRODUCE_CHUNK, len(payloads)) - operator.length_hint(remaining) - 1
                self._producer.poll(0.1)
        self._producer.poll(0)

    def _produce_with_headers(
        self, topic: str, payloads: list[bytes], partitions: npt.NDArray[np.int32] | None, headers: Sequence[Headers]
    ) -> None:
        # The error path (dead letters): a Python call per message, headers as keyword.
        if len(headers) != len(payloads):
            raise ValueError(
                f"log writer {self._id}: expected one header tuple per value ({len(payloads)}), found {len(headers)}"
            )
        targets = partitions.tolist() if partitions is not None else [-1] * len(payloads)
        for payload, partition, record_headers in zip(payloads, targets, headers, strict=True):
            while True:
                try:
                    self._producer.produce(topic, payload, partition=partition, headers=list(record_headers))
                    break
                except BufferError:  # queue full: let it drain
                    self._producer.poll(0.1)
        self._producer.poll(0)

    def commit(self, position: int) -> None:
        remaining = self._producer.flush(self._timeout)
        if remaining:
            raise LogStoreError(f"log writer {self._id}: {remaining} message(s) not delivered within {self._timeout} s")
        offsets = [TopicPartition(self._source.topic, self._source.partition, position)]
        metadata = self._transport.consumer(self._group).consumer_group_metadata()
        self._producer.send_offsets_to_transaction(offsets, metadata, self._timeout)
        crash_point("after-offsets-sent")
        self._producer.commit_transaction(self._timeout)

    def abort(self) -> None:
        try:
            self._producer.abort_transaction(self._timeout)
        except KafkaException:  # no open transaction, or already fenced: nothing to undo
            log.warning("log writer %s: abort failed", self._id, exc_info=True)

    def partition_count(self, topic: str) -> int:
        """How many partitions ``topic`` has (looked up once).

        Raises:
            LogStoreError: ``topic`` does not exist. The ingest job creates it with the source's
                partition count; this writer does not let the broker create it with its default.
        """
        if topic not in self._partitions:
            metadata = self._producer.list_topics(topic, timeout=self._timeout).topics.get(topic)
            if metadata is None or metadata.error is not None or not metadata.partitions:
                found = metadata.error.str() if metadata is not None and metadata.error is not None else "no partitions"
                raise LogStoreError(f"log writer {self._id}: expected topic {topic} to exist, found {found}")
            self._partitions[topic] = len(metadata.partitions)
        return self._partitions[topic]

    def close(self) -> None:
        self._producer.flush(5)  # the position group's consumer is the client object's
