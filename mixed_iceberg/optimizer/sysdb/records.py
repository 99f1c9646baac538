"""The rows of the system database as its API returns them: frozen records, statuses as enums.

:class:`~mixed_iceberg.optimizer.sysdb.database.SystemDatabase` returns these; the columns are
documented in :mod:`mixed_iceberg.optimizer.sysdb.schema`, the states in
:mod:`mixed_iceberg.optimizer.sysdb.states`. The operator records (:class:`ProcessHistory`,
:class:`GroupQueue`, :class:`TableRuntimeStats`) are what the dashboard and the metrics read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from sqlalchemy.engine import Row

from mixed_iceberg.config.kinds import OptimizingType
from mixed_iceberg.optimizer.sysdb.states import ProcessStatus, TableStatus, TaskStatus

__all__ = [
    "GroupQueue",
    "GroupRecord",
    "OptimizerRecord",
    "ProcessHistory",
    "ProcessRecord",
    "TableRuntime",
    "TableRuntimeStats",
    "TableState",
    "TaskRecord",
    "now_ms",
    "record",
]


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupRecord:
    """One row of ``optimizer_groups``: a group as last started."""

    name: str
    container: str
    properties: str  # JSON object
    updated_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OptimizerRecord:
    """One row of ``optimizers``."""

    optimizer_id: str
    group_name: str
    container: str
    threads: int
    host: str
    pid: int
    started_ms: int
    heartbeat_ms: int
    stopped_ms: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRuntime:
    """One row of ``table_runtime``."""

    table_id: str
    catalog: str
    table_name: str
    group_name: str
    status: TableStatus
    quota: float
    owner: str | None
    lease_ms: int | None
    pending_type: OptimizingType | None
    pending_reason: str | None
    process_id: int | None
    last_minor_ms: int | None
    last_major_ms: int | None
    last_full_ms: int | None
    last_error: str | None
    last_error_ms: int | None
    failures: int
    next_plan_ms: int
    last_maintenance_ms: int | None
    maintenance_error: str | None
    updated_ms: int

    @property
    def last_optimized_ms(self) -> int:
        return max(self.last_minor_ms or 0, self.last_major_ms or 0, self.last_full_ms or 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessRecord:
    """One row of ``optimizing_processes``."""

    process_id: int
    table_id: str
    group_name: str
    type: OptimizingType
    status: ProcessStatus
    planned_by: str
    planned_ms: int
    finished_ms: int | None
    base_metadata: str
    change_metadata: str | None
    unit: bool
    task_count: int
    snapshot_id: int | None
    error: str | None
    bytes_in: int
    bytes_out: int
    rows_in: int
    rows_out: int
    files_in: int
    files_out: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRecord:
    """One row of ``optimizing_tasks``."""

    process_id: int
    task_id: int
    table_id: str
    group_name: str
    status: TaskStatus
    input: str  # JSON, see mixed_iceberg.optimizer.codec
    input_bytes: int
    output: str | None
    runs: int
    retries: int
    max_retries: int | None  # the table's execute.num-retries when planned (None: planned before schema 3)
    owner: str | None
    thread: int | None
    lease_ms: int | None
    scheduled_ms: int | None
    started_ms: int | None
    finished_ms: int | None
    duration_ms: int
    rows_in: int
    rows_out: int
    bytes_out: int
    error: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessHistory:
    """One process of a table with its tasks (the dashboard's optimizing history)."""

    process: ProcessRecord
    tasks: tuple[TaskRecord, ...]

    @property
    def duration_ms(self) -> int | None:
        """Planned to ended; None while it runs."""
        end = self.process.finished_ms
        return None if end is None else end - self.process.planned_ms


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupQueue:
    """One group's backlog and occupation now (the metrics' per-group gauges)."""

    group_name: str
    live_optimizers: int
    threads: int  # executor threads of its live optimizers
    tasks_planned: int  # waiting for an executor
    tasks_scheduled: int
    tasks_acked: int  # running
    tables: int
    tables_failed: int
    processes_running: int
    processes_committing: int
    executor_ms: int  # executor time used within the window (running tasks up to now)
    window_ms: int

    @property
    def occupation(self) -> float:
        """The share of the group's executor time used over the window (1.0: every thread busy)."""
        return self.executor_ms / max(1, self.window_ms) / max(1, self.threads)


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRuntimeStats:
    """One table's runtime as operators see it: its state and the executor time it used."""

    runtime: TableRuntime
    executor_ms: int  # executor time of its tasks within the window (running tasks up to now)
    window_ms: int
    tasks_running: int
    tasks_waiting: int
    processes_succeeded: int  # ended within the window
    processes_failed: int
    last_process: ProcessRecord | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TableState:
    """What a list of thousands of tables shows of each one's runtime (the dashboard's table list):
    a few columns of ``table_runtime``, read in one query."""

    table_id: str
    group_name: str
    status: TableStatus
    last_optimized_ms: int | None  # the newest successful optimizing of any type (None: never)
    failures: int
    last_error: str | None


R = TypeVar("R")


def record(cls: type[R], row: Row[Any]) -> R:
    """The record of a row; its columns must be exactly the record's fields."""
    values = row._asdict()
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    if values.keys() != names:
        raise ValueError(f"{cls.__name__}: expected columns {sorted(names)}, found {sorted(values)}")
    return cls(**values)
