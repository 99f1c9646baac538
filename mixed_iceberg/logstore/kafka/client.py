"""The Kafka LogStore client object: one address, its Kafka clients, one retry policy, a small API.

>>> with KafkaLogStore("127.0.0.1:19092") as store:  # doctest: +SKIP
...     store.ensure_topic("orders_log", 4)
...     reader = store.reader("orders_log")
...     records = reader.fetch()
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any

from mixed_iceberg.exceptions import LogStoreError
from mixed_iceberg.logstore.kafka import offsets, topics
from mixed_iceberg.logstore.kafka.reader import KafkaLogReader
from mixed_iceberg.logstore.kafka.transport import KafkaTransport
from mixed_iceberg.logstore.kafka.writer import KafkaLogWriter
from mixed_iceberg.logstore.retry import RetryPolicy

__all__ = ["KafkaLogStore"]


class KafkaLogStore:
    """Topics, offsets, writers and readers of one Kafka address.

    Owns its Kafka clients (:class:`~mixed_iceberg.logstore.kafka.transport.KafkaTransport`:
    one admin client, one producer, one consumer per consumer group) and retries what Kafka
    reports as transient under one :class:`~mixed_iceberg.logstore.retry.RetryPolicy`. Close it
    (or use it as a context manager) when done; writers and readers it built are closed by
    their owners.

    Args:
        bootstrap: bootstrap servers.
        retry: when to give up on a transient failure (30 s by default).
    """

    def __init__(self, bootstrap: str, *, retry: RetryPolicy | None = None) -> None:
        self.transport = KafkaTransport(bootstrap, retry)

    @property
    def bootstrap(self) -> str:
        return self.transport.bootstrap

    def ensure_topic(self, topic: str, partitions: int, config: Mapping[str, str] | None = None) -> None:
        """Create ``topic`` with ``partitions`` unless it exists (see :func:`~.topics.ensure_topic`)."""
        topics.ensure_topic(self.transport, topic, partitions, config)

    def ensure_partitions(self, topic: str, partitions: int) -> None:
        """Create ``topic`` or grow it to ``partitions`` (see :func:`~.topics.ensure_partitions`)."""
        topics.ensure_partitions(self.transport, topic, partitions)

    def partition_count(self, topic: str) -> int:
        """How many partitions ``topic`` has (0 when it does not exist)."""
        return topics.partition_count(self.transport, topic)

    def watermarks(self, topic: str) -> dict[int, tuple[int, int]]:
        """``{partition: (low, high)}`` offsets of ``topic`` (see :func:`~.offsets.watermarks`)."""
        return offsets.watermarks(self.transport, topic)

    def readable_from(self, topic: str, starts: Mapping[int, int], timeout: float | None = None) -> set[int]:
        """Partitions with a read-committed record at or after ``starts[p]`` (see :func:`~.offsets.readable_from`)."""
        return offsets.readable_from(self.transport, topic, starts, timeout)

    def committed_positions(self, group: str, topic: str, partitions: list[int], *, stable: bool = True) -> dict[int, int | None]:
        """Offsets ``group`` committed on ``topic`` (see :func:`~.offsets.committed_positions`)."""
        return offsets.committed_positions(self.transport, group, topic, partitions, stable=stable)

    def commit_group_offsets(self, group: str, positions: Mapping[tuple[str, int], int]) -> None:
        """Commit ``{(topic, partition): offset}`` for a group without members (see :func:`~.offsets.commit_group_offsets`)."""
        offsets.commit_group_offsets(self.transport, group, positions)

    def fence(self, transactional_ids: list[str]) -> float:
        """Fence earlier producers of ``transactional_ids``; the seconds it took (see :func:`~.offsets.fence`)."""
        return offsets.fence(self.transport, transactional_ids)

    def send_wakeups(self, topic: str) -> None:
        """An empty message to every partition of ``topic``: wakes every reader of an idle job that
        also reads ``topic`` (see :mod:`mixed_iceberg.ingest.runtime`)."""
        producer = self.transport.producer()
        for partition in range(self.partition_count(topic)):
            producer.produce(topic, b"", partition=partition)
        left = producer.flush(self.transport.timeout)
        if left:
            raise LogStoreError(f"{left} wake-up messages to {topic} not delivered within {self.transport.timeout:.0f} s")

    def writer(
        self,
        transactional_id: str,
        position_group: str,
        source_topic: str,
        source_partition: int,
        properties: Mapping[str, Any] | None = None,
    ) -> KafkaLogWriter:
        """A transactional writer whose position is ``source_topic``'s ``source_partition`` offset."""
        return KafkaLogWriter(self.transport, transactional_id, position_group, source_topic, source_partition, properties)

    def reader(
        self,
        topic: str,
        *,
        start: Mapping[int, int] | None = None,
        read_committed: bool = True,
        headers: bool = False,
        properties: Mapping[str, Any] | None = None,
    ) -> KafkaLogReader:
        """A reader of every partition of ``topic`` (see :class:`KafkaLogReader`)."""
        return KafkaLogReader(
            self.transport, topic, start=start, read_committed=read_committed, headers=headers, properties=properties
        )

    def close(self) -> None:
        """Close the Kafka clients this object owns."""
        self.transport.close()

    def __enter__(self) -> KafkaLogStore:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None) -> None:
        self.close()
