"""``caught_up`` (``--until-caught-up``, the bench, the tests) on a transactional CDC topic.

Kafka ends every transaction with a marker that takes an offset, and a read-committed consumer
skips the markers and the records of aborted transactions. Debezium with exactly-once delivery,
or an upstream Flink job's exactly-once Kafka sink, writes such topics. ``caught_up`` used to
compare the table's next offset with the topic's end offset, so a job that had consumed all
of such a topic was never caught up: ``--until-caught-up`` ran into its timeout and failed.
The ingest here is the job's own runtime, fed without Flink.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from confluent_kafka import Producer

from mixed_iceberg.ingest.config import load_ingest_config
from mixed_iceberg.ingest.job import caught_up
from mixed_iceberg.ingest.runtime import IngestRuntime, prepare
from mixed_iceberg.logstore.kafka import KafkaLogStore
from tests.support.ingest import IngestSetup, produce
from tests.support.services import ROOT

pytestmark = pytest.mark.integration


def _ingest_everything(setup: IngestSetup) -> None:
    """What the job does with the topic's committed records: one commit per partition and fetch."""
    with setup.environment():  # the runtime loads the table per partition
        config = load_ingest_config(ROOT / "conf" / "ingest.yaml")
        prepare(config)
        runtime = IngestRuntime(config)
        reader = KafkaLogStore(setup.bootstrap).reader(setup.topic)
        try:
            while len(batch := reader.fetch(50_000, 3.0)):
                for p in np.unique(batch.partitions).tolist():
                    mine = batch.partitions == p
                    runtime.ingest(p, batch.offsets[mine], batch.values.filter(pa.array(mine)))
        finally:
            reader.close()
            runtime.close()


def _aborted_transaction(setup: IngestSetup, records: int) -> None:
    producer = Producer({"bootstrap.servers": setup.bootstrap, "transactional.id": f"{setup.name}-aborted"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(records):
        producer.produce(setup.topic, key=str(i).encode(), value=b'{"op":"c","after":{"id":1}}')
    producer.flush(30)
    producer.abort_transaction(30)


def _caught_up(setup: IngestSetup) -> bool:
    with setup.environment():
        return caught_up(load_ingest_config(ROOT / "conf" / "ingest.yaml"))


def test_a_job_that_consumed_a_transactional_topic_is_caught_up(kafka_bootstrap: str, tmp_path: Path) -> None:
    setup = IngestSetup(tmp_path, kafka_bootstrap, "it-caught-up")
    oracle = produce(setup, events=2_000, keys=200, transaction=True)
    _aborted_transaction(setup, 50)
    _ingest_everything(setup)
    marks = KafkaLogStore(kafka_bootstrap).watermarks(setup.topic)
    assert sum(high for _, high in marks.values()) > 2_000 + len(marks)  # markers and aborted records
    assert setup.table().scan(selected_fields=("id",)).to_arrow().num_rows == len(oracle["final"])  # type: ignore[arg-type]

    assert _caught_up(setup)
    # Committed records past the table's position are still seen.
    produce(setup, events=10, keys=10, seed=3, first_key=1_000)
    time.sleep(0.2)
    assert not _caught_up(setup)


def test_readable_from_skips_markers_and_aborted_records(kafka_bootstrap: str, tmp_path: Path) -> None:
    setup = IngestSetup(tmp_path, kafka_bootstrap, "it-readable")
    produce(setup, events=400, keys=40, transaction=True)
    values_end = {
        p: high - 1 for p, (_, high) in KafkaLogStore(kafka_bootstrap).watermarks(setup.topic).items()
    }  # each one marker
    _aborted_transaction(setup, 20)
    marks = KafkaLogStore(kafka_bootstrap).watermarks(setup.topic)

    assert KafkaLogStore(kafka_bootstrap).readable_from(setup.topic, dict.fromkeys(marks, 0)) == set(marks)
    assert KafkaLogStore(kafka_bootstrap).readable_from(setup.topic, {p: end - 1 for p, end in values_end.items()}) == set(marks)
    assert KafkaLogStore(kafka_bootstrap).readable_from(setup.topic, values_end) == set()
    assert KafkaLogStore(kafka_bootstrap).readable_from(setup.topic, {p: high for p, (_, high) in marks.items()}) == set()
    assert KafkaLogStore(kafka_bootstrap).readable_from(setup.topic, {}) == set()
