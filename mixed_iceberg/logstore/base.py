"""The LogStore protocol: transactional writers and committed-only readers over a log transport.

A *LogWriter* owns one transactional id (one source partition of one ingest job). Everything it
sends between :meth:`LogWriter.begin` and :meth:`LogWriter.commit` becomes visible to
read-committed readers at once, together with the *position* passed to ``commit`` (the next
source offset the transaction covers). Opening a writer fences any earlier writer with the
same id and aborts its open transaction, so after a crash :meth:`LogWriter.open` returns the
position of the last transaction that really committed. Backends: Kafka
(:mod:`mixed_iceberg.logstore.kafka`) and an in-memory fake (:mod:`mixed_iceberg.logstore.memory`).
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from mixed_iceberg.exceptions import LogStoreError
from mixed_iceberg.logstore.format import decode_messages
from mixed_iceberg.typedef import ChangeAction

__all__ = ["Headers", "LogChange", "LogReader", "LogStoreConsumer", "LogStoreError", "LogWriter", "RawRecords"]

#: The record headers of one message, as Kafka keeps them: (name, value) pairs in order.
Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class RawRecords:
    """Records fetched from one log topic: values (binary) with their partitions and offsets,
    and their headers when the reader was asked for them (``None`` otherwise)."""

    values: pa.Array
    partitions: npt.NDArray[np.int32]
    offsets: npt.NDArray[np.int64]
    headers: list[Headers] | None = None

    def __post_init__(self) -> None:
        if not len(self.values) == len(self.partitions) == len(self.offsets):
            raise ValueError(
                f"expected equal lengths, found values={len(self.values)} partitions={len(self.partitions)} "
                f"offsets={len(self.offsets)}"
            )
        if self.headers is not None and len(self.headers) != len(self.values):
            raise ValueError(f"expected one header tuple per value ({len(self.values)}), found {len(self.headers)}")

    def __len__(self) -> int:
        return len(self.values)


@dataclass(frozen=True, slots=True)
class LogChange:
    """One change read from the LogStore."""

    action: ChangeAction
    row: dict[str, Any]
    partition: int
    offset: int
    upstream_id: str
    epic: int


class LogWriter(abc.ABC):
    """A transactional writer for one transactional id."""

    @abc.abstractmethod
    def open(self) -> int | None:
        """Fence earlier writers of this id, abort their open transaction; the committed position."""

    @abc.abstractmethod
    def begin(self) -> None:
        """Start a transaction."""

    @abc.abstractmethod
    def send(
        self,
        topic: str,
        values: pa.Array,
        partitions: npt.NDArray[np.int32] | None = None,
        headers: Sequence[Headers] | None = None,
    ) -> None:
        """Queue ``values`` (binary) for ``topic`` in the open transaction, at ``partitions`` if given.

        ``headers``: per value, the record's headers. For the error path (dead letters): a
        backend may send such records one Python call at a time."""

    @abc.abstractmethod
    def commit(self, position: int) -> None:
        """Commit the transaction together with ``position`` (the next source offset it covers)."""

    @abc.abstractmethod
    def abort(self) -> None:
        """Abort the open transaction; nothing of it becomes visible."""

    @abc.abstractmethod
    def partition_count(self, topic: str) -> int:
        """How many partitions ``topic`` has.

        Raises:
            LogStoreError: ``topic`` does not exist (writers never create topics).
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection (an open transaction is left to be aborted by the next writer)."""


class LogReader(abc.ABC):
    """Reads committed records of one topic, from the beginning or from given offsets."""

    @abc.abstractmethod
    def fetch(self, max_records: int = 10_000, timeout: float = 1.0) -> RawRecords:
        """The next records (possibly none)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection."""


class LogStoreConsumer:
    """Yields the LogStore's changes as typed rows, decoded column-wise from ``net1`` messages.

    >>> reader = KafkaLogStore("127.0.0.1:19092").reader("orders_log")                     # doctest: +SKIP
    >>> consumer = LogStoreConsumer(reader, table.arrow_schema())                            # doctest: +SKIP
    >>> for change in consumer.changes(idle_timeout=5): ...                                              # doctest: +SKIP
    """

    def __init__(self, reader: LogReader, schema: pa.Schema) -> None:
        self._reader = reader
        self._schema = schema

    def read_batch(self, max_records: int = 10_000, timeout: float = 1.0) -> pa.Table:
        """The next batch as Arrow: the table's columns, ``_change_action``, ``_upstream_id``,
        ``_epic``, ``_partition`` and ``_offset``."""
        raw = self._reader.fetch(max_records, timeout)
        table = decode_messages(raw.values, self._schema)
        return table.append_column("_partition", pa.array(raw.partitions, pa.int32())).append_column(
            "_offset", pa.array(raw.offsets, pa.int64())
        )

    def read_all(self, idle_timeout: float = 3.0, max_records: int = 50_000) -> pa.Table:
        """Every change until no record arrives for ``idle_timeout`` seconds."""
        batches = []
        while True:
            batch = self.read_batch(max_records, idle_timeout)
            if batch.num_rows == 0:
                break
            batches.append(batch)
        if not batches:
            return self.read_batch(0, 0.0)
        return pa.concat_tables(batches)

    def changes(self, idle_timeout: float = 3.0) -> Iterator[LogChange]:
        """Typed changes until the log is idle for ``idle_timeout`` seconds (for consumers and tests)."""
        names = self._schema.names
        while True:
            batch = self.read_batch(timeout=idle_timeout)
            if batch.num_rows == 0:
                return
            for record in batch.to_pylist():  # the consumer-facing edge: one object per change
                yield LogChange(
                    action=ChangeAction(record["_change_action"]),
                    row={name: record[name] for name in names},
                    partition=record["_partition"],
                    offset=record["_offset"],
                    upstream_id=record["_upstream_id"],
                    epic=record["_epic"],
                )

    def close(self) -> None:
        self._reader.close()
