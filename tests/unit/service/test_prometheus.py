"""``GET /metrics``: Amoro's metric names with values from the system database and the tables.

Real parts: a SQLite catalog with keyed tables written by the library, an optimizer service
that optimizes one of them (its processes recorded in a SQLite system database), ``serve``'s app
driven by Starlette's TestClient, and the scrape parsed by prometheus_client's own parser.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyiceberg.manifest import DataFileContent
from starlette.testclient import TestClient

from mixed_iceberg import MixedTable
from mixed_iceberg.cli.status import status_report
from mixed_iceberg.config.kinds import OptimizingType
from mixed_iceberg.format import parse_change
from mixed_iceberg.optimizer.config import load_optimizer_config
from mixed_iceberg.optimizer.service import OptimizerService
from mixed_iceberg.optimizer.sysdb.database import ProcessStatus
from mixed_iceberg.service import create_app
from mixed_iceberg.service.prometheus.families import METRICS
from mixed_iceberg.service.settings import ServiceConfig
from mixed_iceberg.typedef import DataFileType
from tests.support.optimizer import OptimizerSetup, churn, successes, wait_for
from tests.support.rest_server import write_catalogs

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: TestClient, **headers: str) -> Samples:
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    found: Samples = {}
    for family in text_string_to_metric_families(response.text):
        assert family.type == "gauge", family.name
        for sample in family.samples:
            found[sample.name, frozenset(sample.labels.items())] = sample.value
    return found


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[name, frozenset(labels.items())]


def table_tags(name: str, group: str | None = "default") -> dict[str, str]:
    tags = {"catalog": "local", "database": "db", "table": name}
    return {**tags, "group": group} if group else tags


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> OptimizerSetup:
    found = OptimizerSetup(tmp_path)
    monkeypatch.setenv("MIXED_ICEBERG_OPTIMIZER_CONFIG", str(found.config_path))
    return found


@pytest.fixture
def client(setup: OptimizerSetup) -> Iterator[TestClient]:
    catalogs = write_catalogs(setup.root / "catalog", warehouse=setup.root / "catalog" / "wh")
    with TestClient(create_app(ServiceConfig.model_validate({"catalogs-file": catalogs}))) as found:
        yield found


def files(table: MixedTable, store: str) -> list[tuple[int, int, int]]:
    """(content, size, records) of each live file of a store, as pyiceberg's inspect lists them; a
    ChangeStore's delete files (Iceberg data files whose name says delete) as equality deletes."""
    columns = ["file_path", "content", "file_size_in_bytes", "record_count"]
    found = getattr(table, store).inspect.files().select(columns).to_pylist()
    return [
        (
            DataFileContent.EQUALITY_DELETES
            if store == "change_store" and parse_change(f["file_path"], 1).file_type is DataFileType.EQ_DELETE_FILE
            else f["content"],
            f["file_size_in_bytes"],
            f["record_count"],
        )
        for f in found
    ]


def test_a_scrape_reports_the_optimizers_processes_and_the_tables_figures(setup: OptimizerSetup, client: TestClient) -> None:
    optimized = setup.table("a")
    waiting = setup.table("b", **{"self-optimizing.enabled": "false"})
    service = OptimizerService(load_optimizer_config(setup.config_path), "default", threads=2, catalogs={"local": setup.catalog})
    service.start()
    try:
        db = service.db
        wait_for(lambda: successes(db, "local.db.a") >= 1, what="table a optimized")
        running = scrape(client)
        assert value(running, "amoro_optimizer_group_optimizer_instances", group="default") == 1
        assert value(running, "amoro_optimizer_group_threads", group="default") == 2
        assert 0 <= value(running, "amoro_optimizer_group_idle_optimizers", group="default") <= 1
        assert value(running, "mixed_iceberg_metrics_system_database_up") == 1
    finally:
        service.stop()
    wait_for(lambda: getattr(db.table("local.db.a"), "status", None) == "IDLE", what="table a idle")
    before = time.time() * 1000
    samples = scrape(client)
    after = time.time() * 1000

    # The optimizer's figures, as the system database records them.
    processes = db.processes("local.db.a")
    ended = [p for p in processes if p.status in (ProcessStatus.SUCCESS, ProcessStatus.FAILED, ProcessStatus.CANCELED)]
    tags = table_tags("a")
    assert value(samples, "amoro_table_optimizing_process_total_count", **tags) == len(ended) >= 1
    assert value(samples, "amoro_table_optimizing_process_failed_count", **tags) == sum(
        p.status == ProcessStatus.FAILED for p in processes
    )
    for kind in OptimizingType:
        count = sum(p.type == kind for p in ended)
        assert value(samples, f"amoro_table_optimizing_{kind.value.lower()}_total_count", **tags) == count
    assert value(samples, "amoro_table_optimizing_status_in_idle", **tags) == 1
    assert value(samples, "amoro_table_optimizing_status_in_executing", **tags) == 0
    runtime = db.table("local.db.a")
    assert runtime is not None
    assert runtime.last_minor_ms is not None
    since = value(samples, "amoro_table_optimizing_since_last_minor_optimization_mills", **tags)
    assert before - runtime.last_minor_ms <= since <= after - runtime.last_minor_ms
    assert value(samples, "amoro_table_optimizing_since_last_full_optimization_mills", **tags) == (
        0 if runtime.last_full_ms is None else pytest.approx(before - runtime.last_full_ms, abs=after - before + 1)
    )
    assert value(samples, "amoro_optimizer_group_optimizer_instances", group="default") == 0  # stopped
    assert value(samples, "amoro_optimizer_group_idle_optimizers", group="default") == 0  # a stopped one is not idle
    assert value(samples, "amoro_optimizer_group_idle_tables", group="default") == 1
    assert value(samples, "amoro_optimizer_group_pending_tasks", group="default") == 0
    assert ("amoro_table_optimizing_status_in_idle", frozenset(table_tags("b").items())) not in samples  # not served

    # The tables' figures, as their metadata lists the files.
    waiting.refresh()
    change = files(waiting, "change_store")
    base = files(waiting, "base_store")
    plain = table_tags("b", group=None)
    assert change, "table b holds unmerged change files"
    assert value(samples, "mixed_iceberg_table_unmerged_change_files", **plain) == len(change)
    assert value(samples, "mixed_iceberg_table_unmerged_change_bytes", **plain) == sum(size for _, size, _ in change)
    change_deletes = [f for f in change if f[0] == DataFileContent.EQUALITY_DELETES]
    deleted = value(samples, "mixed_iceberg_table_unmerged_change_delete_records", **plain)
    assert deleted == sum(r for *_, r in change_deletes) == 4  # churn: one -U in each of 4 commits
    assert value(samples, "amoro_table_summary_data_files", **plain) == len(base) + len(change) - len(change_deletes)
    assert value(samples, "amoro_table_summary_equality_delete_files", **plain) == len(change_deletes)
    assert value(samples, "amoro_table_summary_total_records", **plain) == sum(r for *_, r in base + change)
    assert value(samples, "amoro_table_summary_snapshots", **plain) == len(waiting.base_store.metadata.snapshots)
    assert value(samples, "mixed_iceberg_metrics_summaries_stale") == 0

    # Table a's ChangeStore is merged: nothing unmerged, and every base file counted.
    optimized.refresh()
    assert value(samples, "mixed_iceberg_table_unmerged_change_files", **table_tags("a", group=None)) == 0
    assert value(samples, "amoro_table_summary_data_files", **table_tags("a", group=None)) == sum(
        c == DataFileContent.DATA for c, _, _ in files(optimized, "base_store")
    )

    # A commit moves the table's metadata location: the next scrape summarizes it again.
    churn(waiting, 1)
    again = scrape(client)
    assert value(again, "mixed_iceberg_table_unmerged_change_files", **plain) == len(files(waiting.refresh(), "change_store"))
    assert value(again, "mixed_iceberg_table_unmerged_change_files", **plain) > len(change)


