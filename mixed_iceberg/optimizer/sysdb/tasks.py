"""Processes and their tasks: planned, claimed, acked, completed or failed, committed, and taken
back when a deadline passes.

Claims are optimistic: a row is updated only if it is still in the state the transition
leaves (:mod:`~mixed_iceberg.optimizer.sysdb.states`), and the row count says who won. This
works the same on SQLite and on PostgreSQL (read committed), without ``SELECT ... FOR UPDATE``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, case, func, literal, or_, select, update
from sqlalchemy.engine import Connection

from mixed_iceberg.config.kinds import OptimizingType
from mixed_iceberg.config.registry import OPT_RETRIES
from mixed_iceberg.exceptions import TableBusyError
from mixed_iceberg.optimizer.scheduling import TableLoad
from mixed_iceberg.optimizer.sysdb.connection import Connected
from mixed_iceberg.optimizer.sysdb.optimizers import release_owner
from mixed_iceberg.optimizer.sysdb.records import ProcessRecord, TaskRecord, now_ms, record
from mixed_iceberg.optimizer.sysdb.schema import OPTIMIZERS, PROCESSES, TABLES, TASKS
from mixed_iceberg.optimizer.sysdb.states import PROCESS, TABLE, TASK, ProcessStatus, TaskStatus
from mixed_iceberg.optimizer.sysdb.tables import record_failure

__all__ = ["ProcessesAndTasks", "executor_ms"]

_LAST_OPTIMIZED = {
    OptimizingType.MINOR: TABLES.c.last_minor_ms,
    OptimizingType.MAJOR: TABLES.c.last_major_ms,
    OptimizingType.FULL: TABLES.c.last_full_ms,
}
_ERROR_CHARS = 4000


def _key(process_id: int, task_id: int) -> Any:
    return and_(TASKS.c.process_id == process_id, TASKS.c.task_id == task_id)


def _failed_run(c: Connection, where: Any, *, error: str, duration_ms: int) -> int:
    """The in-flight tasks matching ``where`` failed a run: back to PLANNED while their retries
    (their table's ``execute.num-retries`` when planned) last, else FAILED. How many changed."""
    retries = TASKS.c.retries + 1
    allowed = func.coalesce(TASKS.c.max_retries, OPT_RETRIES.default)
    status = case(
        (retries <= allowed, literal(TASK.retry.target, TASKS.c.status.type)),
        else_=literal(TASK.fail.target, TASKS.c.status.type),
    )
    return int(
        c.execute(
            update(TASKS)
            .where(where, TASKS.c.status.in_(TASK.retry.sources))
            .values(
                status=status,
                retries=retries,
                error=error[:_ERROR_CHARS],
                finished_ms=now_ms(),
                duration_ms=TASKS.c.duration_ms + duration_ms,
                owner=None,
                thread=None,
                lease_ms=None,
            )
        ).rowcount
    )


class ProcessesAndTasks(Connected):
    """The verbs on ``optimizing_processes`` and ``optimizing_tasks``."""

    def create_process(
        self,
        *,
        table_id: str,
        group: str,
        type: OptimizingType,
        planned_by: str,
        base_metadata: str,
        change_metadata: str | None,
        unit: bool,
        tasks: Sequence[tuple[str, int]],
        max_retries: int,
    ) -> int:
        """A RUNNING process of PLANNED tasks (``(input JSON, input bytes)`` each, each allowed
        ``max_retries`` failed runs: the table's ``execute.num-retries``); the table shows its type.

        Raises:
            TableBusyError: the table has a process in flight (a table never has two).
        """
        kind = OptimizingType(type)
        start = TABLE.start(kind)
        now = now_ms()
        with self._write("create_process") as c:
            # Locks the table's row (PostgreSQL re-checks the condition after a concurrent
            # writer commits; SQLite transactions begin IMMEDIATE) before anything is written.
            free = c.execute(
                update(TABLES).where(TABLES.c.table_id == table_id, TABLES.c.process_id.is_(None)).values(updated_ms=now)
            ).rowcount
            if not free:
                raise TableBusyError(f"{table_id}: a process is in flight; not planning another")
            result = c.execute(
                PROCESSES.insert().values(
                    table_id=table_id,
                    group_name=group,
                    type=kind,
                    status=ProcessStatus.RUNNING,
                    planned_by=planned_by,
                    planned_ms=now,
                    base_metadata=base_metadata,
                    change_metadata=change_metadata,
                    unit=unit,
                    task_count=len(tasks),
                    bytes_in=sum(size for _, size in tasks),
                    bytes_out=0,
                    rows_in=0,
                    rows_out=0,
                    files_in=0,
                    files_out=0,
                )
            )
            assert result.inserted_primary_key is not None
            process_id = int(result.inserted_primary_key[0])
            c.execute(
                TASKS.insert(),
                [
                    {
                        "process_id": process_id,
                        "task_id": i,
                        "table_id": table_id,
                        "group_name": group,
                        "status": TaskStatus.PLANNED,
                        "input": text,
                        "input_bytes": size,
                        "runs": 0,
                        "retries": 0,
                        "max_retries": max_retries,
                        "duration_ms": 0,
                        "rows_in": 0,
                        "rows_out": 0,
                        "bytes_out": 0,
                    }
                    for i, (text, size) in enumerate(tasks)
                ],
            )
            c.execute(
                update(TABLES)
                .where(TABLES.c.table_id == table_id)
                .values(status=start.target, process_id=process_id, pending_type=None, updated_ms=now)
            )
        return process_id

    def process(self, process_id: int) -> ProcessRecord | None:
        with self._read("process") as c:
            row = c.execute(select(PROCESSES).where(PROCESSES.c.process_id == process_id)).first()
        return record(ProcessRecord, row) if row is not None else None

    def processes(self, table_id: str | None = None, group: str | None = None) -> list[ProcessRecord]:
        query = select(PROCESSES).order_by(PROCESSES.c.process_id)
        if table_id is not None:
            query = query.where(PROCESSES.c.table_id == table_id)
        if group is not None:
            query = query.where(PROCESSES.c.group_name == group)
        with self._read("processes") as c:
            return [record(ProcessRecord, row) for row in c.execute(query)]

    def tasks(
        self, process_id: int | None = None, *, group: str | None = None, status: TaskStatus | None = None
    ) -> list[TaskRecord]:
        query = select(TASKS).order_by(TASKS.c.process_id, TASKS.c.task_id)
        if process_id is not None:
            query = query.where(TASKS.c.process_id == process_id)
        if group is not None:
            query = query.where(TASKS.c.group_name == group)
        if status is not None:
            query = query.where(TASKS.c.status == status)
        with self._read("tasks") as c:
            return [record(TaskRecord, row) for row in c.execute(query)]

    def table_loads(self, group: str, since_ms: int, *, waiting_only: bool = False) -> list[TableLoad]:
        """Per served table of ``group``, what the scheduling policy weighs: its quota, executor
        ms since ``since_ms`` (running tasks up to now), running tasks, last optimize time and
        whether a task of it waits. ``waiting_only``: the tables with a waiting task alone (what
        an executor picks from; none waiting costs one indexed query, whatever the tables)."""
        now = now_ms()
        with self._read("table_loads") as c:
            waiting = set(
                c.execute(
                    select(TASKS.c.table_id).where(TASKS.c.group_name == group, TASKS.c.status == TaskStatus.PLANNED).distinct()
                ).scalars()
            )
            if waiting_only and not waiting:
                return []
            query = select(TABLES).where(TABLES.c.group_name == group)
            if waiting_only:
                query = query.where(TABLES.c.table_id.in_(sorted(waiting)))
            tables = {row.table_id: row for row in c.execute(query)}
            used = executor_ms(c, TASKS.c.table_id, since_ms, now, TASKS.c.group_name == group)
            running: dict[str, int] = {
                table_id: int(count)
                for table_id, count in c.execute(
                    select(TASKS.c.table_id, func.count())
                    .where(TASKS.c.group_name == group, TASKS.c.status.in_(TaskStatus.in_flight()))
                    .group_by(TASKS.c.table_id)
                )
            }
        return [
            TableLoad(
                table_id,
                row.quota,
                used.get(table_id, 0),
                running.get(table_id, 0),
                max(row.last_minor_ms or 0, row.last_major_ms or 0, row.last_full_ms or 0),
                table_id in waiting,
            )
            for table_id, row in tables.items()
        ]

    def claim_task(self, table_id: str, optimizer_id: str, thread: int, lease_ms: int) -> TaskRecord | None:
        """Schedule the first PLANNED task of ``table_id`` to ``optimizer_id``'s ``thread`` (to be
        acked before ``lease_ms``); None if none is left."""
        claim = TASK.claim
        with self._read("claim_task") as c:
            candidates = c.execute(
                select(TASKS.c.process_id, TASKS.c.task_id)
                .where(TASKS.c.table_id == table_id, TASKS.c.status.in_(claim.sources))
                .order_by(TASKS.c.process_id, TASKS.c.task_id)
                .limit(8)
            ).all()
        for process_id, task_id in candidates:
            with self._write("claim_task") as c:
                won = c.execute(
                    update(TASKS)
                    .where(_key(process_id, task_id), TASKS.c.status.in_(claim.sources))
                    .values(status=claim.target, owner=optimizer_id, thread=thread, scheduled_ms=now_ms(), lease_ms=lease_ms)
                ).rowcount
                if won:
                    return record(TaskRecord, c.execute(select(TASKS).where(_key(process_id, task_id))).one())
        return None

    def ack_task(self, task: TaskRecord, optimizer_id: str, lease_ms: int) -> bool:
        """SCHEDULED -> ACKED: the executor starts it (one more run), to end before ``lease_ms``."""
        ack = TASK.ack
        with self._write("ack_task") as c:
            return bool(
                c.execute(
                    update(TASKS)
                    .where(_key(task.process_id, task.task_id), TASKS.c.owner == optimizer_id, TASKS.c.status.in_(ack.sources))
                    .values(status=ack.target, started_ms=now_ms(), lease_ms=lease_ms, runs=TASKS.c.runs + 1)
                ).rowcount
            )

    def complete_task(
        self, task: TaskRecord, optimizer_id: str, *, output: str, rows_in: int, rows_out: int, bytes_out: int, duration_ms: int
    ) -> bool:
        """ACKED -> SUCCESS with its output; False when the task was taken back meanwhile (its output is then dropped)."""
        complete = TASK.complete
        with self._write("complete_task") as c:
            return bool(
                c.execute(
                    update(TASKS)
                    .where(
                        _key(task.process_id, task.task_id), TASKS.c.owner == optimizer_id, TASKS.c.status.in_(complete.sources)
                    )
                    .values(
                        status=complete.target,
                        output=output,
                        finished_ms=now_ms(),
                        rows_in=rows_in,
                        rows_out=rows_out,
                        bytes_out=bytes_out,
                        duration_ms=TASKS.c.duration_ms + duration_ms,
                        lease_ms=None,
                        error=None,
                    )
                ).rowcount
            )

    def fail_task(self, task: TaskRecord, optimizer_id: str, *, error: str, duration_ms: int) -> TaskStatus | None:
        """A failed run: back to PLANNED while the task's retries last, else FAILED. Returns the
        new status (None: the task is no longer this optimizer's)."""
        key = _key(task.process_id, task.task_id)
        with self._write("fail_task") as c:
            if not _failed_run(c, and_(key, TASKS.c.owner == optimizer_id), error=error, duration_ms=duration_ms):
                return None
            status: TaskStatus = c.execute(select(TASKS.c.status).where(key)).scalar_one()
        return status

    def begin_commit(self, process: ProcessRecord, optimizer_id: str) -> bool:
        """RUNNING -> COMMITTING, the table too, if ``optimizer_id`` holds the table's lease and
        the process is still the table's; whether it began."""
        with self._write("begin_commit") as c:
            held = c.execute(
                select(TABLES.c.table_id).where(
                    TABLES.c.table_id == process.table_id,
                    TABLES.c.owner == optimizer_id,
                    TABLES.c.process_id == process.process_id,
                )
            ).first()
            if held is None:
                return False
            began = c.execute(
                update(PROCESSES)
                .where(PROCESSES.c.process_id == process.process_id, PROCESSES.c.status.in_(PROCESS.commit.sources))
                .values(status=PROCESS.commit.target)
            ).rowcount
            if began:
                c.execute(
                    update(TABLES)
                    .where(TABLES.c.table_id == process.table_id, TABLES.c.process_id == process.process_id)
                    .values(status=TABLE.commit.target, updated_ms=now_ms())
                )
        return bool(began)

    def finish_process(
        self,
        process: ProcessRecord,
        status: ProcessStatus,
        *,
        error: str | None = None,
        snapshot_id: int | None = None,
        backoff_ms: int = 0,
        files_in: int = 0,
        files_out: int = 0,
    ) -> bool:
        """End a process (SUCCESS, FAILED, CANCELED) and set its table: IDLE after success (with
        its optimize time), FAILED with the error otherwise (:func:`~mixed_iceberg.optimizer.sysdb.tables.record_failure`,
        ``backoff_ms`` the base of its back-off), IDLE when canceled. Tasks not finished are CANCELED.

        Once only: False (and nothing changed) when the process had ended already. A second
        optimizer that read the table before the first ended the process would otherwise end
        it again and detach the table's next process, which a third round then planned beside."""
        finish = PROCESS.finish(ProcessStatus(status))
        now = now_ms()
        with self._write("finish_process") as c:
            tasks = [record(TaskRecord, row) for row in c.execute(select(TASKS).where(TASKS.c.process_id == process.process_id))]
            done = [t for t in tasks if t.status is TaskStatus.SUCCESS]
            ended = c.execute(
                update(PROCESSES)
                .where(PROCESSES.c.process_id == process.process_id, PROCESSES.c.status.in_(finish.sources))
                .values(
                    status=finish.target,
                    finished_ms=now,
                    error=error[:_ERROR_CHARS] if error else None,
                    snapshot_id=snapshot_id,
                    bytes_out=sum(t.bytes_out for t in done),
                    rows_in=sum(t.rows_in for t in done),
                    rows_out=sum(t.rows_out for t in done),
                    files_in=files_in,
                    files_out=files_out,
                )
            ).rowcount
            if not ended:
                return False
            cancel = TASK.cancel
            c.execute(
                update(TASKS)
                .where(TASKS.c.process_id == process.process_id, TASKS.c.status.in_(cancel.sources))
                .values(status=cancel.target, owner=None, thread=None, lease_ms=None)
            )
            this = (TABLES.c.table_id == process.table_id, TABLES.c.process_id == process.process_id)
            if finish.target is ProcessStatus.FAILED:
                record_failure(
                    c,
                    process.table_id,
                    error=error or "failed",
                    base_backoff_ms=backoff_ms,
                    now=now,
                    process_id=process.process_id,
                )
            elif finish.target is ProcessStatus.SUCCESS:
                c.execute(
                    update(TABLES)
                    .where(*this)
                    .values(
                        {
                            TABLES.c.status: TABLE.succeed.target,
                            TABLES.c.process_id: None,
                            TABLES.c.failures: 0,
                            TABLES.c.next_plan_ms: 0,
                            TABLES.c.last_error: None,
                            TABLES.c.updated_ms: now,
                            _LAST_OPTIMIZED[OptimizingType(process.type)]: now,
                        }
                    )
                )
            else:
                c.execute(update(TABLES).where(*this).values(status=TABLE.cancel.target, process_id=None, updated_ms=now))
        return True

    def reset_expired(self, group: str, *, heartbeat_timeout_ms: int, ack_timeout_ms: int) -> int:
        """Give back what dead or late owners hold, so every in-flight state meets its deadline
        (:mod:`~mixed_iceberg.optimizer.sysdb.states`); returns how many tasks went back.

        * An optimizer that has not heartbeat for ``heartbeat_timeout_ms`` is stopped and its
          work given back (:func:`~mixed_iceberg.optimizer.sysdb.optimizers.release_owner`).
        * A task SCHEDULED for longer than ``ack_timeout_ms`` goes back to PLANNED.
        * An ACKED task whose lease ran out (``task-execute-timeout``) is a failed run, counted
          against its table's ``execute.num-retries``.
        * A table left PLANNING, or a process left COMMITTING, by a holder whose table lease ran
          out goes back to IDLE, or RUNNING (committed by the next holder; the commit is
          idempotent by its process id).
        """
        now = now_ms()
        with self._write("reset_expired") as c:
            dead = (
                c.execute(
                    select(OPTIMIZERS.c.optimizer_id).where(
                        OPTIMIZERS.c.group_name == group,
                        OPTIMIZERS.c.stopped_ms.is_(None),
                        OPTIMIZERS.c.heartbeat_ms < now - heartbeat_timeout_ms,
                    )
                )
                .scalars()
                .all()
            )
            reset = 0
            for optimizer_id in dead:
                c.execute(update(OPTIMIZERS).where(OPTIMIZERS.c.optimizer_id == optimizer_id).values(stopped_ms=now))
                reset += release_owner(c, optimizer_id)
            give_back = TASK.give_back
            reset += c.execute(
                update(TASKS)
                .where(
                    TASKS.c.group_name == group,
                    TASKS.c.status == TaskStatus.SCHEDULED,
                    TASKS.c.scheduled_ms < now - ack_timeout_ms,
                )
                .values(status=give_back.target, owner=None, thread=None, lease_ms=None)
            ).rowcount
            reset += _failed_run(
                c,
                and_(TASKS.c.group_name == group, TASKS.c.status == TaskStatus.ACKED, TASKS.c.lease_ms < now),
                error="task-execute-timeout: its lease ran out",
                duration_ms=0,
            )
            lapsed = or_(TABLES.c.owner.is_(None), TABLES.c.lease_ms < now)
            c.execute(
                update(TABLES)
                .where(
                    TABLES.c.group_name == group,
                    TABLES.c.status.in_(TABLE.unstick.sources),
                    TABLES.c.process_id.is_(None),
                    lapsed,
                )
                .values(status=TABLE.unstick.target, updated_ms=now)
            )
            stalled = c.execute(
                select(PROCESSES.c.process_id, PROCESSES.c.type, PROCESSES.c.table_id)
                .join(TABLES, TABLES.c.process_id == PROCESSES.c.process_id)
                .where(PROCESSES.c.group_name == group, PROCESSES.c.status.in_(PROCESS.resume.sources), lapsed)
            ).all()
            for process_id, kind, table_id in stalled:
                c.execute(
                    update(PROCESSES)
                    .where(PROCESSES.c.process_id == process_id, PROCESSES.c.status.in_(PROCESS.resume.sources))
                    .values(status=PROCESS.resume.target)
                )
                c.execute(
                    update(TABLES)
                    .where(TABLES.c.table_id == table_id, TABLES.c.process_id == process_id)
                    .values(status=TABLE.resume(OptimizingType(kind)).target, owner=None, lease_ms=None, updated_ms=now)
                )
        return int(reset)


def executor_ms(c: Connection, by: Any, since: int, now: int, *where: Any) -> dict[str, int]:
    """Executor ms per ``by`` (a task column): runs that ended within the window, plus the
    running ones from their start (or the window's) up to now; only tasks matching ``where``."""
    ended = {
        key: int(ms or 0)
        for key, ms in c.execute(
            select(by, func.sum(TASKS.c.duration_ms)).where(TASKS.c.finished_ms >= since, *where).group_by(by)
        ).all()
    }
    for key, ms in c.execute(
        select(by, func.sum(now - TASKS.c.started_ms))
        .where(TASKS.c.status == TaskStatus.ACKED, TASKS.c.started_ms >= since, *where)
        .group_by(by)
    ).all():
        ended[key] = ended.get(key, 0) + int(ms or 0)
    for key, count in c.execute(
        select(by, func.count()).where(TASKS.c.status == TaskStatus.ACKED, TASKS.c.started_ms < since, *where).group_by(by)
    ).all():
        ended[key] = ended.get(key, 0) + int(count) * (now - since)
    return ended
