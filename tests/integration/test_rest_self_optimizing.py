"""Self-optimizing through REST: the Amoro card's scenario end to end (issue 35 item 6).

pyiceberg's ``RestCatalog`` is the only client of the data: it creates a plain Iceberg table
through the session's ``serve`` (``rest_server``), with its ``self-optimizing.*`` properties,
and makes twelve one-row appends. The optimizer service runs in-process with a short refresh
interval, and its catalog is the same served catalog through REST
(``load_catalog(type="rest")``), so every read and the optimizing commit go through the server.
What is protected: the table's ``self-optimizing.group`` (set through REST) brings it to the
group's optimizer, which finds it due (``self-optimizing.minor.trigger.file-count`` of 12, set
through REST) only once the twelfth file lands; it merges the twelve files into one with a
``replace`` snapshot, and the twelve rows read back through REST unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import LongType, NestedField, StringType

from mixed_iceberg import load_catalog
from mixed_iceberg.optimizer.config import parse_optimizer_config
from mixed_iceberg.optimizer.service import OptimizerService
from mixed_iceberg.optimizer.sysdb.database import now_ms
from tests.support.optimizer import successes, wait_for
from tests.support.rest_server import RestServer

pytestmark = pytest.mark.integration

GROUP = "rest-card"  # not the default group: only the property set through REST sends the table here
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "event", StringType(), required=False))
PROPERTIES = {
    "self-optimizing.group": GROUP,
    "self-optimizing.minor.trigger.file-count": "12",
    "self-optimizing.min-plan-interval": "0",
}


def _row(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64()), "event": [f"event-{i}"]})


def _data_files(table: Table) -> int:
    return len(table.inspect.files())


def test_twelve_one_row_appends_through_rest_are_merged_into_one_file_by_a_replace(
    rest_server: RestServer, tmp_path: Path
) -> None:
    client = RestCatalog("card", **rest_server.pyiceberg_properties())
    client.create_namespace("amoro_card")
    table = client.create_table("amoro_card.events", SCHEMA, properties=PROPERTIES)
    for i in range(11):
        table.append(_row(i))

    catalog = load_catalog("served", type="rest", uri=rest_server.uri, warehouse=rest_server.warehouse)
    config = parse_optimizer_config(
        {
            "system-database": f"sqlite:///{tmp_path}/system.db",
            "catalogs": ["served"],
            "optimizer_groups": [
                {
                    "name": GROUP,
                    "properties": {"refresh-interval": "300ms", "heartbeat-interval": "200ms", "maintenance-interval": "0"},
                }
            ],
        }
    )
    service = OptimizerService(config, GROUP, threads=1, catalogs={"served": catalog}).start()
    table_id = "served.amoro_card.events"
    try:
        db = service.db
        wait_for(lambda: getattr(db.table(table_id), "next_plan_ms", 0) > now_ms(), what="the table evaluated")
        assert db.processes(table_id) == [], "eleven files are below the file-count trigger set through REST"

        table.append(_row(11))
        wait_for(lambda: successes(db, table_id) >= 1, what="the twelve files optimized")
    finally:
        service.stop()

    reloaded = RestCatalog("card", **rest_server.pyiceberg_properties()).load_table("amoro_card.events")
    current = reloaded.current_snapshot()
    assert current is not None
    assert current.summary is not None
    assert current.summary.operation.value == "replace"
    assert current.summary["deleted-data-files"] == "12"
    assert current.summary["added-data-files"] == "1"
    assert _data_files(reloaded) == 1
    rows = reloaded.scan().to_arrow().sort_by("id")
    assert rows.to_pylist() == [{"id": i, "event": f"event-{i}"} for i in range(12)]
    assert [s.summary.operation.value for s in reloaded.snapshots() if s.summary is not None] == ["append"] * 12 + ["replace"]
