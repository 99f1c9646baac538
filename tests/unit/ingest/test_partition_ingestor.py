"""Exactly-once ingestion of one partition, with the in-memory LogStore standing in for Kafka."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from mixed_iceberg import MixedTable
from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser
from mixed_iceberg.ingest.dead_letter import DeadLetterContext
from mixed_iceberg.ingest.writer import PartitionIngestor, committed_offsets
from mixed_iceberg.logstore.base import LogStoreConsumer
from mixed_iceberg.logstore.memory import MemoryLogBroker, MemoryLogReader, MemoryLogWriter
from tests.support.fuzz_cdc import POISON
from tests.support.tables import ORDERS_SCHEMA, local_catalog, rows_of


class SimulatedCrashError(Exception):
    """Stands in for kill -9 at a chosen point."""


class CrashingLogWriter(MemoryLogWriter):
    crash_on_commit = False

    def commit(self, position: int) -> None:
        if self.crash_on_commit:
            raise SimulatedCrashError("killed between the table commit and the Kafka commit")
        super().commit(position)


@pytest.fixture
def table(tmp_path: Path) -> MixedTable:
    return local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"])


def _events(n: int, keys: int, seed: int = 1) -> tuple[list[bytes], dict[int, int]]:
    rng = np.random.default_rng(seed)
    live: dict[int, int] = {}
    out = []
    for i in range(n):
        key = int(rng.integers(keys))
        if key in live and rng.random() < 0.2:
            out.append({"before": {"id": key, "qty": live.pop(key)}, "after": None, "op": "d"})
        elif key in live:
            out.append({"before": {"id": key, "qty": live[key]}, "after": {"id": key, "qty": i}, "op": "u"})
            live[key] = i
        else:
            out.append({"before": None, "after": {"id": key, "qty": i}, "op": "c"})
            live[key] = i
    return [json.dumps(e).encode() for e in out], live


def _ingestor(
    table: MixedTable, broker: MemoryLogBroker, writer_cls: type[MemoryLogWriter] = MemoryLogWriter
) -> PartitionIngestor:
    parser = CdcParser(table.arrow_schema(), table.primary_key, CdcFormat.DEBEZIUM_JSON)
    broker.create_topic("log")  # as the job's prepare() does: writers never create topics
    broker.create_topic("dlq", 1)
    return PartitionIngestor(
        table, parser, job="j", topic="src", partition=0,
        log_writer=writer_cls(broker, "j/src/0"), log_topic="log", dead_letter_topic="dlq",
    )  # fmt: skip


def _feed(ingestor: PartitionIngestor, messages: list[bytes], start: int, stop: int, step: int) -> None:
    for lo in range(start, stop, step):
        hi = min(stop, lo + step)
        ingestor.process(np.arange(lo, hi), pa.array(messages[lo:hi], pa.binary()))


def _merged(table: MixedTable) -> dict[int, int]:
    return {r["id"]: r["qty"] for r in table.scan(selected_fields=("id", "qty")).to_arrow().to_pylist()}


def test_table_and_logstore_hold_every_change_once_across_replays_and_crashes(table: MixedTable) -> None:
    messages, final = _events(3000, 300)
    broker = MemoryLogBroker(default_partitions=3)
    ingestor = _ingestor(table, broker, CrashingLogWriter)
    assert ingestor.open() is None
    _feed(ingestor, messages, 0, 1000, 250)
    # kill between the table commit and the Kafka commit of [1000, 1250)
    assert isinstance(ingestor.log_writer, CrashingLogWriter)
    ingestor.log_writer.crash_on_commit = True
    with pytest.raises(SimulatedCrashError):
        _feed(ingestor, messages, 1000, 1250, 250)
    assert committed_offsets(table, "j", "src", [0]) == {0: 1250}
    # restart: the table is ahead of the LogStore; the source is re-read from the LogStore's position
    restarted = _ingestor(table, broker)
    start = restarted.open()
    assert start == 1000
    _feed(restarted, messages, start, 2000, 300)
    _feed(restarted, messages, 1500, 2000, 100)  # an at-least-once source replaying: dropped
    _feed(restarted, messages, 2000, 3000, 400)
    assert _merged(table) == final
    log = LogStoreConsumer(MemoryLogReader(broker, "log"), table.arrow_schema()).read_all(idle_timeout=0)
    parser = CdcParser(table.arrow_schema(), table.primary_key, CdcFormat.DEBEZIUM_JSON)
    expected = parser.parse(pa.array(messages, pa.binary()), np.arange(3000)).changes
    got = log.select([*ORDERS_SCHEMA.names, "_change_action"])
    assert got.num_rows == expected.num_rows
    assert rows_of(got) == rows_of(expected)
    # per key, the LogStore keeps source order (a key always lands in one partition)
    for key in (0, 1, 2):
        assert [r for r in got.to_pylist() if r["id"] == key] == [r for r in expected.to_pylist() if r["id"] == key]


def test_dead_letters_are_sent_once_and_valid_records_all_land(table: MixedTable) -> None:
    broker = MemoryLogBroker()
    ingestor = _ingestor(table, broker)
    ingestor.open()
    good = [json.dumps({"before": None, "after": {"id": i, "qty": i}, "op": "c"}).encode() for i in range(10)]
    batch = [*good[:5], b"{broken", b'{"op":"z","after":{"id":1}}', *good[5:]]
    ingestor.process(np.arange(12), pa.array(batch, pa.binary()))
    ingestor.process(np.arange(12), pa.array(batch, pa.binary()))  # replayed
    assert sorted(_merged(table)) == list(range(10))
    letters = broker.committed_records("dlq")
    assert [value for value, _ in letters] == [b"{broken", b'{"op":"z","after":{"id":1}}']
    contexts = [DeadLetterContext.from_headers(headers) for _, headers in letters]
    assert [(c.offset, c.reason.split(":")[0], c.topic, c.partition) for c in contexts] == [
        (5, "malformed message", "src", 0),
        (6, "unknown op 'z'", "src", 0),
    ]
    assert ingestor.metrics.dead_letters == 2
    assert ingestor.metrics.replayed_dropped == 12


def test_poison_messages_are_dead_lettered_byte_for_byte_and_the_batch_commits(table: MixedTable) -> None:
    broker = MemoryLogBroker()
    ingestor = _ingestor(table, broker)
    ingestor.open()
    good = [json.dumps({"before": None, "after": {"id": i, "qty": i}, "op": "c"}).encode() for i in range(6)]
    batch = [m for pair in zip(POISON, good, strict=True) for m in pair]  # poison at even offsets
    ingestor.process(np.arange(len(batch)), pa.array(batch, pa.binary()))
    assert sorted(_merged(table)) == list(range(6))
    letters = broker.committed_records("dlq")
    assert [value for value, _ in letters] == POISON
    contexts = [DeadLetterContext.from_headers(headers) for _, headers in letters]
    assert [c.offset for c in contexts] == list(range(0, len(batch), 2))
    assert all(c.reason.startswith("malformed message: ") for c in contexts)
    assert "not valid UTF-8" in contexts[0].reason
    assert "not valid UTF-8" in contexts[2].reason
    assert "expected a JSON object, found null" in contexts[1].reason
    assert committed_offsets(table, "j", "src", [0]) == {0: len(batch)}


def test_a_logstore_ahead_of_the_table_does_not_starve_the_table(table: MixedTable) -> None:
    # e.g. the table was recreated while the Kafka side kept its position
    messages, final = _events(500, 50)
    broker = MemoryLogBroker()
    broker.positions["j/src/0"] = 200
    ingestor = _ingestor(table, broker)
    assert ingestor.open() == 200
    _feed(ingestor, messages, 0, 500, 100)
    assert _merged(table) == final
    log = LogStoreConsumer(MemoryLogReader(broker, "log"), table.arrow_schema()).read_all(idle_timeout=0)
    parser = CdcParser(table.arrow_schema(), table.primary_key, CdcFormat.DEBEZIUM_JSON)
    expected = parser.parse(pa.array(messages[200:], pa.binary()), np.arange(200, 500)).changes
    assert log.num_rows == expected.num_rows
