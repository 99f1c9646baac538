"""The Kafka LogStore reader: an assigned (never joining) consumer, fetched in batches into Arrow."""

from __future__ import annotations

import itertools
import logging
import operator
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
from confluent_kafka import OFFSET_BEGINNING, Message, TopicPartition

from mixed_iceberg.exceptions import LogStoreError
from mixed_iceberg.logstore.base import Headers, LogReader, RawRecords
from mixed_iceberg.logstore.kafka.topics import partition_count
from mixed_iceberg.logstore.kafka.transport import KafkaTransport

__all__ = ["KafkaLogReader"]

log = logging.getLogger(__name__)


class KafkaLogReader(LogReader):
    """Reads ``topic`` (every partition, from the beginning unless ``start`` says otherwise).

    Built by :meth:`KafkaLogStore.reader <mixed_iceberg.logstore.kafka.client.KafkaLogStore.reader>`;
    its consumer is its own (an assignment is a reading session). Partitions are assigned
    directly (no group join); read-committed unless told otherwise. ``headers``: also return
    each record's headers (:attr:`RawRecords.headers`).
    """

    def __init__(
        self,
        transport: KafkaTransport,
        topic: str,
        *,
        start: Mapping[int, int] | None = None,
        read_committed: bool = True,
        headers: bool = False,
        properties: Mapping[str, Any] | None = None,
    ) -> None:
        count = partition_count(transport, topic)
        if count == 0:
            raise LogStoreError(f"topic {topic} does not exist at {transport.bootstrap}")
        self._consumer = transport.new_consumer(read_committed=read_committed, extra=properties)
        self._headers = headers
        offsets = start or {}
        self._consumer.assign([TopicPartition(topic, p, offsets.get(p, OFFSET_BEGINNING)) for p in range(count)])

    def fetch(self, max_records: int = 10_000, timeout: float = 1.0) -> RawRecords:
        """The next records as Arrow values with NumPy partitions and offsets.

        confluent-kafka hands out one ``Message`` per record; its accessors are mapped in C
        (``map`` over the unbound methods), so no Python frame runs per record. Only headers,
        when asked for (the dead-letter path), are converted record by record.
        """
        messages: list[Message] = self._consumer.consume(max_records, timeout) if max_records else []
        errors = list(map(Message.error, messages))
        good = messages
        if any(errors):
            good = list(itertools.compress(messages, map(operator.not_, errors)))
            for error in filter(None, errors):
                log.warning("kafka reader: %s", error)
        count = len(good)
        return RawRecords(
            pa.array(list(map(Message.value, good)), pa.binary()),
            np.fromiter(map(Message.partition, good), np.int32, count),
            np.fromiter(map(Message.offset, good), np.int64, count),
            list(map(_record_headers, map(Message.headers, good))) if self._headers else None,
        )

    def close(self) -> None:
        self._consumer.close()


def _record_headers(found: object) -> Headers:
    """confluent-kafka's headers of one record (a list of (name, value) pairs, or None) as bytes values."""
    if not found:
        return ()
    assert isinstance(found, list)  # what Message.headers() returns
    return tuple((str(name), value if isinstance(value, bytes) else str(value or "").encode()) for name, value in found)
