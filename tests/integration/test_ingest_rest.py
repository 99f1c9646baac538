"""The ingest job with a REST catalog: ``mixed-iceberg serve`` (the session's ``rest_server``)
as the catalog of the job's keyed table, named in catalogs.yaml as any engine would name it.

The job creates the table through REST, commits both stores through serve (our writer's
commits pass its keyed-store guard) and ends caught up; the merged read through REST equals
the producer's final state, and serve's own SQL catalog holds the two stores."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mixed_iceberg import load_catalog
from mixed_iceberg.store.commit import COMMIT_WRITER
from tests.integration.test_ingest_pipeline import assert_table_matches
from tests.support.ingest import IngestJob, IngestSetup, produce
from tests.support.rest_server import RestServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_the_ingest_job_commits_through_serve(kafka_bootstrap: str, rest_server: RestServer, tmp_path: Path) -> None:
    setup = IngestSetup(tmp_path, kafka_bootstrap, "it-rest")
    catalogs = tmp_path / "catalogs.yaml"
    entry = {"name": "served", "type": "rest", "properties": {"uri": rest_server.uri, "warehouse": rest_server.warehouse}}
    catalogs.write_text(yaml.safe_dump({"catalogs": [entry]}))
    setup.env.update(MIXED_ICEBERG_CATALOGS=str(catalogs), MIXED_ICEBERG_INGEST_CATALOG="served")
    oracle = produce(setup, events=6_000, keys=800)

    job = IngestJob(setup)
    assert job.wait(400) == 0, job.output()[-5000:]

    assert_table_matches(setup, oracle)
    assert type(setup.table().base_store.catalog).__name__ == "ConditionalRestCatalog"
    # serve's own SQL catalog holds the table the job created and committed through it
    name = setup.env["MIXED_ICEBERG_INGEST_TABLE"]
    behind = load_catalog("local", config_path=rest_server.home / "catalogs.yaml").load_table(name)
    assert behind.change_store is not None
    writers = {s.summary.get(COMMIT_WRITER) for s in behind.change_store.snapshots() if s.summary is not None}
    assert any(str(w).startswith(f"ingest/{setup.env['MIXED_ICEBERG_INGEST_JOB']}/") for w in writers), writers