def test_the_health_score_and_targets_are_those_status_reports(
    setup: OptimizerSetup, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """amoro_table_summary_health_score and our target state agree with `mixed-iceberg status`
    (the same table, read through the CLI): a table missing its max-files target is red."""
    setup.table("h", **{"self-optimizing.enabled": "false", "health.target.max-files": "1"})
    setup.table("g", commits=1, **{"self-optimizing.enabled": "false"})
    samples = scrape(client)
    monkeypatch.setenv("MIXED_ICEBERG_CATALOGS", str(setup.root / "catalog" / "catalogs.yaml"))
    for name, state, missed in (("h", 2, 1), ("g", 0, 0)):
        report = status_report("local", f"db.{name}")
        tags = table_tags(name, group=None)
        assert value(samples, "amoro_table_summary_health_score", **tags) == report["health"]["score"]
        assert (
            value(samples, "mixed_iceberg_table_health_state", **tags),
            value(samples, "mixed_iceberg_table_health_targets_missed", **tags),
        ) == (state, missed)
    assert report["health"]["state"] == "green"


def test_a_scrape_out_of_time_keeps_tables_for_the_next_one(setup: OptimizerSetup, client: TestClient) -> None:
    for name in ("a", "b", "c"):
        setup.table(name, commits=1, **{"self-optimizing.enabled": "false"})
    collector = client.app.state.metrics_collector  # type: ignore[attr-defined]
    collector.budget_seconds = 0.0
    first = scrape(client)
    assert value(first, "mixed_iceberg_metrics_summaries_stale") == 3
    assert not any(name == "amoro_table_summary_data_files" for name, _ in first)
    collector.budget_seconds = 30.0
    second = scrape(client)
    assert value(second, "mixed_iceberg_metrics_summaries_stale") == 0
    assert {dict(labels)["table"] for name, labels in second if name == "amoro_table_summary_data_files"} == {"a", "b", "c"}
    # No optimizer ever ran: the system database has no tables yet, so it does not answer.
    assert value(second, "mixed_iceberg_metrics_system_database_up") == 0


def test_metrics_need_the_token_when_tokens_are_configured(tmp_path: Path) -> None:
    catalogs = write_catalogs(tmp_path / "home")
    app = create_app(ServiceConfig.model_validate({"catalogs-file": catalogs, "tokens": ["s3cret"]}))
    with TestClient(app) as client:
        refused = client.get("/metrics")
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        samples = scrape(client, authorization="Bearer s3cret")
    assert value(samples, "mixed_iceberg_metrics_system_database_up") == 0  # no optimizer.yaml beside the catalogs


def test_every_metric_is_documented() -> None:
    docs = (Path(__file__).parents[3] / "docs" / "metrics.md").read_text()
    missing = [name for name in METRICS if f"`{name.removeprefix('amoro_').removeprefix('mixed_iceberg_')}`" not in docs]
    assert not missing, f"docs/metrics.md does not name {missing}"
