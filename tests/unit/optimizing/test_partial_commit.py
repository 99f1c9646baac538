"""``self-optimizing.allow-partial-commit`` in ``table.optimizing.run()``: the tasks that
succeeded are committed when others fail, except in a partition whose change a failed task would
have merged (its optimized sequence would hide that change); without it a failed task fails the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mixed_iceberg.basestore.optimized_sequence import read_optimized_sequence
from mixed_iceberg.catalog import MixedCatalog
from mixed_iceberg.optimizing import engine
from mixed_iceberg.optimizing.model import ChangeFile, OptimizingType, PartitionFiles, RewriteTask
from mixed_iceberg.optimizing.partial import incomplete_partitions
from mixed_iceberg.table import MixedTable
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog

ROWS = 400


def _split_table(catalog: MixedCatalog, **properties: str) -> MixedTable:
    """A keyed table of four partitions, each planned as several tasks (one per tree node) that
    all merge change."""
    table = catalog.create_table(
        "db.partial",
        ORDERS_SCHEMA,
        primary_key=["id"],
        partition_by=["bucket(4, id)"],
        properties={"self-optimizing.max-task-size-bytes": "1", "self-optimizing.min-plan-interval": "0", **properties},
    )
    table.bulk_load(changes([("+I", k, "a", k, 1.0) for k in range(ROWS)]).drop_columns(["_change_action"]))
    with table.new_transaction() as txn:
        txn.write(changes([row for k in range(0, ROWS, 3) for row in (("-U", k, "a", k, 1.0), ("+U", k, "b", k, 2.0))]))
    return table.refresh()


def _victim(table: MixedTable) -> RewriteTask:
    """A task that merges change, in a partition where another task merges change too."""
    planned = table.optimizing.plan_run("minor")
    assert planned is not None
    merging = [t for t in planned.tasks if t.change]
    shared = [t for t in merging if sum(1 for o in merging if o.partition == t.partition) > 1]
    assert shared, "expected a partition split into several tasks that merge change"
    assert len({t.partition for t in merging}) > 1
    return shared[0]


def _failing(monkeypatch: pytest.MonkeyPatch, victim: RewriteTask) -> None:
    real = engine.execute_run

    def execute_run(table: Any, collected: Any, tasks: Any, **kwargs: Any) -> Any:
        if any(t.partition == victim.partition and t.change == victim.change for t in tasks):
            raise RuntimeError("an executor died")
        return real(table, collected, tasks, **kwargs)

    monkeypatch.setattr(engine, "execute_run", execute_run)


def _rows(table: MixedTable) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.refresh().scan().to_arrow().to_pylist())


def test_allow_partial_commit_commits_the_other_partitions_and_keeps_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _split_table(local_catalog(tmp_path), **{"self-optimizing.allow-partial-commit": "true"})
    victim = _victim(table)
    before = _rows(table)
    _failing(monkeypatch, victim)
    result = table.optimizing.run("minor")
    assert result.committed
    assert result.tasks_failed == 1
    assert _rows(table) == before  # the victim's siblings were left out: no change hidden unmerged
    sequences = read_optimized_sequence(table.base_store, table.base_store.current_snapshot())
    assert sequences.get(victim.partition, 0) == 0
    assert len([p for p, s in sequences.items() if s > 0]) == 3


def test_without_allow_partial_commit_a_failed_task_fails_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _split_table(local_catalog(tmp_path))
    victim = _victim(table)
    snapshot = table.base_store.current_snapshot()
    _failing(monkeypatch, victim)
    with pytest.raises(RuntimeError, match="an executor died"):
        table.optimizing.run("minor")
    assert table.refresh().base_store.current_snapshot() == snapshot


def _change(path: str, sequence: int) -> ChangeFile:
    return ChangeFile(path=path, size=10, records=1, sequence_number=sequence, transaction_id=sequence, is_delete=False)


def _task(partition: str, *change: ChangeFile) -> RewriteTask:
    return RewriteTask(
        partition=partition, type=OptimizingType.MINOR, rewrite=(), segments=(), change=change, from_sequence=0, to_sequence=2
    )


def test_a_partition_commits_only_when_its_committed_tasks_merge_all_its_change_in_range() -> None:
    """The optimizer service's commit applies the same rule (optimizer/work.py)."""
    a1, a2, a3, b1 = _change("a1", 1), _change("a2", 2), _change("a3", 3), _change("b1", 1)
    partitions = [PartitionFiles("a", (), (a1, a2, a3), 0, 0), PartitionFiles("b", (), (b1,), 0, 0)]
    assert incomplete_partitions([_task("a", a1, a2), _task("b", b1)], partitions) == set()  # a3 is above the range
    assert incomplete_partitions([_task("a", a1), _task("b", b1)], partitions) == {"a"}  # a2's task failed
    assert incomplete_partitions([_task("b", b1)], partitions) == set()  # a is not committed at all
