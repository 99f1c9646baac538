"""The dashboard's JSON API (``/api/v1/dashboard/...``) and its actions, over real tables.

Real parts: a SQLite catalog with keyed tables written by the library, an optimizer service that
optimizes one of them (its processes in a SQLite system database), ``serve``'s app driven by
Starlette's TestClient. What is protected: the pages' figures are those the CLI (``status``,
``describe``) and the metrics report for the same tables; the list comes without loading a
table; a group with tables and no live optimizer is named; an action is checked by the option
registry, takes effect and is recorded; actions refuse cross-site requests; the API needs the
token when tokens are configured, the page does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from mixed_iceberg.cli.status import status_report
from mixed_iceberg.optimizer.config import load_optimizer_config
from mixed_iceberg.optimizer.service import OptimizerService
from mixed_iceberg.optimizer.sysdb.database import SystemDatabase, TableStatus
from mixed_iceberg.reports import describe_report
from mixed_iceberg.service import create_app
from mixed_iceberg.service.dashboard.routes import STATIC
from mixed_iceberg.service.prometheus.summary import summarize
from mixed_iceberg.service.settings import ServiceConfig
from tests.support.optimizer import OptimizerSetup, successes, wait_for
from tests.support.rest_server import write_catalogs
from tests.support.services import ROOT

API = "/api/v1/dashboard"
ACTION = {"X-Requested-By": "mixed-iceberg-dashboard"}


def _settled(db: SystemDatabase, table_id: str) -> bool:
    """Optimized once and in no process (the optimizer stops with nothing in flight)."""
    runtime = db.table(table_id)
    return successes(db, table_id) >= 1 and runtime is not None and runtime.status is TableStatus.IDLE


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> OptimizerSetup:
    found = OptimizerSetup(tmp_path)
    monkeypatch.setenv("MIXED_ICEBERG_OPTIMIZER_CONFIG", str(found.config_path))
    # `mixed-iceberg status` and `describe` (the CLI's reports) then read the same catalog
    monkeypatch.setenv("MIXED_ICEBERG_CATALOGS", str(found.root / "catalog" / "catalogs.yaml"))
    found.table("orders")
    found.table("quiet", commits=2)
    with OptimizerService(load_optimizer_config(found.config_path), "default", threads=1, container="local"):
        db = SystemDatabase(found.system_db)
        wait_for(
            lambda: all(_settled(db, f"local.db.{t}") for t in ("orders", "quiet")),
            "both tables optimized once, neither in a process",
        )
    # a group whose optimizer served a table, then went away
    db.sync_tables("lonely", [("local.db.quiet", "local", "db.quiet", 0.5)])
    db.dispose()
    return found


def _client(setup: OptimizerSetup, **config: Any) -> TestClient:
    catalogs = write_catalogs(setup.root / "catalog", warehouse=setup.root / "catalog" / "wh")
    return TestClient(create_app(ServiceConfig.model_validate({"catalogs-file": catalogs, **config})))


@pytest.fixture
def client(setup: OptimizerSetup) -> Iterator[TestClient]:
    with _client(setup) as found:
        yield found


def _summarized(client: TestClient) -> dict[str, Any]:
    """The overview once every table is summarized (the first request starts the summaries)."""
    found: dict[str, Any] = {}

    def ready() -> bool:
        nonlocal found
        found = client.get(f"{API}/overview").json()
        return bool(found["totals"]["stale"] == 0 and found["totals"]["summarized"] == found["totals"]["tables"])

    wait_for(ready, "every table summarized", timeout=30)
    return found


def test_overview_and_list_show_the_metrics_figures_and_the_health_status_reports(
    setup: OptimizerSetup, client: TestClient
) -> None:
    overview = _summarized(client)
    summaries = {name: summarize(setup.catalog.load_table(f"db.{name}").handle) for name in ("orders", "quiet")}
    totals = overview["totals"]
    assert totals["tables"] == 2
    assert totals["files"] == sum(s.total_files for s in summaries.values())
    assert totals["bytes"] == sum(s.total_files_size for s in summaries.values())
    assert [(c["name"], c["tables"]) for c in overview["catalogs"]] == [("local", 2)]
    assert overview["catalogs"][0]["warehouse"].endswith(str(setup.root / "catalog" / "wh"))
    rows = {r["table"]: r for r in client.get(f"{API}/tables", params={"sort": "files"}).json()["tables"]}
    for name, summary in summaries.items():
        row = rows[f"db.{name}"]
        assert (row["files"], row["bytes"], row["records"]) == (
            summary.total_files,
            summary.total_files_size,
            summary.total_records,
        )
        assert row["health_score"] == status_report("local", f"db.{name}")["health"]["score"]
    assert (rows["db.orders"]["group"], rows["db.orders"]["status"]) == ("default", "idle")
    db = SystemDatabase(setup.system_db)
    runtime = db.table("local.db.orders")
    db.dispose()
    assert runtime is not None
    assert rows["db.orders"]["last_optimized_ms"] == runtime.last_optimized_ms > 0
    assert rows["db.quiet"]["group"] == "lonely"
    assert overview["status"] == {"idle": 2}
    assert [w for w in overview["warnings"] if "group lonely" in w and "no live optimizer" in w]
    need = overview["need"]["files"]
    assert [n["files"] for n in need] == sorted((s.total_files for s in summaries.values()), reverse=True)


def test_the_list_sorts_filters_and_pages_and_refuses_a_bad_sort(client: TestClient) -> None:
    _summarized(client)
    ordered = client.get(f"{API}/tables", params={"sort": "files", "order": "asc"}).json()["tables"]
    assert [r["files"] for r in ordered] == sorted(r["files"] for r in ordered)
    found = client.get(f"{API}/tables", params={"q": "QUI", "limit": 1}).json()
    assert (found["total"], [r["table"] for r in found["tables"]]) == (1, ["db.quiet"])
    assert client.get(f"{API}/tables", params={"offset": 1, "limit": 1}).json()["tables"][0]["table"] == "db.quiet"
    refused = client.get(f"{API}/tables", params={"sort": "colour"})
    assert refused.status_code == 400
    assert "expected one of" in refused.json()["error"]["message"]


def test_the_table_page_shows_what_describe_status_and_the_system_database_say(setup: OptimizerSetup, client: TestClient) -> None:
    page = client.get(f"{API}/catalogs/local/tables/db.orders").json()
    mixed = setup.catalog.load_table("db.orders")
    assert page["describe"] == describe_report(mixed, "local")
    status = status_report("local", "db.orders")
    for key in ("records", "records_at_most", "base_files", "base_bytes", "change_files_unmerged", "delete_ratio", "pending"):
        assert page["status"][key] == status[key], key
    classes = page["files"]["partitions"][0]["classes"]
    assert {k: classes[k] for k in status["base_files"]} == status["base_files"]
    assert sum(p["files"] for p in page["files"]["partitions"]) == summarize(mixed.handle).total_files
    stores = {s["store"] for s in page["snapshots"]}
    assert stores == {"base", "change"}
    assert len(page["snapshots"]) == len(mixed.base_store.metadata.snapshots) + len(mixed.change_store.metadata.snapshots)
    db = SystemDatabase(setup.system_db)
    history = db.process_history("local.db.orders")
    db.dispose()
    assert [(p["process"], p["type"], p["status"], p["files_in"], p["files_out"]) for p in page["processes"]] == [
        (h.process.process_id, h.process.type.value, h.process.status.value, h.process.files_in, h.process.files_out)
        for h in history
    ]
    assert page["processes"][0]["tasks"][0]["optimizer"] is not None
    assert page["runtime"]["group"] == "default"
    missing = client.get(f"{API}/catalogs/local/tables/db.nothing")
    assert missing.status_code == 404


def test_groups_name_a_group_with_tables_and_no_live_optimizer(client: TestClient) -> None:
    page = client.get(f"{API}/groups").json()
    groups = {g["group"]: g for g in page["groups"]}
    assert groups["lonely"]["live_optimizers"] == 0
    assert [t["table"] for t in groups["lonely"]["tables"]] == ["local.db.quiet"]
    assert any("group lonely" in w and "no live optimizer" in w for w in page["warnings"])
    assert [o["live"] for o in page["optimizers"]] == [False]  # the optimizer stopped: listed, not live
    assert page["optimizers"][0]["heartbeat_age_ms"] >= 0
    orders = next(t for t in groups["default"]["tables"] if t["table"] == "local.db.orders")
    assert orders["quota"] == 0.5
    assert 0 < orders["occupation"] <= 1  # its task ran within the last minute
    assert groups["default"]["tasks_failed"] == 0


def _act(client: TestClient, table: str, **body: Any) -> Any:
    return client.post(f"{API}/catalogs/local/tables/{table}/actions", json=body, headers=ACTION)


def test_actions_take_effect_answer_the_registrys_message_and_are_recorded(setup: OptimizerSetup, client: TestClient) -> None:
    assert _act(client, "db.orders", action="pause").status_code == 200
    assert setup.catalog.load_table("db.orders").properties["self-optimizing.enabled"] == "false"
    moved = _act(client, "db.orders", action="property", key="self-optimizing.group", value="lonely")
    assert moved.status_code == 200, moved.text
    assert setup.catalog.load_table("db.orders").config.optimizing.group == "lonely"
    bad = _act(client, "db.orders", action="property", key="self-optimizing.quota", value="lots")
    assert bad.status_code == 400
    assert bad.json()["error"]["message"] == "table db.orders: property 'self-optimizing.quota': expected a number; found 'lots'"
    outside = _act(client, "db.orders", action="property", key="write.format.default", value="orc")
    assert outside.status_code == 400
    assert "self-optimizing.* properties only" in outside.json()["error"]["message"]
    assert _act(client, "db.orders", action="optimize", type="huge").status_code == 400
    before = len(setup.catalog.load_table("db.orders").base_store.metadata.snapshots)
    done = _act(client, "db.orders", action="optimize", type="full")
    assert done.status_code == 200
    assert done.json()["result"]["type"] == "full"
    assert len(setup.catalog.load_table("db.orders").base_store.metadata.snapshots) == before + 1
    assert _act(client, "db.orders", action="resume").status_code == 200
    assert setup.catalog.load_table("db.orders").config.optimizing.enabled
    recorded = client.get(f"{API}/catalogs/local/tables/db.orders").json()["actions"]
    assert [(a["action"], a["outcome"]) for a in recorded] == [
        ("resume", "done"),
        ("optimize", "done"),
        ("optimize", "refused"),
        ("property", "refused"),
        ("property", "refused"),
        ("property", "done"),
        ("pause", "done"),
    ]
    assert recorded[4]["message"].endswith("expected a number; found 'lots'")


def test_an_action_without_the_dashboards_header_or_from_another_origin_is_refused(
    setup: OptimizerSetup, client: TestClient
) -> None:
    path = f"{API}/catalogs/local/tables/db.orders/actions"
    assert client.post(path, json={"action": "pause"}).status_code == 403
    foreign = client.post(path, json={"action": "pause"}, headers={**ACTION, "Origin": "http://evil.example"})
    assert foreign.status_code == 403
    form = client.post(path, content=b"action=pause", headers={**ACTION, "Content-Type": "application/x-www-form-urlencoded"})
    assert form.status_code == 415
    assert "self-optimizing.enabled" not in setup.catalog.load_table("db.orders").properties


def test_with_tokens_the_api_needs_one_and_the_page_does_not(setup: OptimizerSetup) -> None:
    with _client(setup, tokens=["s3cr3t"]) as client:
        assert client.get("/dashboard").status_code == 200
        assert client.get("/dashboard/static/app.js").status_code == 200
        assert client.get(f"{API}/overview").status_code == 401
        assert (
            client.post(f"{API}/catalogs/local/tables/db.orders/actions", json={"action": "pause"}, headers=ACTION).status_code
            == 401
        )
        assert client.get(f"{API}/overview", headers={"Authorization": "Bearer s3cr3t"}).status_code == 200


def test_every_asset_the_page_loads_ships_in_the_wheel() -> None:
    """pyproject's package-data globs cover each file the page names (no CDN: only our own paths)."""
    globs = re.search(r'"mixed_iceberg.service.dashboard" = \[(.*?)\]', (ROOT / "pyproject.toml").read_text())
    assert globs is not None
    patterns = [g.strip().strip('"') for g in globs.group(1).split(",")]
    html = (Path(STATIC) / "index.html").read_text()
    assets = re.findall(r'(?:src|href)="([^"#]+)"', html)
    assert assets == ["/dashboard/static/style.css", "/dashboard/static/app.js"]
    for asset in assets:
        name = asset.rsplit("/", 1)[1]
        assert (Path(STATIC) / name).is_file()
        assert any(Path("static", name).match(p) for p in patterns), name
