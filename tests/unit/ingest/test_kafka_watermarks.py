"""Offsets of a partition whose leader is not elected yet are retried, not a crash of the job.

The ingest job reads its wake-up topic's offsets right after creating it; a broker answers
NOT_LEADER_FOR_PARTITION until the leader is elected (seen once in CI, where it killed the job
at start). The real broker cannot be made to answer that on demand, so a consumer double does.
"""

from __future__ import annotations

import pytest

pytest.importorskip("confluent_kafka", reason="the kafka extra: the retry classifies confluent_kafka's errors")

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mixed_iceberg.logstore import LogStoreError
from mixed_iceberg.logstore.kafka.offsets import watermark
from mixed_iceberg.logstore.kafka.transport import KafkaTransport
from mixed_iceberg.logstore.retry import RetryPolicy


def _transport() -> KafkaTransport:
    """No broker is asked: the consumer double answers, and the policy does not wait."""
    return KafkaTransport("127.0.0.1:9", RetryPolicy(sleep=lambda _: None))


class _Consumer:
    def __init__(self, failures: list[int]) -> None:
        self.failures = failures
        self.calls = 0

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float) -> tuple[int, int]:
        self.calls += 1
        if self.failures:
            raise KafkaException(KafkaError(self.failures.pop(0)))
        return 0, 42


def test_a_partition_without_a_leader_yet_is_asked_again() -> None:
    consumer = _Consumer([KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE])
    assert watermark(_transport(), consumer, TopicPartition("t", 0)) == (0, 42)  # type: ignore[arg-type]
    assert consumer.calls == 3


def test_an_error_retrying_cannot_mend_is_a_logstore_error_at_once() -> None:
    consumer = _Consumer([KafkaError.TOPIC_AUTHORIZATION_FAILED])
    with pytest.raises(LogStoreError, match=r"offsets of t \[3\]"):
        watermark(_transport(), consumer, TopicPartition("t", 3))  # type: ignore[arg-type]
    assert consumer.calls == 1


def test_a_cluster_that_does_not_answer_is_a_logstore_error_naming_it() -> None:
    """Counting a topic's partitions (the first thing the ingest client and serve's lag metric
    ask) on a cluster that is not there: a LogStoreError naming the address, not confluent_kafka's
    KafkaException (which printed a traceback from the ingest client)."""
    from mixed_iceberg.logstore.kafka.topics import partition_count

    transport = KafkaTransport("127.0.0.1:9", RetryPolicy(timeout=1.0))
    try:
        with pytest.raises(LogStoreError, match=r"Kafka at 127\.0\.0\.1:9 did not list topic orders"):
            partition_count(transport, "orders")
    finally:
        transport.close()
