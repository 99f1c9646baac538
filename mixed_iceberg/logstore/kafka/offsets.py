"""Offsets at a LogStore address: partitions' watermarks, consumer groups' committed offsets, fencing.

The committed *position* of a LogStore writer is stored the way Kafka's exactly-once pipelines
store consumer progress: ``send_offsets_to_transaction`` commits offset ``position`` of the
*source* partition for a consumer group named after the job, atomically with the transaction.
After ``init_transactions`` (which aborts a dead writer's open transaction) the group's committed
offset is therefore exactly what the last committed transaction covered.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from mixed_iceberg.exceptions import LogStoreError
from mixed_iceberg.logstore.kafka.topics import partition_count
from mixed_iceberg.logstore.kafka.transport import KafkaTransport

__all__ = [
    "commit_group_offsets",
    "committed",
    "committed_positions",
    "fence",
    "readable_from",
    "watermark",
    "watermarks",
]


def watermarks(transport: KafkaTransport, topic: str) -> dict[int, tuple[int, int]]:
    """``{partition: (low, high)}`` offsets of ``topic``.

    Raises:
        LogStoreError: a partition's offsets are still unavailable when the retry policy gives
            up, or Kafka refused the request for a reason retrying cannot mend.
    """
    consumer = transport.consumer()
    return {p: watermark(transport, consumer, TopicPartition(topic, p)) for p in range(partition_count(transport, topic))}


def watermark(transport: KafkaTransport, consumer: Consumer, partition: TopicPartition) -> tuple[int, int]:
    """``(low, high)`` offsets of one partition; a partition whose leader is not elected yet is asked again."""

    def ask() -> tuple[int, int]:
        low, high = consumer.get_watermark_offsets(partition, timeout=transport.timeout)
        return int(low), int(high)

    return transport.call(ask, f"offsets of {partition.topic} [{partition.partition}]")


def committed(
    transport: KafkaTransport, group: str, partitions: list[TopicPartition], *, stable: bool = True
) -> list[TopicPartition]:
    """The offsets ``group`` committed on ``partitions`` (a fresh group's coordinator may still be loading)."""
    consumer = transport.consumer(group, read_committed=stable)
    found: list[TopicPartition] = transport.call(
        lambda: consumer.committed(partitions, timeout=transport.timeout), f"fetching committed offsets of group {group}"
    )
    return found


def committed_positions(
    transport: KafkaTransport, group: str, topic: str, partitions: list[int], *, stable: bool = True
) -> dict[int, int | None]:
    """Offsets committed by consumer group ``group`` on ``topic`` (None where there is none).

    ``stable``: wait until no open transaction holds offsets of ``partitions`` (a read-committed
    fetch). A writer that died inside a transaction after sending its offsets leaves them pending
    until the broker times the transaction out (``transaction.timeout.ms``) or a writer with its
    transactional id :func:`fences <fence>` it; a stable fetch blocks until then. Not stable:
    the offsets of committed transactions only, at once (possibly behind a commit in flight).
    """
    found = committed(transport, group, [TopicPartition(topic, p) for p in partitions], stable=stable)
    return {tp.partition: (tp.offset if tp.offset >= 0 else None) for tp in found}


def commit_group_offsets(transport: KafkaTransport, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """Commit ``{(topic, partition): offset}`` for consumer group ``group``, which must have no
    active members (the ingest job's source group: Flink's Kafka source assigns, never joins)."""
    consumer = transport.consumer(group)
    wanted = [TopicPartition(topic, p, o) for (topic, p), o in sorted(offsets.items())]
    done = transport.call(lambda: consumer.commit(offsets=wanted, asynchronous=False), f"committing offsets of group {group}")
    failed = [tp for tp in done or [] if tp.error is not None]
    if failed:
        raise LogStoreError(f"committing offsets of group {group}: {failed[0].error} on {failed[0].topic}/{failed[0].partition}")


def readable_from(transport: KafkaTransport, topic: str, starts: Mapping[int, int], timeout: float | None = None) -> set[int]:
    """The partitions of ``topic`` where a read-committed consumer finds a record at or after ``starts[p]``.

    An offset below a partition's end need not hold a readable record: every Kafka transaction
    ends with a commit (or abort) marker, and a read-committed consumer skips the markers and
    the records of aborted transactions. A partition still unanswered after ``timeout`` seconds
    (the retry policy's by default) is counted as readable (not known to be consumed).
    """
    if not starts:
        return set()
    # An assignment of its own: a read, not a look-up, so not the transport's shared consumer.
    consumer = transport.new_consumer(extra={"enable.partition.eof": True})
    pending, found = set(starts), set()
    try:
        consumer.assign([TopicPartition(topic, p, offset) for p, offset in starts.items()])
        deadline = time.monotonic() + (transport.timeout if timeout is None else timeout)
        while pending and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            partition = message.partition() if message is not None else None
            if message is None or partition not in pending:
                continue  # also client-wide errors (no partition): librdkafka retries them
            error = message.error()
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                raise LogStoreError(f"reading {topic} [{partition}] from offset {starts[partition]}: {error}")
            pending.discard(partition)
            if error is None:
                found.add(partition)
        return found | pending
    finally:
        consumer.close()


def fence(transport: KafkaTransport, transactional_ids: list[str]) -> float:
    """Fence every earlier producer of ``transactional_ids``; the seconds it took.

    ``init_transactions`` with a transactional id bumps its epoch: a producer still holding the
    old one can commit nothing more, and the transaction it left open (a crash between sending
    its offsets and committing) is aborted at once instead of when the broker times it out.
    Until then its pending offsets block every stable offset fetch of its group and its records
    hold back the last stable offset, so read-committed consumers of its partitions see nothing new.
    """
    started = time.monotonic()

    def init(transactional_id: str) -> None:
        producer = transport.new_producer({"transactional.id": transactional_id})  # a session per id
        try:
            producer.init_transactions(transport.timeout)
        except KafkaException as exc:
            raise LogStoreError(f"fencing transactional id {transactional_id}: {exc.args[0]}") from exc
        finally:
            producer.flush(0)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(8, len(transactional_ids)))) as pool:
        list(pool.map(init, transactional_ids))  # librdkafka waits without the GIL
    return time.monotonic() - started
