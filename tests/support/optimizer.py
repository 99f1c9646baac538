"""Tables and configurations for optimizer tests that run the service in other processes (CLI, PyFlink)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path

from mixed_iceberg import MixedCatalog, MixedTable
from mixed_iceberg.optimizer.sysdb.database import ProcessStatus, SystemDatabase
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

#: Minor optimizing due as soon as change data arrives, however recently the table was optimized.
DUE = {
    "self-optimizing.minor.trigger.file-count": "3",
    "self-optimizing.minor.trigger.interval": "0",
    "self-optimizing.min-plan-interval": "0",
}
_ids = itertools.count()


class OptimizerSetup:
    """A catalog under ``root``, an ``optimizer.yaml`` naming it by properties, and a system database."""

    def __init__(self, root: Path, group: str = "default", **properties: str) -> None:
        self.root = root
        self.group = group
        self.catalog: MixedCatalog = local_catalog(root / "catalog")
        self.system_db = f"sqlite:///{root}/system.db"
        group_properties = {
            "refresh-interval": "500ms",
            "heartbeat-interval": "300ms",
            "heartbeat-timeout": "3s",
            "maintenance-interval": "0",
            **properties,
        }
        self.config_path = root / "optimizer.yaml"
        self.config_path.write_text(
            json.dumps(
                {
                    "system-database": self.system_db,
                    "catalogs": [
                        {
                            "name": "local",
                            "properties": {
                                "uri": f"sqlite:///{root}/catalog/catalog.db",
                                "warehouse": str(root / "catalog" / "wh"),
                            },
                        }
                    ],
                    "optimizer_groups": [{"name": group, "container": "local", "properties": group_properties}],
                }
            )
        )

    def table(self, name: str, commits: int = 4, **properties: str) -> MixedTable:
        return due_table(self.catalog, name, commits, **properties)


def due_table(catalog: MixedCatalog, name: str, commits: int = 4, **properties: str) -> MixedTable:
    """``db.<name>``: a keyed table of 200 rows with :data:`DUE` (and ``properties``) and ``commits``
    change commits on top (:func:`churn`)."""
    table = catalog.create_table(f"db.{name}", ORDERS_SCHEMA, primary_key=["id"], properties={**DUE, **properties})
    table.bulk_load(changes([("+I", k, "a", k, 1.0) for k in range(200)]).drop_columns(["_change_action"]))
    churn(table, commits)
    return table


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout:.0f} s: {what}")


def successes(db: SystemDatabase, table_id: str) -> int:
    """The table's optimizing processes that succeeded."""
    return sum(p.status == ProcessStatus.SUCCESS for p in db.processes(table_id))


def churn(table: MixedTable, commits: int, keys: int = 200) -> None:
    """``commits`` change commits: an update of one of the keys ``0..keys-1`` and a new key each."""
    for _ in range(commits):
        i = next(_ids) % keys
        with table.new_transaction() as txn:
            txn.write(changes([("-U", i, "a", i, 1.0), ("+U", i, "b", i + 1000, 2.0), ("+I", 10_000 + next(_ids), "c", 1, 1.0)]))


def merged(table: MixedTable) -> list[tuple[object, ...]]:
    return sorted(rows_of(table.refresh().scan().to_arrow()))
