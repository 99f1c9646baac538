"""``SystemDatabase``: every read and write of the optimizer's system database, through one object.

The optimizers of a group coordinate through it alone: no optimizer talks to another. Its
verbs are split by concern, one module each:

* :mod:`~mixed_iceberg.optimizer.sysdb.optimizers`: groups, optimizers, heartbeats and table leases;
* :mod:`~mixed_iceberg.optimizer.sysdb.tables`: the tables a group serves, planning, failures, maintenance;
* :mod:`~mixed_iceberg.optimizer.sysdb.tasks`: processes and tasks, and the deadlines that give work back;
* :mod:`~mixed_iceberg.optimizer.sysdb.history`: the operators' queries (dashboard, metrics).

Reads return frozen records (:mod:`~mixed_iceberg.optimizer.sysdb.records`), statuses are
enums, and every state transition, with its owner and deadline, is declared once in
:mod:`~mixed_iceberg.optimizer.sysdb.states`. The connection seam is
:mod:`~mixed_iceberg.optimizer.sysdb.connection`.

>>> import tempfile
>>> db = SystemDatabase(f"sqlite:///{tempfile.mkdtemp()}/system.db")
>>> db.migrate()
>>> db.sync_tables("g", [("local.db.t", "local", "db.t", 0.5)])
>>> db.table("local.db.t").status
<TableStatus.IDLE: 'IDLE'>
>>> db.dispose()
"""

from __future__ import annotations

from mixed_iceberg.optimizer.sysdb.connection import HEAD
from mixed_iceberg.optimizer.sysdb.history import OperatorQueries
from mixed_iceberg.optimizer.sysdb.optimizers import OptimizersAndLeases
from mixed_iceberg.optimizer.sysdb.records import (
    GroupQueue,
    GroupRecord,
    OptimizerRecord,
    ProcessHistory,
    ProcessRecord,
    TableRuntime,
    TableRuntimeStats,
    TaskRecord,
    now_ms,
)
from mixed_iceberg.optimizer.sysdb.states import ProcessStatus, TableStatus, TaskStatus
from mixed_iceberg.optimizer.sysdb.tables import TableRuntimes
from mixed_iceberg.optimizer.sysdb.tasks import ProcessesAndTasks

__all__ = [
    "HEAD",
    "GroupQueue",
    "GroupRecord",
    "OptimizerRecord",
    "ProcessHistory",
    "ProcessRecord",
    "ProcessStatus",
    "SystemDatabase",
    "TableRuntime",
    "TableRuntimeStats",
    "TableStatus",
    "TaskRecord",
    "TaskStatus",
    "now_ms",
]


class SystemDatabase(OptimizersAndLeases, TableRuntimes, ProcessesAndTasks, OperatorQueries):
    """The system database at ``url`` (SQLAlchemy: ``sqlite:///path`` or ``postgresql+psycopg2://...``).

    Raises:
        ConfigError: the URL does not parse or names a driver that is not installed.
    """
