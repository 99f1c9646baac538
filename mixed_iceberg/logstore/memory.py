"""An in-memory LogStore with Kafka's transactional semantics, for tests and examples.

``MemoryLogBroker`` keeps topics as lists of partitions of records; a record carries the
transaction that wrote it and is visible to read-committed readers once that transaction
committed. Opening a writer bumps its id's epoch (fencing the previous one) and aborts the
open transaction, as Kafka's ``initTransactions`` does.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from mixed_iceberg.exceptions import LogStoreError, MixedIcebergError
from mixed_iceberg.logstore.base import Headers, LogReader, LogWriter, RawRecords

__all__ = ["MemoryLogBroker", "MemoryLogReader", "MemoryLogWriter"]

_COMMITTED, _OPEN, _ABORTED = "committed", "open", "aborted"


@dataclass
class _Txn:
    state: str = _OPEN


#: One record: value, the transaction that wrote it, headers.
_Record = tuple[bytes, _Txn, Headers]


@dataclass
class MemoryLogBroker:
    """Topics, transactions and committed positions held in memory."""

    default_partitions: int = 4
    topics: dict[str, list[list[_Record]]] = field(default_factory=dict)
    positions: dict[str, int] = field(default_factory=dict)
    epochs: dict[str, int] = field(default_factory=dict)
    open_txns: dict[str, _Txn] = field(default_factory=dict)

    def create_topic(self, topic: str, partitions: int | None = None) -> None:
        self.topics.setdefault(topic, [[] for _ in range(partitions or self.default_partitions)])

    def partitions(self, topic: str) -> list[list[_Record]]:
        """``topic``'s partitions; none when it does not exist (readers see nothing)."""
        return self.topics.get(topic, [])

    def writable(self, topic: str) -> list[list[_Record]]:
        """``topic``'s partitions for a writer: like Kafka's writer, it never creates the topic.

        Raises:
            LogStoreError: ``topic`` does not exist.
        """
        found = self.topics.get(topic)
        if found is None:
            raise LogStoreError(f"memory log broker: expected topic {topic} to exist, found none")
        return found

    def committed_records(self, topic: str) -> list[tuple[bytes, Headers]]:
        """Every committed value of ``topic`` with its headers, partition by partition (for tests)."""
        return [(value, headers) for part in self.partitions(topic) for value, txn, headers in part if txn.state == _COMMITTED]


class MemoryLogWriter(LogWriter):
    """A transactional writer on a :class:`MemoryLogBroker`."""

    def __init__(self, broker: MemoryLogBroker, transactional_id: str) -> None:
        self._broker = broker
        self._id = transactional_id
        self._epoch = -1
        self._txn: _Txn | None = None
        self._rr = itertools.count()

    def open(self) -> int | None:
        previous = self._broker.open_txns.pop(self._id, None)
        if previous is not None and previous.state == _OPEN:
            previous.state = _ABORTED
        self._epoch = self._broker.epochs.get(self._id, -1) + 1
        self._broker.epochs[self._id] = self._epoch
        return self._broker.positions.get(self._id)

    def _check_epoch(self) -> None:
        if self._broker.epochs.get(self._id) != self._epoch:
            raise MixedIcebergError(f"log writer {self._id}: fenced by a newer writer (epoch {self._epoch})")

    def begin(self) -> None:
        self._check_epoch()
        self._txn = _Txn()
        self._broker.open_txns[self._id] = self._txn

    def send(
        self,
        topic: str,
        values: pa.Array,
        partitions: npt.NDArray[np.int32] | None = None,
        headers: Sequence[Headers] | None = None,
    ) -> None:
        self._check_epoch()
        if self._txn is None:
            raise MixedIcebergError(f"log writer {self._id}: send outside a transaction")
        if headers is not None and len(headers) != len(values):
            raise ValueError(f"log writer {self._id}: expected one header tuple per value ({len(values)}), found {len(headers)}")
        parts = self._broker.writable(topic)
        targets = partitions if partitions is not None else np.array([next(self._rr) % len(parts) for _ in range(len(values))])
        for i, (value, target) in enumerate(zip(values.to_pylist(), targets.tolist(), strict=True)):
            parts[target].append((value, self._txn, tuple(headers[i]) if headers is not None else ()))

    def commit(self, position: int) -> None:
        self._check_epoch()
        if self._txn is None:
            raise MixedIcebergError(f"log writer {self._id}: commit outside a transaction")
        self._txn.state = _COMMITTED
        self._broker.positions[self._id] = position
        self._broker.open_txns.pop(self._id, None)
        self._txn = None

    def abort(self) -> None:
        if self._txn is not None:
            self._txn.state = _ABORTED
            self._broker.open_txns.pop(self._id, None)
        self._txn = None

    def partition_count(self, topic: str) -> int:
        return len(self._broker.writable(topic))

    def close(self) -> None:
        self._txn = None


class MemoryLogReader(LogReader):
    """Reads committed records from the start of every partition; stops at an open transaction."""

    def __init__(self, broker: MemoryLogBroker, topic: str) -> None:
        self._broker = broker
        self._topic = topic
        self._next: dict[int, int] = {}

    def fetch(self, max_records: int = 10_000, timeout: float = 1.0) -> RawRecords:
        values: list[bytes] = []
        headers: list[Headers] = []
        parts: list[int] = []
        offsets: list[int] = []
        for index, records in enumerate(self._broker.partitions(self._topic)):
            position = self._next.get(index, 0)
            while position < len(records) and len(values) < max_records:
                value, txn, record_headers = records[position]
                if txn.state == _OPEN:  # the last stable offset: nothing past it is readable yet
                    break
                if txn.state == _COMMITTED:
                    values.append(value)
                    headers.append(record_headers)
                    parts.append(index)
                    offsets.append(position)
                position += 1
            self._next[index] = position
        return RawRecords(pa.array(values, pa.binary()), np.array(parts, np.int32), np.array(offsets, np.int64), headers)

    def close(self) -> None:
        self._next.clear()
