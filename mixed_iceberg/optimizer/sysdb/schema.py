"""The system database's tables: the documented, stable record of optimizing.

The optimizer service writes them and the management service (and ``mixed-iceberg status``)
reads them; every column is documented here. Times are epoch milliseconds (``BIGINT``), JSON is
text, statuses are their enum's value (:mod:`~mixed_iceberg.optimizer.sysdb.states`), so that
SQLite and PostgreSQL hold exactly the same values. The schema is versioned by
the Alembic migrations in ``migrations/versions/``; a test checks that the migrated database
equals this metadata.

Tables:

* ``optimizer_groups``: the groups of ``conf/optimizer.yaml`` as last started (container, properties).
* ``optimizers``: every registered optimizer (one process of the local container, one subtask of
  a Flink job) with its heartbeat; one is alive while ``heartbeat_ms`` is recent and it has not stopped.
* ``table_runtime``: one row per served table: status (IDLE, PLANNING, MINOR, MAJOR,
  FULL, COMMITTING, FAILED), the optimizer holding its lease (the only one that plans and
  commits it), last optimize time per type, the last error.
* ``optimizing_processes``: one optimizing of one table: its type, the snapshots it was planned
  on, its status (RUNNING, COMMITTING, SUCCESS, FAILED, CANCELED) and what it did.
* ``optimizing_tasks``: the tasks of a process: status (PLANNED, SCHEDULED, ACKED, SUCCESS,
  FAILED, CANCELED), input and output as small versioned JSON (:mod:`~mixed_iceberg.optimizer.codec`:
  file paths, sizes, sequence ranges, the written files' manifest entries), who runs it and
  until when (a lease), and how many failed runs it may have (the table's ``execute.num-retries``).
"""

from __future__ import annotations

import enum
from typing import Any

from sqlalchemy import BigInteger, Boolean, Column, Float, ForeignKeyConstraint, Index, Integer, MetaData, String, Table, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from mixed_iceberg.config.kinds import OptimizingType
from mixed_iceberg.exceptions import SystemDatabaseError
from mixed_iceberg.optimizer.sysdb.states import ProcessStatus, TableStatus, TaskStatus

__all__ = ["GROUPS", "METADATA", "OPTIMIZERS", "PROCESSES", "TABLES", "TASKS", "EnumText"]

METADATA = MetaData()


class EnumText(TypeDecorator[Any]):
    """A ``VARCHAR`` column holding an enum's value: the API reads and writes the enum, the
    database holds its text (the same on SQLite and PostgreSQL, readable in plain SQL)."""

    impl = String
    cache_ok = True

    def __init__(self, enum_type: type[enum.Enum], length: int) -> None:
        super().__init__(length)
        self.enum_type = enum_type

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        if value is None:
            return None
        return str(self.enum_type(value).value)

    def process_result_value(self, value: Any, dialect: Dialect) -> enum.Enum | None:
        if value is None:
            return None
        try:
            return self.enum_type(value)
        except ValueError as exc:
            expected = ", ".join(str(m.value) for m in self.enum_type)
            raise SystemDatabaseError(
                f"system database: expected a {self.enum_type.__name__} ({expected}), found {value!r}"
            ) from exc


GROUPS = Table(
    "optimizer_groups",
    METADATA,
    Column("name", String(128), primary_key=True),
    Column("container", String(16), nullable=False),
    Column("properties", Text, nullable=False),  # JSON object of the group's properties as written
    Column("updated_ms", BigInteger, nullable=False),
)

OPTIMIZERS = Table(
    "optimizers",
    METADATA,
    Column("optimizer_id", String(64), primary_key=True),
    Column("group_name", String(128), nullable=False),
    Column("container", String(16), nullable=False),
    Column("threads", Integer, nullable=False),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_ms", BigInteger, nullable=False),
    Column("heartbeat_ms", BigInteger, nullable=False),
    Column("stopped_ms", BigInteger, nullable=True),
    Index("ix_optimizers_group", "group_name"),
)

