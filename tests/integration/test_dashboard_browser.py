"""The dashboard in a real browser: Debian's chromium (Playwright) against a live ``serve``.

Real parts: ``mixed-iceberg serve`` in its own process with a bearer token, over a SQLite catalog
whose keyed tables the library wrote; the optimizer service of group ``default`` running in this
process (so the groups page shows a live optimizer and the table page its processes), a second
group ``lonely`` whose optimizer is gone while it still has a table; chromium driven by
Playwright (``tests/support/browser.py``). What is protected: the page asks for the token and
then shows the real figures (each checked against pyiceberg's own file listing, the metrics
summary and ``status``'s figures of the same table), the loud warning of a group with no live
optimizer, the live optimizer; Pause takes effect in the table's properties and a bad property
value shows the option registry's message. Screenshots of each page go to ``.artifacts/dashboard/``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from mixed_iceberg.optimizer.config import load_optimizer_config
from mixed_iceberg.optimizer.service import OptimizerService
from mixed_iceberg.optimizer.sysdb.database import SystemDatabase
from mixed_iceberg.reports import status_of
from mixed_iceberg.service.prometheus.summary import summarize
from tests.support.browser import ARTIFACTS
from tests.support.optimizer import OptimizerSetup, successes, wait_for
from tests.support.rest_server import RestServer

pytestmark = pytest.mark.integration

TOKEN = "dashboard-s3cr3t"
SHOTS = ARTIFACTS / "dashboard"


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[tuple[OptimizerSetup, RestServer]]:
    """Two keyed tables, one optimized by a live optimizer of ``default``, one in a group nobody serves."""
    setup = OptimizerSetup(tmp_path)
    setup.table("orders", commits=4)
    setup.table("quiet", commits=2, **{"self-optimizing.group": "lonely"})
    catalogs = tmp_path / "catalogs.yaml"  # beside optimizer.yaml: serve reads the system database from there
    catalogs.write_text(
        json.dumps(
            {
                "catalogs": [
                    {
                        "name": "local",
                        "type": "sql",
                        "properties": {
                            "uri": f"sqlite:///{tmp_path}/catalog/catalog.db",
                            "warehouse": str(tmp_path / "catalog" / "wh"),
                        },
                    }
                ]
            }
        )
    )
    db = SystemDatabase(setup.system_db)
    db.migrate()
    db.sync_tables("lonely", [("local.db.quiet", "local", "db.quiet", 0.5)])  # its optimizer has gone
    server = RestServer.start(tmp_path / "serve", catalogs_yaml=catalogs, tokens=[TOKEN])
    try:
        with OptimizerService(load_optimizer_config(setup.config_path), "default", threads=1, container="local"):
            wait_for(lambda: successes(db, "local.db.orders") >= 1, "orders optimized by the live optimizer")
            yield setup, server
    finally:
        server.stop()
        db.dispose()


def _shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _figure(page: Page, name: str) -> str:
    found = page.locator(f'[data-figure="{name}"]')
    expect(found).to_be_visible()
    value = found.get_attribute("data-value")
    assert value is not None, name
    return value


def _show(page: Page, hash_: str, page_name: str) -> None:
    page.evaluate("h => { location.hash = h; }", hash_)
    expect(page.locator(f'main[data-page="{page_name}"]')).to_be_visible()


def test_the_dashboard_shows_the_real_figures_and_its_actions_take_effect(
    chromium: Browser, lake: tuple[OptimizerSetup, RestServer]
) -> None:
    setup, server = lake
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{server.uri}/dashboard")
        expect(page.locator("#login")).to_be_visible()  # the API needs the token; the page asks for it
        page.fill("#token", TOKEN)
        page.click("#login button[type=submit]")
        expect(page.locator('main[data-page="overview"]')).to_be_visible()

        # Overview: once every table is summarized, the totals are the tables' own
        def summarized() -> bool:
            page.click("#refresh")
            page.wait_for_function("() => document.querySelector('main').dataset.loaded !== undefined")
            return page.locator("[data-stale]").count() == 0 and page.locator('[data-figure="files"]').count() == 1

        wait_for(summarized, "every table summarized on the overview", timeout=30)
        tables = {name: setup.catalog.load_table(f"db.{name}") for name in ("orders", "quiet")}
        summaries = {name: summarize(t.handle) for name, t in tables.items()}
        pyiceberg_files = sum(
            len(store.inspect.files()) for t in tables.values() for store in (t.base_store, t.change_store) if store is not None
        )
        assert int(_figure(page, "tables")) == 2
        assert int(_figure(page, "files")) == sum(s.total_files for s in summaries.values())
        assert int(_figure(page, "bytes")) == sum(s.total_files_size for s in summaries.values())
        assert sum(s.total_files for s in summaries.values()) <= pyiceberg_files  # live files: the stores' listing bounds them
        warning = page.locator('[data-warning="group"]')
        expect(warning).to_contain_text("group lonely has 1 table(s)")
        expect(warning).to_contain_text("no live optimizer")
        _shot(page, "overview")

        # Table list: one row per table, its files those of the summary
        _show(page, "#/tables", "tables")
        rows = page.locator('[data-table="tables"] tbody tr')
        expect(rows).to_have_count(2)
        files_cell = page.locator('tr[data-row="local.db.orders"] td[data-col="files"]')
        expect(files_cell).to_have_text(str(summaries["orders"].total_files))
        _shot(page, "tables")

        # Table page: figures as `status` reports them, base files as pyiceberg lists them, the processes
        _show(page, "#/table/local/db.orders", "table")
        orders = tables["orders"].refresh()
        status = status_of(orders, "local")
        assert (
            int(_figure(page, "base-files")) == len(orders.base_store.inspect.data_files()) == sum(status["base_files"].values())
        )
        assert int(_figure(page, "change-files")) == status["change_files_unmerged"]
        records = status["records"] if status["records"] is not None else status["records_at_most"]
        assert int(_figure(page, "records")) == records
        assert int(_figure(page, "base-bytes")) == status["base_bytes"]
        history = SystemDatabase(setup.system_db)
        processes = history.process_history("local.db.orders")
        history.dispose()
        expect(page.locator('[data-table="processes"] > tbody > tr')).to_have_count(len(processes))
        expect(page.locator('[data-table="processes"] > tbody > tr').first).to_contain_text("SUCCESS")
        expect(page.locator('[data-table="partitions"] tbody tr')).to_have_count(len(status["partitions"]))
        expect(page.locator('svg[data-chart="sizes"]')).to_be_visible()
        _shot(page, "table")

        # Actions: pause takes effect in the table; a bad value shows the registry's message
        page.click('button[data-action="pause"]')
        expect(page.locator('button[data-action="resume"]')).to_be_visible()
        assert setup.catalog.load_table("db.orders").properties["self-optimizing.enabled"] == "false"
        page.fill('[data-panel="actions"] input[name="key"]', "self-optimizing.quota")
        page.fill('[data-panel="actions"] input[name="value"]', "lots")
        page.click('button[data-action="property"]')
        expect(page.locator("#toast")).to_have_text(
            "table db.orders: property 'self-optimizing.quota': expected a number; found 'lots'"
        )
        assert "self-optimizing.quota" not in setup.catalog.load_table("db.orders").properties
        expect(page.locator('[data-table="actions"] tbody tr')).to_have_count(2)
        expect(page.locator('[data-table="properties"] tr[data-key="self-optimizing.enabled"]')).to_contain_text("false")
        _shot(page, "table-after-actions")

        # Groups: the live optimizer with its heartbeat, and the loud warning
        _show(page, "#/groups", "groups")
        live = page.locator('[data-table="optimizers"] tbody tr', has_text="live")
        expect(live).to_have_count(1)
        expect(live).to_contain_text("default")
        expect(page.locator('tr[data-group="lonely"] td[data-col="live_optimizers"]')).to_have_text("0")
        expect(page.locator('[data-warning="group"]').first).to_contain_text("group lonely")
        _shot(page, "groups")
        assert errors == []
    finally:
        context.close()
