"""Bookkeeping: what becomes of a process and of its table, recorded in the system database.

* :meth:`Bookkeeping.advance`: a process in flight whose tasks are all done is committed (or,
  when a task failed for good, ended FAILED unless ``self-optimizing.allow-partial-commit``
  commits what succeeded); a commit that lost a race is CANCELED and the table planned again.
  The table's lease is taken first and the process read again under it, so two optimizers
  never end one process.
* :meth:`Bookkeeping.fail_table`: a planning, commit or maintenance error marks the table
  FAILED with ``last_error``; it is planned again after a back-off that doubles per
  consecutive failure, so a poisoned table never blocks its siblings and is never retried in
  a tight loop.
"""

from __future__ import annotations

import logging

from mixed_iceberg.exceptions import CommitConflictError
from mixed_iceberg.optimizer.codec import decode_result, decode_tasks
from mixed_iceberg.optimizer.context import OptimizerContext
from mixed_iceberg.optimizer.sysdb.database import ProcessRecord, ProcessStatus, TableRuntime, TaskStatus
from mixed_iceberg.optimizer.work import commit_process

__all__ = ["Bookkeeping"]

log = logging.getLogger(__name__)


class Bookkeeping:
    """The outcomes of one optimizer's processes and tables."""

    def __init__(self, context: OptimizerContext) -> None:
        self.context = context

    def fail_table(self, runtime: TableRuntime, error: str) -> None:
        """The table failed with no process in flight: FAILED with the group's back-off; its lease goes."""
        ctx = self.context
        ctx.db.fail_table(
            runtime.table_id, ctx.optimizer_id, error=error, base_backoff_ms=ctx.group.properties.failure_backoff_ms
        )

    def advance(self, runtime: TableRuntime) -> ProcessStatus | None:
        """A process in flight: commit it when its tasks are done, end it when one failed for good;
        the status it ended with (None: still running, or another optimizer holds the table)."""
        ctx = self.context
        assert runtime.process_id is not None
        process = ctx.db.process(runtime.process_id)
        if process is None:
            ctx.db.forget_process(runtime.table_id, runtime.process_id)
            return ProcessStatus.CANCELED
        tasks = ctx.db.tasks(process.process_id)
        failed = [t for t in tasks if t.status is TaskStatus.FAILED]
        succeeded = [t for t in tasks if t.status is TaskStatus.SUCCESS]
        if len(succeeded) + len(failed) < len(tasks):
            return None  # still running
        if not ctx.db.claim_table(runtime.table_id, ctx.optimizer_id, ctx.lease()):
            return None  # another optimizer holds it
        # Read again under the lease: another optimizer may have ended this process since
        # ``runtime`` was read (and planned the table's next one).
        current, process = ctx.db.table(runtime.table_id), ctx.db.process(process.process_id)
        if (
            current is None
            or process is None
            or current.process_id != process.process_id
            or process.status in ProcessStatus.ended()
        ):
            ctx.db.release_table(runtime.table_id, ctx.optimizer_id)
            return None
        try:
            table = ctx.tables.table(runtime.catalog, runtime.table_name)
            partial = table.config.optimizing.allow_partial_commit
        except Exception as exc:  # the table cannot be loaded (damaged, dropped): the process cannot commit
            log.warning("%s: process %d cannot be committed: %s", runtime.table_id, process.process_id, exc)
            self.finish(process, ProcessStatus.FAILED, error=f"commit failed: {type(exc).__name__}: {exc}")
            return ProcessStatus.FAILED
        if failed and not (partial and succeeded and not process.unit):
            error = failed[0].error or "a task failed"
            self.finish(process, ProcessStatus.FAILED, error=f"{len(failed)} task(s) failed after their retries; first: {error}")
            return ProcessStatus.FAILED
        if not ctx.db.begin_commit(process, ctx.optimizer_id):  # the lease ran out meanwhile
            ctx.db.release_table(runtime.table_id, ctx.optimizer_id)
            return None
        try:
            outcome = commit_process(table, process, succeeded)
        except CommitConflictError as exc:
            log.info("%s: process %d lost a race and is planned again: %s", runtime.table_id, process.process_id, exc)
            self.finish(process, ProcessStatus.CANCELED, error=str(exc))
            return ProcessStatus.CANCELED
        except Exception as exc:
            log.warning("%s: commit of process %d failed: %s", runtime.table_id, process.process_id, exc)
            self.finish(process, ProcessStatus.FAILED, error=f"commit failed: {type(exc).__name__}: {exc}")
            return ProcessStatus.FAILED
        results = [decode_result(t.output or "[]") for t in succeeded]
        files_in = sum(r.files_in for r in results)
        files_in += sum(len(r.change) for t in succeeded for r in decode_tasks(t.input))
        files_out = sum(r.files_out for r in results)
        self.finish(process, ProcessStatus.SUCCESS, snapshot_id=outcome.snapshot_id, files_in=files_in, files_out=files_out)
        return ProcessStatus.SUCCESS

    def finish(
        self,
        process: ProcessRecord,
        status: ProcessStatus,
        *,
        error: str | None = None,
        snapshot_id: int | None = None,
        files_in: int = 0,
        files_out: int = 0,
    ) -> None:
        """End ``process`` with the group's failure back-off and let its table go."""
        ctx = self.context
        ctx.db.finish_process(
            process,
            status,
            error=error,
            snapshot_id=snapshot_id,
            backoff_ms=ctx.group.properties.failure_backoff_ms,
            files_in=files_in,
            files_out=files_out,
        )
        ctx.db.release_table(process.table_id, ctx.optimizer_id)
