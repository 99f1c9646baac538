"""What operators ask the system database: the dashboard's and the metrics' queries, typed.

* :meth:`OperatorQueries.process_history`: a table's processes, newest first, each with its tasks.
* :meth:`OperatorQueries.group_queues`: per group, live optimizers and threads, tasks by state,
  and the occupation of its executors over a window.
* :meth:`OperatorQueries.table_stats`: per table, its runtime row, the executor time its tasks
  used over a window, running and waiting tasks, and its processes' outcomes.
* :meth:`OperatorQueries.table_states`: per table, its group, status, last optimizing and failures
  (a few columns, for lists of thousands of tables).
* :meth:`OperatorQueries.failed_tasks`: per group, its failed tasks.
* :meth:`OperatorQueries.idle_optimizers`: per group, live optimizers with no task in flight.
* :meth:`OperatorQueries.process_totals`: per table, type and status, how many processes the
  database records (the metrics' process counts).

Each is a fixed number of aggregate queries, whatever the number of tables.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import func, select

from mixed_iceberg.config.kinds import OptimizingType
from mixed_iceberg.optimizer.sysdb.connection import Connected
from mixed_iceberg.optimizer.sysdb.records import (
    GroupQueue,
    ProcessHistory,
    ProcessRecord,
    TableRuntime,
    TableRuntimeStats,
    TableState,
    TaskRecord,
    now_ms,
    record,
)
from mixed_iceberg.optimizer.sysdb.schema import GROUPS, OPTIMIZERS, PROCESSES, TABLES, TASKS
from mixed_iceberg.optimizer.sysdb.states import ProcessStatus, TableStatus, TaskStatus
from mixed_iceberg.optimizer.sysdb.tasks import executor_ms

__all__ = ["OperatorQueries"]

_WAITING_OR_RUNNING = (TaskStatus.PLANNED, TaskStatus.SCHEDULED, TaskStatus.ACKED)
_IN_FLIGHT = (TaskStatus.SCHEDULED, TaskStatus.ACKED)


def counts(c: Any, key: Any, status: Any, where: Any = None) -> dict[tuple[str, Any], int]:
    """How many rows per (``key``, ``status``) value pair, of the rows ``where`` keeps (all: None)."""
    query = select(key, status, func.count())
    query = query if where is None else query.where(where)
    return {(k, s): int(n) for k, s, n in c.execute(query.group_by(key, status))}


class OperatorQueries(Connected):
    """Read-only queries for the management plane."""

    def process_history(self, table_id: str, *, limit: int = 50) -> list[ProcessHistory]:
        """``table_id``'s last ``limit`` processes, newest first, each with its tasks in order."""
        with self._read("process_history") as c:
            processes = [
                record(ProcessRecord, row)
                for row in c.execute(
                    select(PROCESSES).where(PROCESSES.c.table_id == table_id).order_by(PROCESSES.c.process_id.desc()).limit(limit)
                )
            ]
            tasks: dict[int, list[TaskRecord]] = defaultdict(list)
            if processes:
                for row in c.execute(
                    select(TASKS)
                    .where(TASKS.c.process_id.in_([p.process_id for p in processes]))
                    .order_by(TASKS.c.process_id, TASKS.c.task_id)
                ):
                    task = record(TaskRecord, row)
                    tasks[task.process_id].append(task)
        return [ProcessHistory(process=p, tasks=tuple(tasks[p.process_id])) for p in processes]

    def group_queues(self, *, window_ms: int, heartbeat_timeout_ms: int) -> list[GroupQueue]:
        """Every group known to the database (started once, serving a table, or with a live
        optimizer), by name: its
        live optimizers (heartbeat within ``heartbeat_timeout_ms``), tasks by state, tables,
        processes in flight and the executor time used over the last ``window_ms``."""
        now = now_ms()
        since = now - window_ms
        with self._read("group_queues") as c:
            names = set(c.execute(select(GROUPS.c.name)).scalars())
            names.update(c.execute(select(TABLES.c.group_name).distinct()).scalars())
            live: dict[str, tuple[int, int]] = {
                row.group_name: (int(row.n), int(row.threads or 0))
                for row in c.execute(
                    select(OPTIMIZERS.c.group_name, func.count().label("n"), func.sum(OPTIMIZERS.c.threads).label("threads"))
                    .where(OPTIMIZERS.c.stopped_ms.is_(None), OPTIMIZERS.c.heartbeat_ms >= now - heartbeat_timeout_ms)
                    .group_by(OPTIMIZERS.c.group_name)
                )
            }
            names.update(live)
            tasks = counts(c, TASKS.c.group_name, TASKS.c.status, TASKS.c.status.in_(_WAITING_OR_RUNNING))
            tables = counts(c, TABLES.c.group_name, TABLES.c.status)
            processes = counts(
                c,
                PROCESSES.c.group_name,
                PROCESSES.c.status,
                PROCESSES.c.status.in_((ProcessStatus.RUNNING, ProcessStatus.COMMITTING)),
            )
            executor = executor_ms(c, TASKS.c.group_name, since, now)
        return [
            GroupQueue(
                group_name=name,
                live_optimizers=live.get(name, (0, 0))[0],
                threads=live.get(name, (0, 0))[1],
                tasks_planned=tasks.get((name, TaskStatus.PLANNED), 0),
                tasks_scheduled=tasks.get((name, TaskStatus.SCHEDULED), 0),
                tasks_acked=tasks.get((name, TaskStatus.ACKED), 0),
                tables=sum(n for (group, _), n in tables.items() if group == name),
                tables_failed=tables.get((name, TableStatus.FAILED), 0),
                processes_running=processes.get((name, ProcessStatus.RUNNING), 0),
                processes_committing=processes.get((name, ProcessStatus.COMMITTING), 0),
                executor_ms=executor.get(name, 0),
                window_ms=window_ms,
            )
            for name in sorted(names)
        ]

    def idle_optimizers(self, *, heartbeat_timeout_ms: int) -> dict[str, int]:
        """Per group, its live optimizers (heartbeat within ``heartbeat_timeout_ms``) that hold no
        SCHEDULED or ACKED task: one aggregate query."""
        busy = select(TASKS.c.owner).where(TASKS.c.status.in_(_IN_FLIGHT), TASKS.c.owner.is_not(None))
        query = (
            select(OPTIMIZERS.c.group_name, func.count())
            .where(
                OPTIMIZERS.c.stopped_ms.is_(None),
                OPTIMIZERS.c.heartbeat_ms >= now_ms() - heartbeat_timeout_ms,
                OPTIMIZERS.c.optimizer_id.not_in(busy),
            )
            .group_by(OPTIMIZERS.c.group_name)
        )
        with self._read("idle_optimizers") as c:
            return {group: int(n) for group, n in c.execute(query)}

    def failed_tasks(self) -> dict[str, int]:
        """Per group, its FAILED tasks the database records: one aggregate query."""
        query = select(TASKS.c.group_name, func.count()).where(TASKS.c.status == TaskStatus.FAILED).group_by(TASKS.c.group_name)
        with self._read("failed_tasks") as c:
            return {group: int(n) for group, n in c.execute(query)}

    def process_totals(self) -> dict[tuple[str, OptimizingType, ProcessStatus], int]:
        """How many processes the database records, by (table id, type, status): one aggregate query."""
        query = select(PROCESSES.c.table_id, PROCESSES.c.type, PROCESSES.c.status, func.count()).group_by(
            PROCESSES.c.table_id, PROCESSES.c.type, PROCESSES.c.status
        )
        with self._read("process_totals") as c:
            return {(table_id, kind, status): int(n) for table_id, kind, status, n in c.execute(query)}

    def table_states(self) -> list[TableState]:
        """Every served table's group, status, last optimizing and failures, by table id: one
        query of six columns (no record check per row: the columns are named here)."""
        t = TABLES.c
        query = select(
            t.table_id, t.group_name, t.status, t.last_minor_ms, t.last_major_ms, t.last_full_ms, t.failures, t.last_error
        ).order_by(t.table_id)
        with self._read("table_states") as c:
            rows = c.execute(query).all()
        return [
            TableState(
                table_id=table_id,
                group_name=group,
                status=status,
                last_optimized_ms=max(minor or 0, major or 0, full or 0) or None,
                failures=failures,
                last_error=error,
            )
            for table_id, group, status, minor, major, full, failures, error in rows
        ]

    def table_stats(self, group: str | None = None, *, window_ms: int) -> list[TableRuntimeStats]:
        """Every served table (of ``group``, or all), by table id: its runtime row, the executor
        time its tasks used over the last ``window_ms``, its running and waiting tasks, its
        processes that succeeded or failed within the window, and its latest process."""
        now = now_ms()
        since = now - window_ms

        def of_group(query: Any) -> Any:
            return query if group is None else query.where(TABLES.c.group_name == group)

        with self._read("table_stats") as c:
            runtimes = [record(TableRuntime, row) for row in c.execute(of_group(select(TABLES)).order_by(TABLES.c.table_id))]
            executor = executor_ms(c, TASKS.c.table_id, since, now)
            tasks = counts(c, TASKS.c.table_id, TASKS.c.status, TASKS.c.status.in_(_WAITING_OR_RUNNING))
            outcomes = counts(c, PROCESSES.c.table_id, PROCESSES.c.status, PROCESSES.c.finished_ms >= since)
            latest_ids = select(func.max(PROCESSES.c.process_id)).group_by(PROCESSES.c.table_id).scalar_subquery()
            latest = {
                p.table_id: p
                for p in (
                    record(ProcessRecord, row)
                    for row in c.execute(select(PROCESSES).where(PROCESSES.c.process_id.in_(latest_ids)))
                )
            }
        return [
            TableRuntimeStats(
                runtime=runtime,
                executor_ms=executor.get(runtime.table_id, 0),
                window_ms=window_ms,
                tasks_running=tasks.get((runtime.table_id, TaskStatus.SCHEDULED), 0)
                + tasks.get((runtime.table_id, TaskStatus.ACKED), 0),
                tasks_waiting=tasks.get((runtime.table_id, TaskStatus.PLANNED), 0),
                processes_succeeded=outcomes.get((runtime.table_id, ProcessStatus.SUCCESS), 0),
                processes_failed=outcomes.get((runtime.table_id, ProcessStatus.FAILED), 0),
                last_process=latest.get(runtime.table_id),
            )
            for runtime in runtimes
        ]
