"""The Kafka clients of one LogStore client object, and how their failures are retried.

:class:`KafkaTransport` is the layer under :class:`~mixed_iceberg.logstore.kafka.client.KafkaLogStore`
(the pattern of httpx's transports): it builds each confluent-kafka client once and reuses it
(one ``AdminClient``, one plain ``Producer``, one ``Consumer`` per consumer group and isolation
level), and runs every blocking call through one :class:`~mixed_iceberg.logstore.retry.RetryPolicy`
that knows which Kafka errors are transient. Clients with a session of their own (a
transactional producer per transactional id, a reader's assigned consumer) are built here
from the same settings but owned by whoever asked for them.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from mixed_iceberg.exceptions import LogStoreError
from mixed_iceberg.logstore.retry import RetryPolicy

__all__ = ["KafkaTransport", "retriable"]

T = TypeVar("T")

#: librdkafka lets a producer's (and an admin client's) metadata request for a missing topic
#: create it with the broker's defaults (one partition). Our topics are created explicitly.
NO_AUTO_CREATE = {"allow.auto.create.topics": False}

#: Errors Kafka's own clients wait out besides those it flags retriable: a group coordinator that
#: moved or is still loading (a fresh group), a partition whose leader is not elected or known yet
#: (a topic created a moment ago, a broker restarting).
_TRANSIENT = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_PARTITION,
    }
)


def retriable(exc: Exception) -> bool:
    """Whether ``exc`` is a Kafka error worth asking again (what Kafka calls retriable, or transient)."""
    if not isinstance(exc, KafkaException):
        return False
    error = exc.args[0]
    return bool(error.retriable()) or error.code() in _TRANSIENT


class KafkaTransport:
    """The Kafka clients (built on first use, then reused) and the retry policy of one address.

    Thread-safe: the ingest job's partitions open their writers from several threads.
    """

    def __init__(self, bootstrap: str, retry: RetryPolicy | None = None) -> None:
        self.bootstrap = bootstrap
        self.retry = retry or RetryPolicy()
        self._lock = threading.Lock()
        self._admin: AdminClient | None = None
        self._producer: Producer | None = None
        self._consumers: dict[tuple[str, bool], Consumer] = {}
        self._probe_group = f"mixed-iceberg-probe-{uuid.uuid4().hex[:8]}"

    @property
    def timeout(self) -> float:
        """Seconds a single blocking call may take (the policy's timeout)."""
        return self.retry.timeout

    def call(self, operation: Callable[[], T], describe: str) -> T:
        """``operation()`` under the retry policy; a final Kafka error is a :class:`LogStoreError`."""
        try:
            return self.retry.call(operation, retriable=retriable)
        except KafkaException as exc:
            raise LogStoreError(f"{describe}: {exc.args[0]}") from exc

    def admin(self) -> AdminClient:
        """The one admin client (metadata, topics)."""
        with self._lock:
            if self._admin is None:
                self._admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 3, **NO_AUTO_CREATE})
            return self._admin

    def producer(self) -> Producer:
        """The one non-transactional producer (wake-up messages)."""
        with self._lock:
            if self._producer is None:
                self._producer = Producer({"bootstrap.servers": self.bootstrap, "log_level": 3, **NO_AUTO_CREATE})
            return self._producer

    def consumer(self, group: str | None = None, *, read_committed: bool = True) -> Consumer:
        """The one consumer of ``group`` (offsets of that group) at that isolation level; never
        assigned or subscribed, so it never joins the group. No group: this transport's probe."""
        key = (group or self._probe_group, read_committed)
        with self._lock:
            found = self._consumers.get(key)
            if found is None:
                found = self._consumers[key] = self.new_consumer(key[0], read_committed=read_committed)
            return found

    def new_consumer(
        self, group: str | None = None, *, read_committed: bool = True, extra: Mapping[str, Any] | None = None
    ) -> Consumer:
        """A consumer the caller owns (and closes): for an assignment of its own."""
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": group or f"mixed-iceberg-reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if read_committed else "read_uncommitted",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
            "log_level": 3,
        }
        config.update(extra or {})
        return Consumer(config)

    def new_producer(self, properties: Mapping[str, Any]) -> Producer:
        """A producer the caller owns: a transactional one has a session per transactional id."""
        return Producer({"bootstrap.servers": self.bootstrap, "log_level": 3, **NO_AUTO_CREATE, **properties})

    def close(self) -> None:
        """Close the consumers and deliver what the producer still queues (within the timeout)."""
        with self._lock:
            consumers, self._consumers = list(self._consumers.values()), {}
            producer, self._producer = self._producer, None
            self._admin = None
        for consumer in consumers:
            consumer.close()
        if producer is not None:
            producer.flush(self.timeout)
