"""The LogStore: every change of a keyed table, double-written to a log (Kafka) for streaming readers.

The protocol (:class:`LogWriter`, :class:`LogReader`, :class:`LogStoreConsumer`) and the message
format (:mod:`mixed_iceberg.logstore.format`) are backend-free; the Kafka backend lives in
:mod:`mixed_iceberg.logstore.kafka` (the only package importing confluent-kafka; its client object
:class:`~mixed_iceberg.logstore.kafka.KafkaLogStore` owns the Kafka clients and one
:class:`~mixed_iceberg.logstore.retry.RetryPolicy`) and an in-memory fake with Kafka's transaction
semantics in :mod:`mixed_iceberg.logstore.memory` (the test double).
"""

from __future__ import annotations

from mixed_iceberg.logstore.base import LogChange, LogReader, LogStoreConsumer, LogStoreError, LogWriter, RawRecords
from mixed_iceberg.logstore.format import decode_messages, encode_rows
from mixed_iceberg.logstore.memory import MemoryLogBroker, MemoryLogReader, MemoryLogWriter

__all__ = [
    "LogChange",
    "LogReader",
    "LogStoreConsumer",
    "LogStoreError",
    "LogWriter",
    "MemoryLogBroker",
    "MemoryLogReader",
    "MemoryLogWriter",
    "RawRecords",
    "decode_messages",
    "encode_rows",
]
