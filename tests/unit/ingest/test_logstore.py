"""LogStore: the net1 message format round-trips column-wise; the in-memory fake behaves like Kafka."""

from __future__ import annotations

import datetime
import math

import numpy as np
import pyarrow as pa
import pytest

from mixed_iceberg.logstore import (
    LogStoreConsumer,
    LogStoreError,
    MemoryLogBroker,
    MemoryLogReader,
    MemoryLogWriter,
    decode_messages,
    encode_rows,
)
from mixed_iceberg.logstore.format import MAGIC, header
from mixed_iceberg.typedef import ChangeAction

ROWS = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int64()),
        "name": ['quote " backslash \\ newline \n', None, "\x01ctl"],
        "day": pa.array([datetime.date(2024, 1, 2), None, datetime.date(1999, 12, 31)]),
        "ratio": [float("-inf"), float("nan"), None],
        "scale": pa.array([float("inf"), -0.0, 1e-300], pa.float32()),
        "flag": [True, False, None],
    }
)


def test_messages_carry_amoros_net1_header_and_round_trip() -> None:
    messages = encode_rows(ROWS, np.array([0, 2, 3], np.int8), upstream_id=b"abcd", epic=42)
    first = messages[0].as_py()
    assert first.startswith(MAGIC + b"abcd" + (42).to_bytes(8, "big") + b"\x00\x00{")
    assert header(b"abcd", 42, 3) == MAGIC + b"abcd" + (42).to_bytes(8, "big") + b"\x00\x03"
    decoded = decode_messages(messages, ROWS.schema)
    assert decoded.column("_change_action").to_pylist() == ["+I", "+U", "-D"]
    assert decoded.column("_epic").to_pylist() == [42, 42, 42]
    assert decoded.column("name").to_pylist() == ROWS.column("name").to_pylist()
    assert decoded.column("day").to_pylist() == ROWS.column("day").to_pylist()
    ratio = decoded.column("ratio").to_pylist()  # not null: NaN and the infinities keep their values
    assert (ratio[0], math.isnan(ratio[1]), ratio[2]) == (float("-inf"), True, None)
    assert decoded.column("scale").to_pylist() == ROWS.column("scale").to_pylist()
    assert math.copysign(1.0, decoded.column("scale")[1].as_py()) == -1.0, "-0.0 keeps its sign"
    assert decode_messages(messages.slice(1), ROWS.schema).column("id").to_pylist() == [2, 3]


def test_a_message_without_the_version_header_is_rejected() -> None:
    with pytest.raises(ValueError, match="net"):
        decode_messages(pa.array([b'xxxxxxxxxxxxxxxxxx{"id":1}']), ROWS.schema)


def test_fake_hides_aborted_and_open_transactions_and_fences_old_writers() -> None:
    broker = MemoryLogBroker(default_partitions=2)
    broker.create_topic("log")
    writer = MemoryLogWriter(broker, "w")
    assert writer.open() is None
    messages = encode_rows(ROWS, np.array([0, 0, 0], np.int8), upstream_id=b"abcd", epic=1)
    writer.begin()
    writer.send("log", messages, np.array([0, 1, 0], np.int32))
    writer.commit(10)
    writer.begin()
    writer.send("log", messages.slice(0, 1), np.array([0], np.int32))
    writer.abort()
    writer.begin()
    writer.send("log", messages.slice(0, 1), np.array([1], np.int32))  # left open: a crash
    successor = MemoryLogWriter(broker, "w")
    assert successor.open() == 10  # the open transaction was aborted
    with pytest.raises(Exception, match="fenced"):
        writer.commit(11)
    changes = list(LogStoreConsumer(MemoryLogReader(broker, "log"), ROWS.schema).changes(idle_timeout=0))
    assert sorted(c.row["id"] for c in changes) == [1, 2, 3]
    assert {c.action for c in changes} == {ChangeAction.INSERT}


def test_fake_writer_never_creates_a_topic_like_the_kafka_writer() -> None:
    # tests/integration/test_kafka_log_writer.py checks the same of KafkaLogWriter
    broker = MemoryLogBroker()
    writer = MemoryLogWriter(broker, "w")
    writer.open()
    writer.begin()
    with pytest.raises(LogStoreError, match="expected topic log to exist"):
        writer.partition_count("log")
    with pytest.raises(LogStoreError, match="expected topic log to exist"):
        writer.send("log", pa.array([b"x"]), np.array([0], np.int32))
    assert "log" not in broker.topics
    assert MemoryLogReader(broker, "log").fetch().values.to_pylist() == []  # reading a missing topic: nothing


def test_memory_writer_keeps_headers_and_exact_bytes_per_record() -> None:
    broker = MemoryLogBroker()
    broker.create_topic("dlq", 2)
    writer = MemoryLogWriter(broker, "t")
    writer.open()
    writer.begin()
    values = pa.array([b"\x80\xff raw", b"line\nbreak\r\n"], pa.binary())
    headers = [(("why", b"one"),), (("why", b"two"), ("where", b"\x00\x01"))]
    writer.send("dlq", values, np.array([1, 0], np.int32), headers=headers)
    with pytest.raises(ValueError, match="one header tuple per value"):
        writer.send("dlq", values, headers=headers[:1])
    writer.commit(7)
    fetched = MemoryLogReader(broker, "dlq").fetch()
    assert fetched.values.to_pylist() == [b"line\nbreak\r\n", b"\x80\xff raw"]
    assert fetched.headers == [headers[1], headers[0]]
    assert broker.committed_records("dlq") == [(b"line\nbreak\r\n", headers[1]), (b"\x80\xff raw", headers[0])]
