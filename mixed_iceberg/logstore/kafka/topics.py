"""Topics of a LogStore address: create, grow, count partitions (through the transport's one admin client)."""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import KafkaException
from confluent_kafka.admin import NewPartitions, NewTopic  # type: ignore[attr-defined]

from mixed_iceberg.exceptions import LogStoreError
from mixed_iceberg.logstore.kafka.transport import KafkaTransport

__all__ = ["ensure_partitions", "ensure_topic", "partition_count"]


def partition_count(transport: KafkaTransport, topic: str) -> int:
    """How many partitions ``topic`` has (0 when it does not exist).

    Raises:
        LogStoreError: the cluster did not answer within the transport's timeout.
    """
    try:
        metadata = transport.admin().list_topics(topic, timeout=transport.timeout).topics.get(topic)
    except KafkaException as exc:
        raise LogStoreError(f"Kafka at {transport.bootstrap} did not list topic {topic}: {exc}") from exc
    if metadata is None or metadata.error is not None:
        return 0
    return len(metadata.partitions)


def ensure_topic(transport: KafkaTransport, topic: str, partitions: int, config: Mapping[str, str] | None = None) -> None:
    """Create ``topic`` with ``partitions`` unless it exists; returns once the broker's metadata
    shows it (right after a create, metadata can still say the topic has no partitions)."""
    admin = transport.admin()
    if topic in admin.list_topics(timeout=transport.timeout).topics:
        return
    future = admin.create_topics([NewTopic(topic, partitions, 1, config=dict(config or {}))])[topic]
    try:
        future.result()
    except KafkaException as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise LogStoreError(f"creating topic {topic}: {exc}") from exc
    _await_partitions(transport, topic, partitions)


def ensure_partitions(transport: KafkaTransport, topic: str, partitions: int) -> None:
    """Create ``topic`` with ``partitions``, or grow it to that many (Kafka never shrinks a topic)."""
    ensure_topic(transport, topic, partitions)
    if partition_count(transport, topic) >= partitions:
        return
    future = transport.admin().create_partitions([NewPartitions(topic, partitions)])[topic]
    try:
        future.result()
    except KafkaException as exc:
        raise LogStoreError(f"growing topic {topic} to {partitions} partitions: {exc}") from exc
    _await_partitions(transport, topic, partitions)


def _await_partitions(transport: KafkaTransport, topic: str, partitions: int) -> None:
    if not transport.retry.until(lambda: partition_count(transport, topic) >= partitions):
        raise LogStoreError(f"topic {topic}: expected {partitions} partitions in the metadata within {transport.timeout:.0f} s")
