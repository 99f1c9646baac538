"""Idle tables cost the optimizer nothing per round: a table that only a commit can make due
(settled) is not evaluated again on every refresh, a commit to it is planned within a second or
so rather than at the next refresh, and the optimizer keeps only a few tables loaded.

Real parts: a SQLite catalog and system database, real keyed tables, the service's threads.
Evaluations are counted at ``plan_process``, the one entry to planning.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mixed_iceberg import MixedCatalog, MixedTable
from mixed_iceberg.optimizer import coordination
from mixed_iceberg.optimizer import tables as served_tables
from mixed_iceberg.optimizer.config import OptimizerConfig, parse_optimizer_config
from mixed_iceberg.optimizer.coordination import SETTLED_RECHECK_REFRESHES
from mixed_iceberg.optimizer.service import OptimizerService
from mixed_iceberg.optimizer.sysdb.database import SystemDatabase, now_ms
from mixed_iceberg.optimizer.work import settled
from tests.support.optimizer import churn, due_table, successes, wait_for


def config(tmp_path: Path, refresh: str) -> OptimizerConfig:
    properties = {
        "refresh-interval": refresh,
        "heartbeat-interval": "200ms",
        "heartbeat-timeout": "3s",
        "maintenance-interval": "0",
    }
    return parse_optimizer_config(
        {
            "system-database": f"sqlite:///{tmp_path}/system.db",
            "optimizer_groups": [{"name": "default", "properties": properties}],
        }
    )


@pytest.fixture
def evaluations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The table ids ``plan_process`` is called for, in order."""
    seen: list[str] = []
    real = coordination.plan_process

    def counted(table: MixedTable, db: SystemDatabase, **kwargs: Any) -> Any:
        seen.append(kwargs["table_id"])
        return real(table, db, **kwargs)

    monkeypatch.setattr(coordination, "plan_process", counted)
    return seen


def test_only_a_commit_or_a_trigger_interval_can_make_a_table_due(catalog: MixedCatalog) -> None:
    healthy = due_table(catalog, "healthy", 0)
    assert settled(healthy.refresh())
    waiting = due_table(catalog, "waiting", 0, **{"self-optimizing.minor.trigger.interval": "3600000"})
    churn(waiting, 1)  # one change commit: below the file count, due once the minor interval runs out
    assert waiting.refresh().optimizing.evaluate().type is None
    assert not settled(waiting)


def test_a_settled_table_is_not_evaluated_on_every_refresh_and_a_commit_wakes_it(
    tmp_path: Path,
    catalog: MixedCatalog,
    evaluations: list[str],
    services: list[OptimizerService],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(served_tables, "TABLES_KEPT", 2)
    tables = [due_table(catalog, f"t{i}", 0) for i in range(4)]
    ids = [f"local.db.t{i}" for i in range(4)]
    service = OptimizerService(config(tmp_path, "300ms"), "default", catalogs={"local": catalog})
    services.append(service.start())
    db = service.db

    def parked() -> bool:
        runtimes = [db.table(table_id) for table_id in ids]
        return all(
            r is not None and r.status == "IDLE" and r.next_plan_ms >= now_ms() + 300 * SETTLED_RECHECK_REFRESHES / 2
            for r in runtimes
        )

    wait_for(parked, "every table evaluated once and waiting for a commit")
    assert sorted(evaluations) == ids
    time.sleep(2.0)  # six refresh intervals
    assert sorted(evaluations) == ids, "a settled table was evaluated again without a commit"
    churn(tables[2], 4)  # due at once (file count 3)
    wait_for(lambda: successes(db, ids[2]) >= 1, "the table with the commit optimized")
    assert all(successes(db, table_id) == 0 for table_id in ids[:2] + ids[3:])
    assert service.tables.kept <= 2  # the tables it used last, not every table it served
    wait_for(parked, "back to waiting for a commit")
    assert set(evaluations[len(ids) :]) == {ids[2]}


def test_a_commit_to_an_idle_table_is_planned_and_committed_by_rounds_over_that_table_alone(
    tmp_path: Path, catalog: MixedCatalog, services: list[OptimizerService], monkeypatch: pytest.MonkeyPatch
) -> None:
    table = due_table(catalog, "t", 0)
    due_table(catalog, "idle", 0)
    service = OptimizerService(config(tmp_path, "10min"), "default", catalogs={"local": catalog})
    reads: list[str] = []
    every_table = service.db.tables

    def counted(group: str | None = None) -> Any:
        reads.append(str(group))
        return every_table(group)

    monkeypatch.setattr(service.db, "tables", counted)
    # The first full round reads every table twice (before and after planning): count from its
    # end, not from the moment it evaluated the table (a race under load).
    full_round_over = threading.Event()
    coordinate = service.coordinator.coordinate

    def round_then_signal(*args: Any, **kwargs: Any) -> Any:
        try:
            return coordinate(*args, **kwargs)
        finally:
            if kwargs.get("discover", True):
                full_round_over.set()

    monkeypatch.setattr(service.coordinator, "coordinate", round_then_signal)
    services.append(service.start())
    db = service.db
    wait_for(lambda: getattr(db.table("local.db.t"), "next_plan_ms", 0) > now_ms(), "the table evaluated once")
    wait_for(full_round_over.is_set, "the first full round over")
    full_reads = len(reads)
    churn(table, 4)
    committed = time.monotonic()
    wait_for(lambda: successes(db, "local.db.t") >= 1, "the commit planned, executed and committed", timeout=30.0)
    assert time.monotonic() - committed < 10.0  # a refresh is ten minutes away
    assert len(reads) == full_reads, "a round between refreshes read every table of the group"
