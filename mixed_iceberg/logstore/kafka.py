"""The Kafka LogStore backend (confluent-kafka): transactional writer, read-committed reader, admin.

The committed *position* of a writer is stored the way Kafka's exactly-once pipelines store
consumer progress: ``send_offsets_to_transaction`` commits offset ``position`` of the *source*
partition for a consumer group named after the job, atomically with the transaction. After
``init_transactions`` (which aborts a dead writer's open transaction) the group's committed
offset is therefore exactly what the last committed transaction covered. Kafka imports live
in this module only.
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import itertools
import logging
import operator
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # type: ignore[attr-defined]

from mixed_iceberg.exceptions import LogStoreError
from mixed_iceberg.faults import crash_point
from mixed_iceberg.logstore.base import Headers, LogReader, LogWriter, RawRecords

__all__ = [
    "KafkaLogReader",
    "KafkaLogWriter",
    "LogStoreError",
    "commit_group_offsets",
    "committed_positions",
    "ensure_partitions",
    "ensure_topic",
    "fence",
    "partition_count",
    "readable_from",
    "send_wakeups",
    "watermarks",
]

log = logging.getLogger(__name__)

_TIMEOUT = 30.0
#: Messages per ``produce`` loop in C (about 4 ms each): the GIL changes hands between them.
_PRODUCE_CHUNK = 4096


#: librdkafka lets a producer's (and an admin client's) metadata request for a missing topic
#: create it with the broker's defaults (one partition). Our topics are created explicitly.
_NO_AUTO_CREATE = {"allow.auto.create.topics": False}


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 3, **_NO_AUTO_CREATE})


def ensure_topic(bootstrap: str, topic: str, partitions: int, config: Mapping[str, str] | None = None) -> None:
    """Create ``topic`` with ``partitions`` unless it exists; returns once the broker's metadata
    shows it (right after a create, metadata can still say the topic has no partitions)."""
    admin = _admin(bootstrap)
    if topic in admin.list_topics(timeout=_TIMEOUT).topics:
        return
    future = admin.create_topics([NewTopic(topic, partitions, 1, config=dict(config or {}))])[topic]
    try:
        future.result()
    except KafkaException as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise LogStoreError(f"creating topic {topic}: {exc}") from exc
    _await_partitions(admin, topic, partitions)


def _await_partitions(admin: AdminClient, topic: str, partitions: int) -> None:
    deadline = time.monotonic() + _TIMEOUT
    while True:
        metadata = admin.list_topics(topic, timeout=_TIMEOUT).topics.get(topic)
        if metadata is not None and metadata.error is None and len(metadata.partitions) >= partitions:
            return
        if time.monotonic() > deadline:
            raise LogStoreError(f"topic {topic}: expected {partitions} partitions in the metadata within {_TIMEOUT:.0f} s")
        time.sleep(0.1)


def ensure_partitions(bootstrap: str, topic: str, partitions: int) -> None:
    """Create ``topic`` with ``partitions``, or grow it to that many (Kafka never shrinks a topic)."""
    ensure_topic(bootstrap, topic, partitions)
    if partition_count(bootstrap, topic) >= partitions:
        return
    admin = _admin(bootstrap)  # held until the future completes: a collected client fails it (_DESTROY)
    future = admin.create_partitions([NewPartitions(topic, partitions)])[topic]
    try:
        future.result()
    except KafkaException as exc:
        raise LogStoreError(f"growing topic {topic} to {partitions} partitions: {exc}") from exc
    _await_partitions(admin, topic, partitions)


def partition_count(bootstrap: str, topic: str) -> int:
    """How many partitions ``topic`` has (0 when it does not exist)."""
    metadata = _admin(bootstrap).list_topics(topic, timeout=_TIMEOUT).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return 0
    return len(metadata.partitions)


def _committed(consumer: Consumer, partitions: list[TopicPartition]) -> list[TopicPartition]:
    # A fresh group's coordinator may still be loading: retry what Kafka calls retriable.
    deadline = time.monotonic() + _TIMEOUT
    while True:
        try:
            found: list[TopicPartition] = consumer.committed(partitions, timeout=_TIMEOUT)
            return found
        except KafkaException as exc:
            error = exc.args[0]
            retriable = error.retriable() or error.code() in (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS)
            if not retriable or time.monotonic() > deadline:
                raise LogStoreError(f"fetching committed offsets: {error}") from exc
            time.sleep(0.2)


def _consumer(bootstrap: str, group: str, extra: Mapping[str, Any] | None = None) -> Consumer:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
        "log_level": 3,
    }
    config.update(extra or {})
    return Consumer(config)


#: Errors of a partition whose leader is not elected or known yet (a topic created a moment ago,
#: a broker restarting): Kafka's clients retry them, and so do we, within ``_TIMEOUT``.
_LEADER_PENDING = (
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_PARTITION,
)


def watermarks(bootstrap: str, topic: str) -> dict[int, tuple[int, int]]:
    """``{partition: (low, high)}`` offsets of ``topic``.

    Raises:
        LogStoreError: a partition's offsets are still unavailable after ``_TIMEOUT`` seconds,
            or Kafka refused the request for a reason retrying cannot mend.
    """
    consumer = _consumer(bootstrap, f"mixed-iceberg-probe-{uuid.uuid4().hex[:8]}")
    try:
        count = partition_count(bootstrap, topic)
        return {p: _watermark(consumer, TopicPartition(topic, p)) for p in range(count)}
    finally:
        consumer.close()


def _watermark(consumer: Consumer, partition: TopicPartition) -> tuple[int, int]:
    deadline = time.monotonic() + _TIMEOUT
    while True:
        try:
            low, high = consumer.get_watermark_offsets(partition, timeout=_TIMEOUT)
            return int(low), int(high)
        except KafkaException as exc:
            error = exc.args[0]
            if not (error.retriable() or error.code() in _LEADER_PENDING) or time.monotonic() > deadline:
                raise LogStoreError(f"offsets of {partition.topic} [{partition.partition}]: {error}") from exc
            time.sleep(0.2)


def readable_from(bootstrap: str, topic: str, starts: Mapping[int, int], timeout: float = _TIMEOUT) -> set[int]:
    """The partitions of ``topic`` where a read-committed consumer finds a record at or after ``starts[p]``.

    An offset below a partition's end need not hold a readable record: every Kafka transaction
    ends with a commit (or abort) marker, and a read-committed consumer skips the markers and
    the records of aborted transactions. A partition still unanswered after ``timeout`` seconds
    is counted as readable (not known to be consumed).
    """
    if not starts:
        return set()
    consumer = _consumer(bootstrap, f"mixed-iceberg-probe-{uuid.uuid4().hex[:8]}", {"enable.partition.eof": True})
    pending, found = set(starts), set()
    try:
        consumer.assign([TopicPartition(topic, p, offset) for p, offset in starts.items()])
        deadline = time.monotonic() + timeout
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


def committed_positions(
    bootstrap: str, group: str, topic: str, partitions: list[int], *, stable: bool = True
) -> dict[int, int | None]:
    """Offsets committed by consumer group ``group`` on ``topic`` (None where there is none).

    ``stable``: wait until no open transaction holds offsets of ``partitions`` (a read-committed
    fetch). A writer that died inside a transaction after sending its offsets leaves them pending
    until the broker times the transaction out (``transaction.timeout.ms``) or a writer with its
    transactional id :func:`fences <fence>` it; a stable fetch blocks until then. Not stable:
    the offsets of committed transactions only, at once (possibly behind a commit in flight).
    """
    consumer = _consumer(bootstrap, group, None if stable else {"isolation.level": "read_uncommitted"})
    try:
        found = _committed(consumer, [TopicPartition(topic, p) for p in partitions])
        return {tp.partition: (tp.offset if tp.offset >= 0 else None) for tp in found}
    finally:
        consumer.close()


def fence(bootstrap: str, transactional_ids: list[str]) -> float:
    """Fence every earlier producer of ``transactional_ids``; the seconds it took.

    ``init_transactions`` with a transactional id bumps its epoch: a producer still holding the
    old one can commit nothing more, and the transaction it left open (a crash between sending
    its offsets and committing) is aborted at once instead of when the broker times it out.
    Until then its pending offsets block every stable offset fetch of its group and its records
    hold back the last stable offset, so read-committed consumers of its partitions see nothing new.
    """
    started = time.monotonic()

    def init(transactional_id: str) -> None:
        config = {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "log_level": 3, **_NO_AUTO_CREATE}
        producer = Producer(config)
        try:
            producer.init_transactions(_TIMEOUT)
        except KafkaException as exc:
            raise LogStoreError(f"fencing transactional id {transactional_id}: {exc.args[0]}") from exc
        finally:
            producer.flush(0)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(8, len(transactional_ids)))) as pool:
        list(pool.map(init, transactional_ids))  # librdkafka waits without the GIL
    return time.monotonic() - started


def commit_group_offsets(bootstrap: str, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """Commit ``{(topic, partition): offset}`` for consumer group ``group``, which must have no
    active members (the ingest job's source group: Flink's Kafka source assigns, never joins)."""
    consumer = _consumer(bootstrap, group)
    wanted = [TopicPartition(topic, p, o) for (topic, p), o in sorted(offsets.items())]
    deadline = time.monotonic() + _TIMEOUT
    try:
        while True:
            try:
                done = consumer.commit(offsets=wanted, asynchronous=False) or []
                failed = [tp for tp in done if tp.error is not None]
                if not failed:
                    return
                raise LogStoreError(
                    f"committing offsets of group {group}: {failed[0].error} on {failed[0].topic}/{failed[0].partition}"
                )
            except KafkaException as exc:
                error = exc.args[0]
                retriable = error.retriable() or error.code() in (
                    KafkaError.NOT_COORDINATOR,
                    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                )
                if not retriable or time.monotonic() > deadline:
                    raise LogStoreError(f"committing offsets of group {group}: {error}") from exc
                time.sleep(0.2)
    finally:
        consumer.close()


def send_wakeups(bootstrap: str, topic: str) -> None:
    """An empty message to every partition of ``topic``: wakes every reader of an idle job that
    also reads ``topic`` (see :mod:`mixed_iceberg.ingest.runtime`)."""
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 3, **_NO_AUTO_CREATE})
    for partition in range(partition_count(bootstrap, topic)):
        producer.produce(topic, b"", partition=partition)
    left = producer.flush(_TIMEOUT)
    if left:
        raise LogStoreError(f"{left} wake-up messages to {topic} not delivered within {_TIMEOUT:.0f} s")


def _payloads(values: pa.Array) -> list[bytes]:
    """confluent-kafka takes Python bytes (the I/O edge). Through NumPy: ``to_pylist`` builds a
    pyarrow scalar per value first and costs several times as much."""
    payloads: list[bytes] = values.to_numpy(zero_copy_only=False).tolist()
    return payloads


def _record_headers(found: object) -> Headers:
    """confluent-kafka's headers of one record (a list of (name, value) pairs, or None) as bytes values."""
    if not found:
        return ()
    assert isinstance(found, list)  # what Message.headers() returns
    return tuple((str(name), value if isinstance(value, bytes) else str(value or "").encode()) for name, value in found)


