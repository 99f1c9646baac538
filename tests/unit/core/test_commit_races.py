"""Commit races: a commit id that lands while our commit is retrying is never applied twice."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.table import Table

from mixed_iceberg import CommitId
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of


def test_zombie_writer_racing_the_same_commit_id_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    zombie = catalog.load_table("db.t")
    zombie_txn = zombie.new_transaction(CommitId("job", 5))  # planned against the table before the live writer commits
    zombie_txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    live = catalog.load_table("db.t")
    with live.new_transaction(CommitId("job", 5)) as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0)]))
    # The zombie's pre-commit check sees stale metadata (its refresh is skipped once), so only
    # the retry after the failed catalog commit can notice that the id has landed.
    real_refresh = Table.refresh
    calls = {"n": 0}

    def stale_once(self: Table) -> Table:
        calls["n"] += 1
        return self if calls["n"] == 1 else real_refresh(self)

    monkeypatch.setattr(Table, "refresh", stale_once)
    outcome = zombie_txn.commit()
    monkeypatch.undo()
    assert outcome.skipped
    assert calls["n"] >= 2, "the retry path must have refreshed and re-checked the id"
    assert rows_of(live.scan().to_arrow()) == [(1, "a", 1, 1.0)]
    assert live.change_store is not None
    assert len(live.refresh().change_store.metadata.snapshots) == 1  # type: ignore[union-attr]


def test_concurrent_writers_with_different_ids_both_land(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    catalog.create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    first, second = catalog.load_table("db.t"), catalog.load_table("db.t")
    a = first.new_transaction(("writer-a", 1))
    b = second.new_transaction(("writer-b", 1))
    a.write(changes([("+I", 1, "a", 1, 1.0)]))
    b.write(changes([("+I", 2, "b", 2, 2.0)]))
    a.commit()
    b.commit()
    assert [r[0] for r in rows_of(first.scan().to_arrow())] == [1, 2]
