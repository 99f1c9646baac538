"""The two kinds of work an optimizer does on one table, without the loop around them.

* :func:`plan_process`: refresh, evaluate and plan the table (``collect -> evaluate -> plan``),
  then record a process and its tasks.
* :func:`run_task`: execute one recorded task against the snapshot the plan read (the stores'
  metadata files the process names), and return its output.
* :func:`commit_process`: commit the outputs of a process's succeeded tasks, once: the
  process id is the commit id, so a commit that landed before a crash is recognized and its
  files are kept. When some failed (``self-optimizing.allow-partial-commit``), a partition
  whose change a failed task would have merged is left out
  (:mod:`~mixed_iceberg.optimizing.partial`).

Every function takes the table as the catalog loads it now. The snapshot a process was planned
on is read back from its metadata files, so the tasks, and the commit after them, see exactly
what the plan saw, whatever was committed since.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from pyiceberg.table import StaticTable, Table

from mixed_iceberg.faults import crash_point
from mixed_iceberg.format import WriterIdentity
from mixed_iceberg.handle import TableHandle
from mixed_iceberg.optimizer.codec import decode_data_file, decode_result, decode_tasks, encode_result, encode_tasks
from mixed_iceberg.optimizer.sysdb.database import ProcessRecord, SystemDatabase, TaskRecord
from mixed_iceberg.optimizing.collect import CollectedTable, collect
from mixed_iceberg.optimizing.commit import commit_outputs
from mixed_iceberg.optimizing.engine import Deferred, PlannedRun, TableOptimizing, execute_run, partition_filter
from mixed_iceberg.optimizing.execute import TaskOutput
from mixed_iceberg.optimizing.model import RewriteTask
from mixed_iceberg.optimizing.partial import incomplete_partitions
from mixed_iceberg.store.commit import CommitOutcome, last_committed_sequence
from mixed_iceberg.store.damage import METADATA_FILE, reading
from mixed_iceberg.table import MixedTable
from mixed_iceberg.typedef import CommitId

__all__ = ["COMMIT_WRITER", "ExecutedTask", "commit_process", "plan_process", "run_task", "settled"]

log = logging.getLogger(__name__)

#: The commit writer of every optimizer commit; the process id is its sequence.
COMMIT_WRITER = "mixed-iceberg-optimizer"


def _split(planned: PlannedRun) -> list[list[RewriteTask]]:
    """The service's tasks: every planned task alone, or all of them as one when they merge as a unit."""
    if planned.unit:
        return [list(planned.tasks)]
    return [[task] for task in planned.tasks]


def plan_process(table: MixedTable, db: SystemDatabase, *, table_id: str, group: str, optimizer_id: str) -> int | Deferred | None:
    """Plan ``table`` now and record the process; its id, :class:`Deferred` while
    ``self-optimizing.min-plan-interval`` holds the table back, or None when nothing is due."""
    planned = TableOptimizing(table.refreshed).plan_or_defer()
    if not isinstance(planned, PlannedRun):
        return planned
    handle = planned.table
    tasks = _split(planned)
    process_id = db.create_process(
        table_id=table_id,
        group=group,
        type=planned.kind,
        planned_by=optimizer_id,
        base_metadata=handle.base_store.metadata_location,
        change_metadata=handle.change_store.metadata_location if handle.change_store is not None else None,
        unit=planned.unit,
        tasks=[(encode_tasks(part), sum(t.input_bytes for t in part)) for part in tasks],
        max_retries=handle.config.optimizing.num_retries,
    )
    log.info("%s: planned %s optimizing as process %d (%d task(s))", table_id, planned.kind.value, process_id, len(tasks))
    return process_id


#: A time past every trigger interval a table can be given (epoch seconds: the end of year 9999).
_END_OF_TIME_S = 253_402_300_799.0


def settled(table: MixedTable) -> bool:
    """Whether only a commit can make ``table`` (as last refreshed) due: evaluated as if every
    trigger interval (minor, full, base refresh) had run out, no partition needs optimizing.

    Each time trigger is a condition that stays true once met, and each type is due on a
    conjunction of them with conditions on the files, so a table due at no time now is due at
    no time until its files change, and every commit moves its metadata (which discovery sees).

    Raises:
        CorruptFileError: a manifest list or manifest does not parse.
    """
    handle = table.handle
    evaluation = TableOptimizing(lambda: handle, clock=lambda: _END_OF_TIME_S).evaluate()
    return evaluation.type is None


