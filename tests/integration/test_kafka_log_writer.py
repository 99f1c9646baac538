"""KafkaLogWriter against the real broker: a missing LogStore topic is a clear error.

The broker of ``scripts/services/kafka.sh`` (like Kafka's default) creates a topic when a
producer or an admin client asks for its metadata. The writer used to take the first answer
(no partitions yet), hash keys modulo zero, and leave the broker to create a one-partition
LogStore topic; ``partition_count`` (an admin client) created the topics it looked up.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pytest

from mixed_iceberg.logstore.kafka import KafkaLogStore, KafkaLogWriter, LogStoreError
from tests.support.ingest import read_topic

pytestmark = pytest.mark.integration


def _writer(bootstrap: str, name: str) -> KafkaLogWriter:
    return KafkaLogStore(bootstrap).writer(f"test-{name}", f"test-{name}-group", f"{name}_source", 0)


def test_a_missing_logstore_topic_is_an_error_and_is_not_created(kafka_bootstrap: str) -> None:
    name = f"missing_log_{time.time_ns()}"
    writer = _writer(kafka_bootstrap, name)
    try:
        with pytest.raises(LogStoreError, match=f"expected topic {name} to exist"):
            writer.partition_count(name)
        assert KafkaLogStore(kafka_bootstrap).partition_count(name) == 0
        time.sleep(1.5)  # an auto-creation would have happened by now
        with pytest.raises(LogStoreError, match=f"expected topic {name} to exist"):
            writer.partition_count(name)  # not cached
        assert KafkaLogStore(kafka_bootstrap).partition_count(name) == 0
    finally:
        writer.close()


def test_an_existing_logstore_topic_reports_its_partitions(kafka_bootstrap: str) -> None:
    name = f"log_{time.time_ns()}"
    KafkaLogStore(kafka_bootstrap).ensure_topic(name, 3)
    writer = _writer(kafka_bootstrap, name)
    try:
        assert writer.partition_count(name) == 3
    finally:
        writer.close()


def test_a_send_larger_than_the_producer_queue_delivers_every_message_once_in_order(kafka_bootstrap: str) -> None:
    """``send`` produces in chunks and, when the producer's queue is full, waits and resumes
    from the message that did not fit: nothing is skipped or sent twice."""
    name = f"log_full_{time.time_ns()}"
    KafkaLogStore(kafka_bootstrap).ensure_topic(name, 2)
    KafkaLogStore(kafka_bootstrap).ensure_topic(f"{name}_source", 1)  # the position is committed for it
    writer = KafkaLogStore(kafka_bootstrap).writer(
        f"test-{name}", f"test-{name}-group", f"{name}_source", 0, {"queue.buffering.max.messages": 1000}
    )
    values = pa.array([f"m{i}".encode() for i in range(25_000)], pa.binary())
    partitions = (np.arange(25_000) % 3 == 0).astype(np.int32)  # 0 and 1, interleaved
    try:
        writer.open()
        writer.begin()
        writer.send(name, values, partitions)
        writer.commit(25_000)
    finally:
        writer.close()
    got, got_partitions = read_topic(kafka_bootstrap, name)
    for p in (0, 1):
        assert got.filter(pa.array(got_partitions == p)).to_pylist() == values.filter(pa.array(partitions == p)).to_pylist()