class KafkaLogWriter(LogWriter):
    """A Kafka transactional producer whose position is the source offset of one partition.

    Args:
        bootstrap: bootstrap servers.
        transactional_id: stable per source partition and job (fencing and abort on restart).
        position_group: consumer group whose committed offset records the position.
        source_topic: the source topic the position refers to.
        source_partition: the source partition the position refers to.
        properties: extra producer properties (``log-store.properties.*``).
    """

    def __init__(
        self,
        bootstrap: str,
        transactional_id: str,
        position_group: str,
        source_topic: str,
        source_partition: int,
        properties: Mapping[str, Any] | None = None,
    ) -> None:
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 500_000,
            "transaction.timeout.ms": 120_000,
            "log_level": 3,
            **_NO_AUTO_CREATE,  # a missing LogStore topic is an error (partition_count)
        }
        config.update(properties or {})
        self._id = transactional_id
        self._producer = Producer(config)
        self._consumer = _consumer(bootstrap, position_group)
        self._source = TopicPartition(source_topic, source_partition)
        self._partitions: dict[str, int] = {}

    def open(self) -> int | None:
        self._producer.init_transactions(_TIMEOUT)
        found = _committed(self._consumer, [TopicPartition(self._source.topic, self._source.partition)])
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
        remaining = self._producer.flush(_TIMEOUT)
        if remaining:
            raise LogStoreError(f"log writer {self._id}: {remaining} message(s) not delivered within {_TIMEOUT} s")
        offsets = [TopicPartition(self._source.topic, self._source.partition, position)]
        self._producer.send_offsets_to_transaction(offsets, self._consumer.consumer_group_metadata(), _TIMEOUT)
        crash_point("after-offsets-sent")
        self._producer.commit_transaction(_TIMEOUT)

    def abort(self) -> None:
        try:
            self._producer.abort_transaction(_TIMEOUT)
        except KafkaException:  # no open transaction, or already fenced: nothing to undo
            log.warning("log writer %s: abort failed", self._id, exc_info=True)

    def partition_count(self, topic: str) -> int:
        """How many partitions ``topic`` has (looked up once).

        Raises:
            LogStoreError: ``topic`` does not exist. The ingest job creates it with the source's
                partition count; this writer does not let the broker create it with its default.
        """
        if topic not in self._partitions:
            metadata = self._producer.list_topics(topic, timeout=_TIMEOUT).topics.get(topic)
            if metadata is None or metadata.error is not None or not metadata.partitions:
                found = metadata.error.str() if metadata is not None and metadata.error is not None else "no partitions"
                raise LogStoreError(f"log writer {self._id}: expected topic {topic} to exist, found {found}")
            self._partitions[topic] = len(metadata.partitions)
        return self._partitions[topic]

    def close(self) -> None:
        self._consumer.close()
        self._producer.flush(5)


