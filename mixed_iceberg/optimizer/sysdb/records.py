"""The rows of the system database as the optimizer reads them: frozen records, and their states.

:class:`~mixed_iceberg.optimizer.sysdb.database.SystemDatabase` returns these; the columns are
documented in :mod:`mixed_iceberg.optimizer.sysdb.schema`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Row

__all__ = ["ENDED", "IN_FLIGHT", "ProcessRecord", "TableRuntime", "TaskRecord", "now_ms", "record"]


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRuntime:
    """One row of ``table_runtime``."""

    table_id: str
    catalog: str
    table_name: str
    group_name: str
    status: str
    quota: float
    owner: str | None
    lease_ms: int | None
    pending_type: str | None
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
    type: str
    status: str
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
    status: str
    input: str
    input_bytes: int
    output: str | None
    runs: int
    retries: int
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


def record(cls: type[Any], row: Row[Any]) -> Any:
    return cls(**row._asdict())


#: Task states that hold an executor (a lease that must be renewed).
IN_FLIGHT = ("SCHEDULED", "ACKED")
#: A process in one of these has ended; nothing changes it again.
ENDED = ("SUCCESS", "FAILED", "CANCELED")