def _static(store: Table, location: str, name: str) -> Table:
    with reading(store.io, METADATA_FILE, location, table=name, referenced=False):
        return StaticTable.from_metadata(location, dict(store.io.properties))


def planned_view(table: MixedTable, process: ProcessRecord) -> tuple[TableHandle, CollectedTable]:
    """The table as the process was planned on, and what the plan collected from it.

    Raises:
        CorruptFileError: a metadata file the process names, or a manifest, does not parse.
    """
    live = table.handle
    base = _static(live.base_store, process.base_metadata, live.name)
    change = (
        _static(live.change_store, process.change_metadata, live.name)
        if live.change_store is not None and process.change_metadata
        else None
    )
    handle = TableHandle.of(live.name, live.format, base, change, live.primary_key)
    return handle, collect(handle, partition_filter(handle))


@dataclass(frozen=True, slots=True)
class ExecutedTask:
    """A task's output as the system database keeps it, and its counts."""

    output: str
    rows_in: int
    rows_out: int
    bytes_out: int


def run_task(table: MixedTable, process: ProcessRecord, task: TaskRecord) -> ExecutedTask:
    """Execute ``task`` of ``process`` on the snapshot it was planned on; nothing is committed."""
    handle, collected = planned_view(table, process)
    tasks = decode_tasks(task.input)
    outputs = execute_run(handle, collected, tasks, unit=process.unit, writer=WriterIdentity())
    crash_point("optimizer-after-execute")
    return ExecutedTask(
        output=encode_result(outputs),
        rows_in=sum(o.rows_in for o in outputs),
        rows_out=sum(o.rows_out for o in outputs),
        bytes_out=sum(o.bytes_out for o in outputs),
    )


def _outputs(collected: CollectedTable, tasks: list[TaskRecord]) -> list[TaskOutput]:
    outputs = []
    for record in tasks:
        assert record.output is not None, f"task {record.process_id}/{record.task_id} succeeded without an output"
        planned = decode_tasks(record.input)
        result = decode_result(record.output)
        for rewrite, written in zip(planned, result.outputs, strict=True):
            output = TaskOutput(rewrite)
            output.added_data = [decode_data_file(f) for f in written.added_data_files]
            output.added_deletes = [decode_data_file(f) for f in written.added_delete_files]
            output.removed_data = [collected.data_files[p].data_file for p in written.removed_data_files]
            output.removed_deletes = [collected.delete_files[p].data_file for p in written.removed_delete_files]
            output.rows_in, output.rows_out = written.rows_in, written.rows_out
            outputs.append(output)
    return outputs


def commit_process(table: MixedTable, process: ProcessRecord, tasks: list[TaskRecord]) -> CommitOutcome:
    """Commit the outputs of ``tasks`` (the process's successful ones) as one BaseStore snapshot.

    Raises:
        CommitConflictError: the inputs changed since the plan; nothing landed, the outputs are deleted.
        CommitStateUnknownError: the outcome is unknown; the next attempt recognizes it by its id.
    """
    commit_id = CommitId(COMMIT_WRITER, process.process_id)
    live = table.refresh().handle
    done = last_committed_sequence(live.base_store, COMMIT_WRITER)
    if done is not None and done >= process.process_id:
        log.info("%s: process %d was committed before; recording it", process.table_id, process.process_id)
        return CommitOutcome.skip()
    _, collected = planned_view(table, process)
    outputs = _outputs(collected, tasks)
    if not process.unit:
        left_out = incomplete_partitions([o.task for o in outputs], collected.partitions)
        if left_out:
            log.warning(
                "%s: process %d leaves out partitions %s: a failed task held their change",
                process.table_id,
                process.process_id,
                sorted(left_out),
            )
            outputs = [o for o in outputs if o.task.partition not in left_out]
        if not outputs:
            return CommitOutcome.skip()
    started = time.monotonic()
    outcome = commit_outputs(live, process.type, outputs, int(time.time() * 1000), commit_id=commit_id)
    crash_point("optimizer-after-commit")
    log.info(
        "%s: committed %s process %d (%d task(s)) in %.2f s", process.table_id, process.type.value, process.process_id, len(tasks),
        time.monotonic() - started,
    )  # fmt: skip
    return outcome
