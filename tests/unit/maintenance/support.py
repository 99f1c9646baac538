"""Shared helpers of the maintenance tests: tables with history, a movable clock, invariant checks."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa

from mixed_iceberg import MixedTable
from mixed_iceberg.store.commit import COMMIT_SEQUENCE, COMMIT_WRITER
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

DAY = 86400.0
WRITER = "ingest"


class FakeClock:
    """Wall time plus an offset that tests move forward."""

    def __init__(self, offset_s: float = 0.0) -> None:
        self.offset_s = offset_s

    def __call__(self) -> float:
        return time.time() + self.offset_s

    def advance(self, seconds: float) -> None:
        self.offset_s += seconds


def base_rows(count: int = 30) -> pa.Table:
    """Bulk-load rows: ids 0..count-1 over categories a, b, c."""
    return changes([("+I", k, "abc"[k % 3], k, k / 2) for k in range(count)]).drop_columns(["_change_action"])


def keyed_table(
    root: Path, *, partitioned: bool = True, commits: int = 5, properties: Mapping[str, str] | None = None
) -> MixedTable:
    """A keyed table with a bulk load and ``commits`` ChangeStore commits of writer ``ingest``."""
    table = local_catalog(root).create_table(
        "db.orders", ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"] if partitioned else None, properties=properties
    )
    table.bulk_load(base_rows())
    write_changes(table, range(commits))
    return table


def write_changes(table: MixedTable, sequences: range, writer: str = WRITER) -> None:
    """One ChangeStore commit per sequence: update one key, delete another, insert a new one."""
    for i in sequences:
        with table.new_transaction((writer, i)) as txn:
            txn.write(
                changes(
                    [
                        ("-U", i, "abc"[i % 3], i, i / 2),
                        ("+U", i, "abc"[i % 3], i + 100, 9.0),
                        ("-D", 29 - i, "abc"[(29 - i) % 3], 29 - i, (29 - i) / 2),
                        ("+I", 1000 + i, "abc"[i % 3], 1, 1.0),
                    ]
                )
            )


def merged_rows(table: MixedTable) -> list[tuple[object, ...]]:
    """What ``scan()`` returns, order-free."""
    return rows_of(table.scan().to_arrow())


def last_sequence(table: MixedTable, writer: str = WRITER) -> int:
    """The newest commit sequence of ``writer`` in the ChangeStore's snapshots."""
    assert table.change_store is not None
    sequences = [
        int(str(s.summary.get(COMMIT_SEQUENCE)))
        for s in table.refresh().change_store.metadata.snapshots  # type: ignore[union-attr]
        if s.summary is not None and s.summary.get(COMMIT_WRITER) == writer
    ]
    return max(sequences)


def assert_replay_is_noop(table: MixedTable, writer: str = WRITER) -> None:
    """Re-committing the writer's last commit id must be skipped and change nothing."""
    before = merged_rows(table)
    sequence = last_sequence(table, writer)
    with table.new_transaction((writer, sequence)) as txn:
        txn.write(changes([("+I", 777_777, "a", 1, 1.0)]))
    assert txn.outcome is not None
    assert txn.outcome.skipped, f"replay of {writer}:{sequence} was committed again"
    assert merged_rows(table) == before