TABLES = Table(
    "table_runtime",
    METADATA,
    Column("table_id", String(512), primary_key=True),  # "<catalog>.<namespace>.<table>"
    Column("catalog", String(128), nullable=False),
    Column("table_name", String(384), nullable=False),
    Column("group_name", String(128), nullable=False),
    Column("status", EnumText(TableStatus, 16), nullable=False),
    Column("quota", Float, nullable=False),
    Column("owner", String(64), nullable=True),  # optimizer holding the lease
    Column("lease_ms", BigInteger, nullable=True),  # the lease ends then unless renewed
    Column("pending_type", EnumText(OptimizingType, 8), nullable=True),
    Column("pending_reason", Text, nullable=True),
    Column("process_id", Integer, nullable=True),  # the process in flight, if any
    Column("last_minor_ms", BigInteger, nullable=True),
    Column("last_major_ms", BigInteger, nullable=True),
    Column("last_full_ms", BigInteger, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("last_error_ms", BigInteger, nullable=True),
    Column("failures", Integer, nullable=False),  # consecutive failed processes
    Column("next_plan_ms", BigInteger, nullable=False),  # not planned before (failure back-off)
    Column("last_maintenance_ms", BigInteger, nullable=True),  # schema version 2
    Column("maintenance_error", Text, nullable=True),  # schema version 2
    Column("updated_ms", BigInteger, nullable=False),
    Index("ix_table_runtime_group", "group_name"),
)

PROCESSES = Table(
    "optimizing_processes",
    METADATA,
    Column("process_id", Integer, primary_key=True, autoincrement=True),
    Column("table_id", String(512), nullable=False),
    Column("group_name", String(128), nullable=False),
    Column("type", EnumText(OptimizingType, 8), nullable=False),
    Column("status", EnumText(ProcessStatus, 16), nullable=False),
    Column("planned_by", String(64), nullable=False),
    Column("planned_ms", BigInteger, nullable=False),
    Column("finished_ms", BigInteger, nullable=True),
    Column("base_metadata", Text, nullable=False),  # metadata file the plan read (tasks read it too)
    Column("change_metadata", Text, nullable=True),
    Column("unit", Boolean, nullable=False),  # one task merging every partition (keys move between them)
    Column("task_count", Integer, nullable=False),
    Column("snapshot_id", BigInteger, nullable=True),  # the BaseStore snapshot it committed
    Column("error", Text, nullable=True),
    Column("bytes_in", BigInteger, nullable=False),
    Column("bytes_out", BigInteger, nullable=False),
    Column("rows_in", BigInteger, nullable=False),
    Column("rows_out", BigInteger, nullable=False),
    Column("files_in", BigInteger, nullable=False),
    Column("files_out", BigInteger, nullable=False),
    Index("ix_optimizing_processes_table", "table_id", "planned_ms"),
)

TASKS = Table(
    "optimizing_tasks",
    METADATA,
    Column("process_id", Integer, primary_key=True),
    Column("task_id", Integer, primary_key=True),
    Column("table_id", String(512), nullable=False),
    Column("group_name", String(128), nullable=False),
    Column("status", EnumText(TaskStatus, 16), nullable=False),
    Column("input", Text, nullable=False),  # JSON: the partitions' RewriteTasks (paths, sizes, sequences)
    Column("input_bytes", BigInteger, nullable=False),
    Column("output", Text, nullable=True),  # JSON: files written (manifest entries), files removed (paths)
    Column("runs", Integer, nullable=False),  # executions started
    Column("retries", Integer, nullable=False),  # failed executions counted against num-retries
    Column("max_retries", Integer, nullable=True),  # the table's execute.num-retries when planned (schema version 3)
    Column("owner", String(64), nullable=True),
    Column("thread", Integer, nullable=True),
    Column("lease_ms", BigInteger, nullable=True),
    Column("scheduled_ms", BigInteger, nullable=True),
    Column("started_ms", BigInteger, nullable=True),
    Column("finished_ms", BigInteger, nullable=True),
    Column("duration_ms", BigInteger, nullable=False),  # executor time of all runs
    Column("rows_in", BigInteger, nullable=False),
    Column("rows_out", BigInteger, nullable=False),
    Column("bytes_out", BigInteger, nullable=False),
    Column("error", Text, nullable=True),
    ForeignKeyConstraint(["process_id"], ["optimizing_processes.process_id"], name="fk_tasks_process"),
    Index("ix_optimizing_tasks_queue", "group_name", "status"),
    Index("ix_optimizing_tasks_table", "table_id", "finished_ms"),
)
