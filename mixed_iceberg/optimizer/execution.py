"""Execution: an optimizer's executor threads, each taking the group's next task and running it.

Each executor takes the next task by the group's scheduling policy
(:mod:`mixed_iceberg.optimizer.scheduling`) among the tables with tasks waiting, acknowledges
it, executes it (:func:`~mixed_iceberg.optimizer.work.run_task`) and records its output, or
the error: a failed run goes back to PLANNED until ``self-optimizing.execute.num-retries``
runs failed. An executor with nothing to do waits, up to 2 s, or until tasks are planned.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from mixed_iceberg.optimizer.context import OptimizerContext
from mixed_iceberg.optimizer.scheduling import pick_table
from mixed_iceberg.optimizer.sysdb.database import now_ms
from mixed_iceberg.optimizer.work import run_task

__all__ = ["Executors"]

log = logging.getLogger(__name__)


class Executors:
    """The executor threads' work; ``task_done`` is called with the table of each task run
    (the coordinator may commit its process now)."""

    def __init__(self, context: OptimizerContext, task_done: Callable[[str], None]) -> None:
        self.context = context
        self._task_done = task_done
        self.wake = threading.Event()  # tasks were planned

    def loop(self, thread: int) -> None:
        """Run tasks until the optimizer stops."""
        idle = 0.2
        while not self.context.stop.is_set():
            if self.execute_one(thread):
                idle = 0.2
                continue
            self.wake.wait(idle)
            self.wake.clear()
            idle = min(2.0, idle * 2)

    def execute_one(self, thread: int = 0) -> bool:
        """Take the next task by the group's policy and run it; False when none waits."""
        ctx = self.context
        db, props, group = ctx.db, ctx.group.properties, ctx.group.name
        threads = db.group_threads(group, props.heartbeat_timeout_ms)
        loads = db.table_loads(group, now_ms() - props.quota_look_back_ms, waiting_only=True)
        table_id = pick_table(
            props.policy, loads, window_ms=props.quota_look_back_ms, threads=threads, break_quota=props.break_quota
        )
        if table_id is None:
            return False
        task = db.claim_task(table_id, ctx.optimizer_id, thread, now_ms() + props.task_ack_timeout_ms)
        if task is None or not db.ack_task(task, ctx.optimizer_id, now_ms() + props.task_execute_timeout_ms):
            return task is not None
        process = db.process(task.process_id)
        runtime = db.table(table_id)
        started = time.monotonic()
        try:
            if process is None or runtime is None:
                raise LookupError(f"task {task.process_id}/{task.task_id}: its process or table is gone")
            table = ctx.tables.table(runtime.catalog, runtime.table_name)
            result = run_task(table, process, task)
        except Exception as exc:
            duration = int((time.monotonic() - started) * 1000)
            status = db.fail_task(task, ctx.optimizer_id, error=f"{type(exc).__name__}: {exc}", duration_ms=duration)
            log.warning("%s: task %d/%d failed (%s): %s", table_id, task.process_id, task.task_id, status, exc)
            self._task_done(table_id)
            return True
        duration = int((time.monotonic() - started) * 1000)
        if not db.complete_task(
            task,
            ctx.optimizer_id,
            output=result.output,
            rows_in=result.rows_in,
            rows_out=result.rows_out,
            bytes_out=result.bytes_out,
            duration_ms=duration,
        ):
            log.warning(
                "%s: task %d/%d was taken back while it ran; its files are left to orphan cleaning",
                table_id,
                task.process_id,
                task.task_id,
            )
        self._task_done(table_id)
        return True