class KafkaLogReader(LogReader):
    """Reads ``topic`` (every partition, from the beginning unless ``start`` says otherwise).

    Partitions are assigned directly (no group join); read-committed unless told otherwise.
    ``headers``: also return each record's headers (:attr:`RawRecords.headers`).
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        *,
        start: Mapping[int, int] | None = None,
        read_committed: bool = True,
        headers: bool = False,
        properties: Mapping[str, Any] | None = None,
    ) -> None:
        extra = {"isolation.level": "read_committed" if read_committed else "read_uncommitted", **(properties or {})}
        self._consumer = _consumer(bootstrap, f"mixed-iceberg-reader-{uuid.uuid4().hex[:8]}", extra)
        self._headers = headers
        count = partition_count(bootstrap, topic)
        if count == 0:
            raise LogStoreError(f"topic {topic} does not exist at {bootstrap}")
        offsets = start or {}
        self._consumer.assign([TopicPartition(topic, p, offsets.get(p, OFFSET_BEGINNING)) for p in range(count)])

    def fetch(self, max_records: int = 10_000, timeout: float = 1.0) -> RawRecords:
        messages = self._consumer.consume(max_records, timeout) if max_records else []
        good = [m for m in messages if m.error() is None]
        for bad in (m for m in messages if m.error() is not None):
            log.warning("kafka reader: %s", bad.error())
        return RawRecords(
            pa.array([m.value() for m in good], pa.binary()),
            np.array([m.partition() for m in good], np.int32),
            np.array([m.offset() for m in good], np.int64),
            [_record_headers(m.headers()) for m in good] if self._headers else None,
        )

    def close(self) -> None:
        self._consumer.close()
