"""The ingest job with a REST catalog: ``mixed-iceberg serve`` as the catalog of the job's keyed
table, named in catalogs.yaml as any engine would name it.

The job creates the table through REST, commits both stores through serve (our writer's
commits pass its keyed-store guard) and ends caught up; the merged read through REST equals
the producer's final state, and serve's own SQL catalog holds the two stores. serve's
``GET /metrics``, scraped while the job runs and after, reports each source partition's ingest
position and lag as the table and the topic hold them."""

from __future__ import annotations

import threading
import urllib.request
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from mixed_iceberg import load_catalog
from mixed_iceberg.ingest.writer import committed_offsets
from mixed_iceberg.logstore.kafka import KafkaLogStore
from mixed_iceberg.store.commit import COMMIT_WRITER
from tests.integration.test_ingest_pipeline import assert_table_matches
from tests.support.ingest import IngestJob, IngestSetup, produce
from tests.support.rest_server import RestServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]


Samples = dict[tuple[str, str], float]  # (metric, partition) -> value, of the job's table


def _ingest_samples(server: RestServer, table: str) -> Samples:
    with urllib.request.urlopen(f"{server.uri}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    database, _, name = table.rpartition(".")
    return {
        (sample.name, sample.labels["partition"]): sample.value
        for family in text_string_to_metric_families(text)
        if family.name.startswith("mixed_iceberg_ingest_")
        for sample in family.samples
        if (sample.labels["database"], sample.labels["table"]) == (database, name)
    }


def test_the_ingest_job_commits_through_serve(kafka_bootstrap: str, tmp_path: Path) -> None:
    rest_server = RestServer.start(tmp_path / "serve", kafka_bootstrap=kafka_bootstrap)
    try:
        _ingest_through(rest_server, kafka_bootstrap, tmp_path)
    finally:
        rest_server.stop()


def _ingest_through(rest_server: RestServer, kafka_bootstrap: str, tmp_path: Path) -> None:
    setup = IngestSetup(tmp_path, kafka_bootstrap, "it-rest")
    catalogs = tmp_path / "catalogs.yaml"
    entry = {"name": "served", "type": "rest", "properties": {"uri": rest_server.uri, "warehouse": rest_server.warehouse}}
    catalogs.write_text(yaml.safe_dump({"catalogs": [entry]}))
    setup.env.update(MIXED_ICEBERG_CATALOGS=str(catalogs), MIXED_ICEBERG_INGEST_CATALOG="served")
    oracle = produce(setup, events=6_000, keys=800)
    name = setup.env["MIXED_ICEBERG_INGEST_TABLE"]

    job = IngestJob(setup)
    running: list[Samples] = []
    done = threading.Event()

    def scrape_while_running() -> None:  # Prometheus's view while the job commits
        while not done.wait(1.0):
            if found := _ingest_samples(rest_server, name):
                running.append(found)

    scraper = threading.Thread(target=scrape_while_running, daemon=True)
    scraper.start()
    try:
        assert job.wait(400) == 0, job.output()[-5000:]
    finally:
        done.set()
        scraper.join(timeout=60)
    assert running, "no scrape while the job ran showed its ingest positions"

    # After the job: each partition's position is the table's, its lag the topic's end minus it.
    final = _ingest_samples(rest_server, name)
    log_store = KafkaLogStore(kafka_bootstrap)
    try:
        ends = {str(p): high for p, (_, high) in log_store.watermarks(setup.topic).items()}
    finally:
        log_store.close()
    held = committed_offsets(setup.table(), setup.env["MIXED_ICEBERG_INGEST_JOB"], setup.topic, [int(p) for p in ends])
    assert {p: final["mixed_iceberg_ingest_next_offset", p] for p in ends} == {p: held[int(p)] for p in ends}
    assert {p: final["mixed_iceberg_ingest_lag_records", p] for p in ends} == {p: ends[p] - held[int(p)] for p in ends}
    assert all(final["mixed_iceberg_ingest_freshness_p99_mills", p] >= 0 for p in ends)
    assert all(0 <= final["mixed_iceberg_ingest_since_last_commit_mills", p] < 600_000 for p in ends)
    assert all(s["mixed_iceberg_ingest_next_offset", p] <= held[int(p)] for s in running for (_, p) in s)

    assert_table_matches(setup, oracle)
    assert type(setup.table().base_store.catalog).__name__ == "ConditionalRestCatalog"
    # serve's own SQL catalog holds the table the job created and committed through it
    behind = load_catalog("local", config_path=rest_server.home / "catalogs.yaml").load_table(name)
    assert behind.change_store is not None
    writers = {s.summary.get(COMMIT_WRITER) for s in behind.change_store.snapshots() if s.summary is not None}
    assert any(str(w).startswith(f"ingest/{setup.env['MIXED_ICEBERG_INGEST_JOB']}/") for w in writers), writers
