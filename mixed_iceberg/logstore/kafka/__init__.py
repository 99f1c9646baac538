"""The Kafka LogStore backend (confluent-kafka): the only package importing it.

:class:`KafkaLogStore` is the client object (topics, offsets, writers, readers of one address);
under it, :mod:`.transport` owns the Kafka clients and the retry policy, :mod:`.topics` and
:mod:`.offsets` are the admin side, :mod:`.writer` and :mod:`.reader` the data side.
"""

from __future__ import annotations

from mixed_iceberg.exceptions import LogStoreError
from mixed_iceberg.logstore.kafka.client import KafkaLogStore
from mixed_iceberg.logstore.kafka.reader import KafkaLogReader
from mixed_iceberg.logstore.kafka.writer import KafkaLogWriter
from mixed_iceberg.logstore.retry import RetryPolicy

__all__ = ["KafkaLogReader", "KafkaLogStore", "KafkaLogWriter", "LogStoreError", "RetryPolicy"]
