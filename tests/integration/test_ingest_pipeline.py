"""The ingest job end to end: real Kafka in, the real PyFlink job, table + LogStore + dead letters out.

The table has, besides conf/ingest.yaml's columns, a list and a struct column (``produce_cdc.py
--nested``, nulls at every level), declared in ``create-table`` as Iceberg spells them: the job
writes them to the table and the LogStore and reads them back as sent."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest
import yaml

from tests.support.fuzz_cdc import POISON
from tests.support.ingest import (
    IngestJob,
    IngestSetup,
    expected_changes,
    produce,
    produce_values,
    read_dead_letters,
    read_records,
)
from tests.support.services import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: The columns compared: conf/ingest.yaml's, and the nested ones where the table has them.
COLUMNS = ["id", "customer", "qty", "price", "tags", "dims"]
NESTED_COLUMNS = [
    {"name": "tags", "type": "list<int>"},
    {"name": "dims", "type": "struct<w: double, label: string, ok: boolean>"},
]


def nested_config(root: Path) -> Path:
    """conf/ingest.yaml with the list and struct columns of ``produce_cdc.py --nested``."""
    config = yaml.safe_load((ROOT / "conf" / "ingest.yaml").read_text())
    config["create-table"]["columns"] += NESTED_COLUMNS
    path = root / "ingest-nested.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _columns(setup: IngestSetup) -> list[str]:
    names = setup.table().arrow_schema().names
    return [c for c in COLUMNS if c in names]


def assert_table_matches(setup: IngestSetup, oracle: dict[str, object]) -> None:
    columns = _columns(setup)
    merged = setup.table().scan().to_arrow().sort_by("id")
    final = oracle["final"]
    assert isinstance(final, dict)
    expected = sorted((int(k), *(v[c] for c in columns[1:])) for k, v in final.items())
    got = list(zip(*(merged.column(c).to_pylist() for c in columns), strict=True))
    assert len(got) == len(expected)
    assert got == expected


def assert_logstore_exactly_once(setup: IngestSetup) -> None:
    """Every change of the source exactly once, and per key in source order."""
    columns = [*_columns(setup), "_change_action"]
    log = setup.log_changes().sort_by([("_partition", "ascending"), ("_offset", "ascending")])
    want = expected_changes(setup)
    assert log.num_rows == want.num_rows
    # per key, order within the LogStore equals source order (stable sort by key keeps it)
    got_by_key = log.select(columns).take(pc.sort_indices(log, [("id", "ascending")]))
    want_by_key = want.select(columns).take(pc.sort_indices(want, [("id", "ascending")]))
    assert got_by_key.equals(want_by_key)


def test_cdc_stream_lands_in_table_logstore_and_dead_letter_topic(kafka_bootstrap: str, tmp_path: Path) -> None:
    setup = IngestSetup(tmp_path, kafka_bootstrap, "it-pipeline")
    config = ["--config", str(nested_config(tmp_path))]
    oracle = produce(setup, events=100_000, keys=10_000, bad=25, nested=True)
    # Messages that once stopped every partition of a subtask (issue 15), one batch in each partition
    produce_values(setup, POISON, [i % 4 for i in range(len(POISON))])
    # A transactional tail (as Debezium writes with exactly-once delivery): its commit markers
    # take offsets no record has, and the job must still see that it caught up.
    tail = produce(setup, events=3_000, keys=300, seed=8, first_key=20_000, transaction=True, nested=True)
    oracle = {**oracle, "final": {**oracle["final"], **tail["final"]}}  # type: ignore[dict-item]
    final = list(oracle["final"].values())  # type: ignore[attr-defined]
    # The stream holds what the columns are for: lists with elements, null structs.
    assert sum(1 for row in final if row["tags"]) > len(final) // 2
    assert sum(1 for row in final if row["dims"] is None) > len(final) // 20
    job = IngestJob(setup, extra=config)
    assert job.wait(400) == 0, job.output()[-5000:]

    assert_table_matches(setup, oracle)
    assert _columns(setup) == COLUMNS
    assert_logstore_exactly_once(setup)
    worker_logs = "".join(f.read_text(errors="replace") for f in (setup.root / "flink-log").glob("*python*.log"))
    assert "ingest function input: Arrow arrays" in worker_logs  # mixed_iceberg.ingest.arrow_input took effect
    letters = read_dead_letters(kafka_bootstrap, setup.env["MIXED_ICEBERG_INGEST_DLQ"])
    assert len(letters) == 25 + len(POISON)
    assert {c.reason.split(":")[0] for _, c in letters} <= {
        "malformed message",
        "unknown op 'x'",
        "null or missing primary key ['id']",
    }
    # Kafka Connect's DLQ record: the source record's bytes unchanged, its context in headers
    values, partitions, offsets, _ = read_records(kafka_bootstrap, setup.topic)
    source = dict(zip(zip(partitions.tolist(), offsets.tolist(), strict=True), values.to_pylist(), strict=True))
    assert all(c.topic == setup.topic for _, c in letters)
    assert all(source[(c.partition, c.offset)] == value for value, c in letters)
    assert sorted(v for v, _ in letters if v in POISON) == sorted(POISON)
    # a second run finds everything committed: nothing new in table or LogStore
    rerun = IngestJob(setup, extra=config)
    assert rerun.wait(400) == 0, rerun.output()[-5000:]
    assert_logstore_exactly_once(setup)
    assert_table_matches(setup, oracle)
    assert len(read_dead_letters(kafka_bootstrap, setup.env["MIXED_ICEBERG_INGEST_DLQ"])) == len(letters)
