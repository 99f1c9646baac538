"""A KafkaLogStore client object builds each of its Kafka clients once and reuses it.

The old module-level functions built a new ``AdminClient`` (and a new consumer) per call; the
ingest job's monitor asks for watermarks every poll. Against the real broker, with the
confluent-kafka constructors counted where the transport calls them.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mixed_iceberg.logstore.kafka import KafkaLogStore
from mixed_iceberg.logstore.kafka import transport as transport_module

pytestmark = pytest.mark.integration


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[dict[str, Any]]:
    built: list[dict[str, Any]] = []
    real = getattr(transport_module, name)

    def build(config: dict[str, Any]) -> Any:
        built.append(config)
        return real(config)

    monkeypatch.setattr(transport_module, name, build)
    return built


def test_one_admin_client_and_one_consumer_per_group_serve_every_call(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    admins = _counting(monkeypatch, "AdminClient")
    consumers = _counting(monkeypatch, "Consumer")
    producers = _counting(monkeypatch, "Producer")
    name = f"reuse_{time.time_ns()}"
    with KafkaLogStore(kafka_bootstrap) as store:
        store.ensure_topic(name, 2)
        store.ensure_partitions(name, 3)
        for _ in range(3):
            assert store.partition_count(name) == 3
            assert store.watermarks(name) == {0: (0, 0), 1: (0, 0), 2: (0, 0)}
        for _ in range(2):
            store.commit_group_offsets(f"{name}-group", {(name, 0): 0, (name, 1): 0})
            assert store.committed_positions(f"{name}-group", name, [0, 1, 2]) == {0: 0, 1: 0, 2: None}
            store.send_wakeups(name)
        writers = [store.writer(f"{name}-{p}", f"{name}-group", name, p) for p in range(3)]
        try:
            assert [writer.open() for writer in writers] == [0, 0, None]
        finally:
            for writer in writers:
                writer.close()
        assert store.watermarks(name) == dict.fromkeys(range(3), (0, 2))  # the two rounds of wake-ups
    assert len(admins) == 1
    # The probe (watermarks) and the group's (its offsets, shared by the three writers).
    assert sorted(config["group.id"].startswith("mixed-iceberg-probe-") for config in consumers) == [False, True]
    # The wake-up producer, and one transactional producer per writer (a session per id).
    assert [config.get("transactional.id") for config in producers] == [None, f"{name}-0", f"{name}-1", f"{name}-2"]
