"""``SystemDatabase``: every read and write of the optimizer's system database, in one place.

The optimizers of a group coordinate through it alone: no optimizer talks to another.

* An optimizer registers and then heartbeats. Each heartbeat also renews the leases on the
  tasks it runs and the tables it owns.
* A table is planned and committed only by the optimizer holding its lease
  (:meth:`claim_table`). The lease is a conditional ``UPDATE`` that succeeds for one optimizer
  only, so no table is ever optimized by two at once.
* Each task is claimed the same way (:meth:`poll_task`): PLANNED, then SCHEDULED, ACKED, and
  SUCCESS or FAILED.
* :meth:`reset_expired` gives work back when its owner stops heartbeating or a deadline
  passes, so every in-flight state has an owner and a deadline.

Claims are optimistic. A row is read, then updated only if it is still as read, and the row
count says who won. This works the same on SQLite and on PostgreSQL (read committed), without
``SELECT ... FOR UPDATE``.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, and_, create_engine, event, func, or_, select, update
from sqlalchemy.engine import Connection

from mixed_iceberg.exceptions import ConfigError, TableBusyError
from mixed_iceberg.optimizer.sysdb.records import (
    ENDED,
    IN_FLIGHT,
    ProcessRecord,
    TableRuntime,
    TaskRecord,
    now_ms,
    record,
)
from mixed_iceberg.optimizer.sysdb.schema import GROUPS, OPTIMIZERS, PROCESSES, TABLES, TASKS

__all__ = ["ENDED", "HEAD", "ProcessRecord", "SystemDatabase", "TableRuntime", "TaskRecord", "now_ms"]

#: The newest schema version (the Alembic revision of ``migrations/versions/``).
HEAD = "0002"
_MIGRATIONS = Path(__file__).with_name("migrations")
_SQLITE_BUSY_MS = 60_000


class SystemDatabase:
    """The system database at ``url`` (SQLAlchemy: ``sqlite:///path`` or ``postgresql+psycopg2://...``).

    Raises:
        ConfigError: the URL does not parse or names a driver that is not installed.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            if url.startswith("sqlite"):
                self.engine: Engine = create_engine(url, connect_args={"timeout": 60, "check_same_thread": False})
                event.listen(self.engine, "connect", _sqlite_connect)
                event.listen(self.engine, "begin", _sqlite_begin)
            else:
                self.engine = create_engine(url, pool_pre_ping=True)
        except Exception as exc:
            raise ConfigError(f"system database {url!r}: {exc}") from exc

    def __repr__(self) -> str:
        return f"SystemDatabase({self.engine.url.render_as_string(hide_password=True)!r})"

    # -- schema ---------------------------------------------------------------------------------

    def migrate(self, revision: str = "head") -> None:
        """Bring the schema to ``revision`` (default: the newest), from an empty database or any older version."""
        config = Config()
        config.set_main_option("script_location", str(_MIGRATIONS))
        with self.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)

    def schema_version(self) -> str | None:
        """The schema's revision; None for a database never migrated."""
        with self.engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()

    def dispose(self) -> None:
        self.engine.dispose()

    def _begin(self) -> Any:
        return self.engine.begin()

    # -- groups and optimizers -------------------------------------------------------------------

    def upsert_group(self, name: str, container: str, properties: Mapping[str, str]) -> None:
        with self._begin() as c:
            values = {"container": container, "properties": json.dumps(dict(properties), sort_keys=True), "updated_ms": now_ms()}
            if c.execute(update(GROUPS).where(GROUPS.c.name == name).values(**values)).rowcount == 0:
                c.execute(GROUPS.insert().values(name=name, **values))

    def register_optimizer(self, group: str, container: str, threads: int) -> str:
        """A fresh optimizer id, alive as of now."""
        optimizer_id = f"{socket.gethostname()[:32]}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        now = now_ms()
        with self._begin() as c:
            c.execute(
                OPTIMIZERS.insert().values(
                    optimizer_id=optimizer_id,
                    group_name=group,
                    container=container,
                    threads=threads,
                    host=socket.gethostname()[:255],
                    pid=os.getpid(),
                    started_ms=now,
                    heartbeat_ms=now,
                    stopped_ms=None,
                )
            )
        return optimizer_id

    def heartbeat(self, optimizer_id: str, lease_ms: int) -> bool:
        """Renew ``optimizer_id``'s heartbeat and the leases on its tasks and tables until ``lease_ms``.

        Returns False when the optimizer was declared dead meanwhile (it must stop its work:
        its tasks and tables went to others).
        """
        now = now_ms()
        with self._begin() as c:
            alive = c.execute(
                update(OPTIMIZERS)
                .where(OPTIMIZERS.c.optimizer_id == optimizer_id, OPTIMIZERS.c.stopped_ms.is_(None))
                .values(heartbeat_ms=now)
            ).rowcount
            if not alive:
                return False
            c.execute(update(TASKS).where(TASKS.c.owner == optimizer_id, TASKS.c.status == "ACKED").values(lease_ms=lease_ms))
            c.execute(update(TABLES).where(TABLES.c.owner == optimizer_id).values(lease_ms=lease_ms))
        return True

    def stop_optimizer(self, optimizer_id: str) -> None:
        """Unregister: its tables' leases end and its unfinished tasks go back to PLANNED (not a retry)."""
        now = now_ms()
        with self._begin() as c:
            c.execute(update(OPTIMIZERS).where(OPTIMIZERS.c.optimizer_id == optimizer_id).values(stopped_ms=now))
            self._release_owner(c, optimizer_id)

    def _release_owner(self, c: Connection, optimizer_id: str) -> None:
        c.execute(
            update(TASKS)
            .where(TASKS.c.owner == optimizer_id, TASKS.c.status.in_(IN_FLIGHT))
            .values(status="PLANNED", owner=None, thread=None, lease_ms=None)
        )
        c.execute(update(TABLES).where(TABLES.c.owner == optimizer_id).values(owner=None, lease_ms=None))

    def live_optimizers(self, group: str | None, timeout_ms: int) -> list[dict[str, Any]]:
        """Optimizers (of ``group``, or all) that heartbeat within ``timeout_ms`` and did not stop."""
        since = now_ms() - timeout_ms
        query = select(OPTIMIZERS).where(OPTIMIZERS.c.stopped_ms.is_(None), OPTIMIZERS.c.heartbeat_ms >= since)
        if group is not None:
            query = query.where(OPTIMIZERS.c.group_name == group)
        with self.engine.connect() as c:
            return [row._asdict() for row in c.execute(query)]

    def optimizers(self, group: str | None = None) -> list[dict[str, Any]]:
        """Every optimizer ever registered (of ``group``, or all), oldest first, stopped ones included."""
        query = select(OPTIMIZERS).order_by(OPTIMIZERS.c.started_ms)
        if group is not None:
            query = query.where(OPTIMIZERS.c.group_name == group)
        with self.engine.connect() as c:
            return [row._asdict() for row in c.execute(query)]

    def group_threads(self, group: str, timeout_ms: int) -> int:
        """Executor threads of the group's live optimizers (at least 1, as Amoro counts them)."""
        return max(1, sum(int(o["threads"]) for o in self.live_optimizers(group, timeout_ms)))

    def groups(self) -> list[dict[str, Any]]:
        with self.engine.connect() as c:
            return [row._asdict() for row in c.execute(select(GROUPS).order_by(GROUPS.c.name))]

    # -- tables ----------------------------------------------------------------------------------

    def sync_tables(self, group: str, tables: Iterable[tuple[str, str, str, float]]) -> None:
        """Record the group's tables as discovered now: ``(table_id, catalog, name, quota)``.

        New tables start IDLE; a table that moved to this group follows. A table no longer
        discovered (disabled, dropped, moved away) is removed unless a process is in flight.
        """
        now = now_ms()
        found = {t[0]: t for t in tables}
        with self._begin() as c:
            existing = {row.table_id: row for row in c.execute(select(TABLES).where(TABLES.c.group_name == group))}
            for table_id, catalog, name, quota in found.values():
                if table_id in existing:
                    if existing[table_id].quota != quota:
                        c.execute(update(TABLES).where(TABLES.c.table_id == table_id).values(quota=quota, updated_ms=now))
                    continue
                moved = c.execute(
                    update(TABLES).where(TABLES.c.table_id == table_id).values(group_name=group, quota=quota, updated_ms=now)
                ).rowcount
                if not moved:
                    c.execute(
                        TABLES.insert().values(
                            table_id=table_id,
                            catalog=catalog,
                            table_name=name,
                            group_name=group,
                            status="IDLE",
                            quota=quota,
                            failures=0,
                            next_plan_ms=0,
                            updated_ms=now,
                        )
                    )
            gone = [t for t in existing if t not in found and existing[t].process_id is None]
            if gone:
                c.execute(TABLES.delete().where(TABLES.c.table_id.in_(gone)))

    def tables(self, group: str | None = None) -> list[TableRuntime]:
        query = select(TABLES).order_by(TABLES.c.table_id)
        if group is not None:
            query = query.where(TABLES.c.group_name == group)
        with self.engine.connect() as c:
            return [record(TableRuntime, row) for row in c.execute(query)]

    def table(self, table_id: str) -> TableRuntime | None:
        with self.engine.connect() as c:
            row = c.execute(select(TABLES).where(TABLES.c.table_id == table_id)).first()
        return record(TableRuntime, row) if row is not None else None

    def claim_table(self, table_id: str, optimizer_id: str, lease_ms: int) -> bool:
        """Take (or keep) ``table_id``'s lease: only its holder plans and commits it."""
        now = now_ms()
        with self._begin() as c:
            won = c.execute(
                update(TABLES)
                .where(
                    TABLES.c.table_id == table_id,
                    or_(TABLES.c.owner.is_(None), TABLES.c.owner == optimizer_id, TABLES.c.lease_ms < now),
                )
                .values(owner=optimizer_id, lease_ms=lease_ms)
            ).rowcount
        return bool(won)

    def release_table(self, table_id: str, optimizer_id: str) -> None:
        with self._begin() as c:
            c.execute(
                update(TABLES)
                .where(TABLES.c.table_id == table_id, TABLES.c.owner == optimizer_id)
                .values(owner=None, lease_ms=None)
            )

    def set_idle_table(self, table_id: str, **values: Any) -> bool:
        """:meth:`set_table` if the table has no process in flight; whether it had none."""
        with self._begin() as c:
            return bool(
                c.execute(
                    update(TABLES)
                    .where(TABLES.c.table_id == table_id, TABLES.c.process_id.is_(None))
                    .values(updated_ms=now_ms(), **values)
                ).rowcount
            )

    def set_table(self, table_id: str, **values: Any) -> None:
        """Update columns of a table's runtime row (status, pending_type, last_error, ...)."""
        with self._begin() as c:
            c.execute(update(TABLES).where(TABLES.c.table_id == table_id).values(updated_ms=now_ms(), **values))

    # -- processes and tasks -----------------------------------------------------------------------

    def create_process(
        self,
        *,
        table_id: str,
        group: str,
        type: str,
        planned_by: str,
        base_metadata: str,
        change_metadata: str | None,
        unit: bool,
        tasks: Sequence[tuple[str, int]],
    ) -> int:
        """A RUNNING process of PLANNED tasks (``(input JSON, input bytes)`` each); the table shows its type.

        Raises:
            TableBusyError: the table has a process in flight (a table never has two).
        """
        now = now_ms()
        with self._begin() as c:
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
                    type=type,
                    status="RUNNING",
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
            process_id = int(result.inserted_primary_key[0])
            c.execute(
                TASKS.insert(),
                [
                    {
                        "process_id": process_id,
                        "task_id": i,
                        "table_id": table_id,
                        "group_name": group,
                        "status": "PLANNED",
                        "input": text,
                        "input_bytes": size,
                        "runs": 0,
                        "retries": 0,
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
                .values(status=type.upper(), process_id=process_id, pending_type=None, updated_ms=now)
            )
        return process_id

    def process(self, process_id: int) -> ProcessRecord | None:
        with self.engine.connect() as c:
            row = c.execute(select(PROCESSES).where(PROCESSES.c.process_id == process_id)).first()
        return record(ProcessRecord, row) if row is not None else None

    def processes(self, table_id: str | None = None, group: str | None = None) -> list[ProcessRecord]:
        query = select(PROCESSES).order_by(PROCESSES.c.process_id)
        if table_id is not None:
            query = query.where(PROCESSES.c.table_id == table_id)
        if group is not None:
            query = query.where(PROCESSES.c.group_name == group)
        with self.engine.connect() as c:
            return [record(ProcessRecord, row) for row in c.execute(query)]

    def tasks(self, process_id: int | None = None, *, group: str | None = None, status: str | None = None) -> list[TaskRecord]:
        query = select(TASKS).order_by(TASKS.c.process_id, TASKS.c.task_id)
        if process_id is not None:
            query = query.where(TASKS.c.process_id == process_id)
        if group is not None:
            query = query.where(TASKS.c.group_name == group)
        if status is not None:
            query = query.where(TASKS.c.status == status)
        with self.engine.connect() as c:
            return [record(TaskRecord, row) for row in c.execute(query)]

    def table_loads(self, group: str, since_ms: int) -> list[dict[str, Any]]:
        """Per served table of ``group``: quota, executor ms since ``since_ms`` (running tasks up to
        now), running and waiting task counts, last optimize time."""
        now = now_ms()
        with self.engine.connect() as c:
            tables = {row.table_id: row for row in c.execute(select(TABLES).where(TABLES.c.group_name == group))}
            done = dict(
                c.execute(
                    select(TASKS.c.table_id, func.sum(TASKS.c.duration_ms))
                    .where(TASKS.c.group_name == group, TASKS.c.finished_ms >= since_ms)
                    .group_by(TASKS.c.table_id)
                ).all()
            )
            running: dict[str, int] = {}
            elapsed: dict[str, int] = {}
            for row in c.execute(
                select(TASKS.c.table_id, TASKS.c.started_ms).where(TASKS.c.group_name == group, TASKS.c.status.in_(IN_FLIGHT))
            ):
                running[row.table_id] = running.get(row.table_id, 0) + 1
                if row.started_ms is not None:
                    elapsed[row.table_id] = elapsed.get(row.table_id, 0) + now - max(row.started_ms, since_ms)
            waiting = {
                row.table_id
                for row in c.execute(
                    select(TASKS.c.table_id).where(TASKS.c.group_name == group, TASKS.c.status == "PLANNED").distinct()
                )
            }
        return [
            {
                "table_id": table_id,
                "quota": row.quota,
                "executor_ms": int(done.get(table_id) or 0) + elapsed.get(table_id, 0),
                "running": running.get(table_id, 0),
                "last_optimized_ms": max(row.last_minor_ms or 0, row.last_major_ms or 0, row.last_full_ms or 0),
                "waiting": table_id in waiting,
            }
            for table_id, row in tables.items()
        ]

    def claim_task(self, table_id: str, optimizer_id: str, thread: int, lease_ms: int) -> TaskRecord | None:
        """Schedule the first PLANNED task of ``table_id`` to ``optimizer_id``'s ``thread``; None if none is left."""
        now = now_ms()
        with self.engine.connect() as c:
            candidates = c.execute(
                select(TASKS.c.process_id, TASKS.c.task_id)
                .where(TASKS.c.table_id == table_id, TASKS.c.status == "PLANNED")
                .order_by(TASKS.c.process_id, TASKS.c.task_id)
                .limit(8)
            ).all()
        for process_id, task_id in candidates:
            key = and_(TASKS.c.process_id == process_id, TASKS.c.task_id == task_id)
            with self._begin() as c:
                won = c.execute(
                    update(TASKS)
                    .where(key, TASKS.c.status == "PLANNED")
                    .values(status="SCHEDULED", owner=optimizer_id, thread=thread, scheduled_ms=now, lease_ms=lease_ms)
                ).rowcount
                if won:
                    row = c.execute(select(TASKS).where(key)).one()
                    return record(TaskRecord, row)  # type: ignore[no-any-return]
        return None

    def ack_task(self, task: TaskRecord, optimizer_id: str, lease_ms: int) -> bool:
        """SCHEDULED -> ACKED: the executor starts it (one more run)."""
        with self._begin() as c:
            return bool(
                c.execute(
                    update(TASKS)
                    .where(*_key(task), TASKS.c.owner == optimizer_id, TASKS.c.status == "SCHEDULED")
                    .values(status="ACKED", started_ms=now_ms(), lease_ms=lease_ms, runs=TASKS.c.runs + 1)
                ).rowcount
            )

    def complete_task(
        self, task: TaskRecord, optimizer_id: str, *, output: str, rows_in: int, rows_out: int, bytes_out: int, duration_ms: int
    ) -> bool:
        """ACKED -> SUCCESS with its output; False when the task was taken back meanwhile (its output is then dropped)."""
        with self._begin() as c:
            return bool(
                c.execute(
                    update(TASKS)
                    .where(*_key(task), TASKS.c.owner == optimizer_id, TASKS.c.status == "ACKED")
                    .values(
                        status="SUCCESS",
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

    def fail_task(
        self, task: TaskRecord, optimizer_id: str | None, *, error: str, duration_ms: int, max_retries: int
    ) -> str | None:
        """A failed run: back to PLANNED while retries remain, else FAILED. Returns the new status (None: not ours)."""
        with self._begin() as c:
            owner = [TASKS.c.owner == optimizer_id] if optimizer_id is not None else []
            row = c.execute(select(TASKS.c.retries).where(*_key(task), *owner, TASKS.c.status.in_(IN_FLIGHT))).first()
            if row is None:
                return None
            retries = int(row.retries) + 1
            status = "PLANNED" if retries <= max_retries else "FAILED"
            done = c.execute(
                update(TASKS)
                .where(*_key(task), *owner, TASKS.c.status.in_(IN_FLIGHT))
                .values(
                    status=status,
                    retries=retries,
                    error=error[:4000],
                    finished_ms=now_ms(),
                    duration_ms=TASKS.c.duration_ms + duration_ms,
                    owner=None,
                    thread=None,
                    lease_ms=None,
                )
            ).rowcount
        return status if done else None

    def reset_expired(self, group: str, *, heartbeat_timeout_ms: int, ack_timeout_ms: int, max_retries: int) -> int:
        """Give back what dead or late executors hold; returns how many tasks went back.

        * An optimizer that has not heartbeat for ``heartbeat_timeout_ms`` is stopped. Its
          SCHEDULED and ACKED tasks go back to PLANNED (not counted as retries), and its table
          leases end.
        * A task SCHEDULED for longer than ``ack_timeout_ms`` goes back to PLANNED.
        * An ACKED task whose lease ran out (the execute timeout) is a failed run.
        """
        now = now_ms()
        reset = 0
        with self._begin() as c:
            dead = [
                row.optimizer_id
                for row in c.execute(
                    select(OPTIMIZERS.c.optimizer_id).where(
                        OPTIMIZERS.c.group_name == group,
                        OPTIMIZERS.c.stopped_ms.is_(None),
                        OPTIMIZERS.c.heartbeat_ms < now - heartbeat_timeout_ms,
                    )
                )
            ]
            for optimizer_id in dead:
                c.execute(update(OPTIMIZERS).where(OPTIMIZERS.c.optimizer_id == optimizer_id).values(stopped_ms=now))
                reset += c.execute(
                    update(TASKS)
                    .where(TASKS.c.owner == optimizer_id, TASKS.c.status.in_(IN_FLIGHT))
                    .values(status="PLANNED", owner=None, thread=None, lease_ms=None)
                ).rowcount
                c.execute(update(TABLES).where(TABLES.c.owner == optimizer_id).values(owner=None, lease_ms=None))
            reset += c.execute(
                update(TASKS)
                .where(TASKS.c.group_name == group, TASKS.c.status == "SCHEDULED", TASKS.c.scheduled_ms < now - ack_timeout_ms)
                .values(status="PLANNED", owner=None, thread=None, lease_ms=None)
            ).rowcount
            late = c.execute(
                select(TASKS).where(TASKS.c.group_name == group, TASKS.c.status == "ACKED", TASKS.c.lease_ms < now)
            ).all()
        for row in late:
            task = record(TaskRecord, row)
            if self.fail_task(
                task, None, error="task-execute-timeout: its lease ran out", duration_ms=0, max_retries=max_retries
            ):
                reset += 1
        return int(reset)

    def finish_process(
        self,
        process: ProcessRecord,
        status: str,
        *,
        error: str | None = None,
        snapshot_id: int | None = None,
        backoff_ms: int = 0,
        files_in: int = 0,
        files_out: int = 0,
    ) -> bool:
        """End a process (SUCCESS, FAILED, CANCELED) and set its table: IDLE after success (with its
        optimize time), FAILED with the error otherwise (planned again after ``backoff_ms``,
        doubled per consecutive failure). Tasks not finished are CANCELED.

        Once only: False (and nothing changed) when the process had ended already. A second
        optimizer that read the table before the first ended the process would otherwise end
        it again and detach the table's next process, which a third round then planned beside."""
        now = now_ms()
        with self._begin() as c:
            tasks = c.execute(select(TASKS).where(TASKS.c.process_id == process.process_id)).all()
            ended = c.execute(
                update(PROCESSES)
                .where(PROCESSES.c.process_id == process.process_id, PROCESSES.c.status.notin_(ENDED))
                .values(
                    status=status,
                    finished_ms=now,
                    error=error[:4000] if error else None,
                    snapshot_id=snapshot_id,
                    bytes_out=sum(t.bytes_out for t in tasks if t.status == "SUCCESS"),
                    rows_in=sum(t.rows_in for t in tasks if t.status == "SUCCESS"),
                    rows_out=sum(t.rows_out for t in tasks if t.status == "SUCCESS"),
                    files_in=files_in,
                    files_out=files_out,
                )
            ).rowcount
            if not ended:
                return False
            c.execute(
                update(TASKS)
                .where(TASKS.c.process_id == process.process_id, TASKS.c.status.notin_(("SUCCESS", "FAILED")))
                .values(status="CANCELED", owner=None, thread=None, lease_ms=None)
            )
            table = c.execute(select(TABLES).where(TABLES.c.table_id == process.table_id)).first()
            values: dict[str, Any] = {"process_id": None, "updated_ms": now}
            if status == "SUCCESS":
                values.update(status="IDLE", failures=0, next_plan_ms=0, last_error=None)
                values[f"last_{process.type}_ms"] = now
            elif status == "FAILED":
                failures = (table.failures if table is not None else 0) + 1
                wait = min(3_600_000, backoff_ms * 2 ** (failures - 1))
                values.update(status="FAILED", failures=failures, next_plan_ms=now + wait, last_error=error, last_error_ms=now)
            else:
                values.update(status="IDLE")
            c.execute(
                update(TABLES)
                .where(TABLES.c.table_id == process.table_id, TABLES.c.process_id == process.process_id)
                .values(**values)
            )
        return True

    def set_process(self, process_id: int, **values: Any) -> None:
        with self._begin() as c:
            c.execute(update(PROCESSES).where(PROCESSES.c.process_id == process_id).values(**values))


def _key(task: TaskRecord) -> tuple[Any, Any]:
    return (TASKS.c.process_id == task.process_id, TASKS.c.task_id == task.task_id)


def _sqlite_connect(connection: Any, _: Any) -> None:
    # SQLAlchemy's recipe for SQLite transactions: the driver's own BEGIN is deferred, so two
    # processes that both read and then write deadlock ("database is locked" at once). Every
    # transaction begins IMMEDIATE instead (_sqlite_begin) and waits for the lock.
    connection.isolation_level = None
    cursor = connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={_SQLITE_BUSY_MS}")
    # Turning WAL on takes the database's exclusive lock, and SQLite answers "database is
    # locked" at once, without its busy handler, while another connection holds a write
    # transaction begun before WAL was on: optimizers starting together on a fresh database
    # (two subtasks of the PyFlink job in one process, in thread mode) met that. Wait instead.
    deadline = time.monotonic() + _SQLITE_BUSY_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    connection.exec_driver_sql("BEGIN IMMEDIATE")
