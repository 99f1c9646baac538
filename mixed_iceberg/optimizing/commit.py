"""Commit every task of one optimizing run as one BaseStore snapshot, conflict-checked.

The commit validates against the BaseStore as it is at commit time (and again on each retry):
every file it removes must still be live, and each partition's optimized sequence must still be
where planning found it. Concurrent ChangeStore commits never conflict: their sequences lie
above the merged range, so they stay visible. A failed validation raises
``CommitConflictError`` (the caller re-plans) and deletes the files the run wrote.

The snapshot's operation is ``replace``, as Iceberg Java's ``RewriteFiles`` writes for a
compaction: every optimizing type leaves the keyed table's merged view as it was (DESIGN.md
invariant 5), so Spark's streaming reader of the BaseStore skips the snapshot instead of
failing with "Cannot process overwrite snapshot". The rows a minor (or full) moves into the
BaseStore were already in the table, in the ChangeStore, whose commits are the table's
appends. (Java's ``RewriteFiles`` also refuses a rewrite that removes no file; Iceberg's spec
defines ``replace`` by the unchanged data alone, which holds here.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyiceberg.table import Table, Transaction
from pyiceberg.table.snapshots import Operation

from mixed_iceberg._pyiceberg.transaction import transaction_table
from mixed_iceberg.basestore.optimized_sequence import (
    BASE_OPTIMIZED_TIME,
    read_optimized_sequence,
    stage_optimized_sequence,
    summary_flags,
)
from mixed_iceberg.exceptions import CommitConflictError
from mixed_iceberg.optimizing.collect import OPTIMIZING_TYPE
from mixed_iceberg.optimizing.execute import TaskOutput
from mixed_iceberg.optimizing.model import OptimizingType
from mixed_iceberg.store.commit import CommitOutcome, Stager, commit_files
from mixed_iceberg.store.manifests.live_files import live_files
from mixed_iceberg.typedef import CommitId

if TYPE_CHECKING:
    from mixed_iceberg.handle import TableHandle

__all__ = ["commit_outputs"]


def commit_outputs(
    table: TableHandle, kind: OptimizingType, outputs: Sequence[TaskOutput], now_ms: int, *, commit_id: CommitId | None = None
) -> CommitOutcome:
    """One snapshot for all ``outputs``; advances the optimized sequence of keyed partitions.

    With ``commit_id`` (the optimizer service's process id) a commit that already landed is
    skipped, and its output files, which that snapshot holds, are kept.
    """
    base = table.base_store
    removed = {f.file_path for o in outputs for f in (*o.removed_data, *o.removed_deletes)}
    starting = {o.task.partition: o.task.from_sequence for o in outputs}

    # The maps the staged Puffin file and summary copy were built from (set by stage below); a
    # retry must find them unchanged, or it would undo another commit's advance of a partition.
    staged_from: list[dict[str, int]] = []

    def validate(current: Table) -> None:
        live = {f.data_file.file_path for f in live_files(current, current.current_snapshot())}
        gone = sorted(removed - live)
        if gone:
            raise CommitConflictError(
                f"{table.name}: optimizing lost a race: {len(gone)} input file(s) were removed meanwhile, e.g. {gone[0]}"
            )
        if table.is_keyed:
            now_seq = read_optimized_sequence(current, current.current_snapshot())
            moved = {p: now_seq.get(p, 0) for p, s in starting.items() if now_seq.get(p, 0) != s}
            if moved:
                raise CommitConflictError(
                    f"{table.name}: optimized sequence moved meanwhile; expected { ({p: starting[p] for p in moved}) }, found {moved}"
                )
            if staged_from and now_seq != staged_from[0]:
                raise CommitConflictError(
                    f"{table.name}: optimized sequence of other partitions moved meanwhile; expected {staged_from[0]}, found {now_seq}"
                )

    stage: Stager | None = None
    summary = {OPTIMIZING_TYPE: kind.value}
    if table.is_keyed:
        summary.update(summary_flags())

        def stage(txn: Transaction, snapshot_id: int) -> None:
            current = transaction_table(txn)
            sequences = read_optimized_sequence(current, current.current_snapshot())
            staged_from.append(dict(sequences))
            times = read_optimized_sequence(current, current.current_snapshot(), BASE_OPTIMIZED_TIME)
            for output in outputs:
                sequences[output.task.partition] = max(sequences.get(output.task.partition, 0), output.task.to_sequence)
                times[output.task.partition] = now_ms
            stage_optimized_sequence(txn, snapshot_id, sequences, times)

    return commit_files(
        base,
        added=[f for o in outputs for f in o.added_data],
        deleted=[f for o in outputs for f in o.removed_data],
        added_deletes=[f for o in outputs for f in o.added_deletes],
        deleted_deletes=[f for o in outputs for f in o.removed_deletes],
        summary=summary,
        stage=stage,
        validate=validate,
        table_name=table.name,
        operation=Operation.REPLACE,
        commit_id=commit_id,
        files_reused=commit_id is not None,
    )
