"""What operators see: each group's live optimizers, its backlog and its tables, from the system database.

A group whose tables wait with no live optimizer is named as such (Amoro's most common
confusion: tables PENDING forever because nobody serves their group).
"""

from __future__ import annotations

from typing import Any

from mixed_iceberg.optimizer.config import OptimizerConfig
from mixed_iceberg.optimizer.sysdb.database import SystemDatabase, TableStatus
from mixed_iceberg.optimizer.sysdb.records import GroupQueue

__all__ = ["group_queues", "group_report", "idle_optimizers", "warnings"]

#: The heartbeat timeout of a group the database knows but the config does not declare.
_UNDECLARED_TIMEOUT_MS = 60_000
#: The occupation window of the queue query (the report prints no occupation).
_WINDOW_MS = 60_000


def group_queues(db: SystemDatabase, config: OptimizerConfig, window_ms: int = _WINDOW_MS) -> dict[str, GroupQueue]:
    """Each group's queue, by name, its optimizers counted live within its own heartbeat timeout
    (one database query per timeout in use, not one per group)."""
    timeouts = {name: config.groups[name].properties.heartbeat_timeout_ms for name in config.groups}
    queues: dict[str, GroupQueue] = {}
    for timeout in sorted({*timeouts.values(), _UNDECLARED_TIMEOUT_MS}):
        for queue in db.group_queues(window_ms=window_ms, heartbeat_timeout_ms=timeout):
            if timeouts.get(queue.group_name, _UNDECLARED_TIMEOUT_MS) == timeout:
                queues[queue.group_name] = queue
    return queues


def idle_optimizers(db: SystemDatabase, config: OptimizerConfig) -> dict[str, int]:
    """Per group, its live optimizers (within its own heartbeat timeout) with no task in flight."""
    timeouts = {name: config.groups[name].properties.heartbeat_timeout_ms for name in config.groups}
    found: dict[str, int] = {}
    for timeout in sorted({*timeouts.values(), _UNDECLARED_TIMEOUT_MS}):
        for group, idle in db.idle_optimizers(heartbeat_timeout_ms=timeout).items():
            if timeouts.get(group, _UNDECLARED_TIMEOUT_MS) == timeout:
                found[group] = idle
    return found


def group_report(db: SystemDatabase, config: OptimizerConfig) -> list[dict[str, Any]]:
    """One entry per group (declared in ``config`` or recorded in the database); the counts
    come from the database's per-group queue query (:func:`group_queues`), not from reading
    every task."""
    queues = group_queues(db, config)
    report = []
    for name in sorted({*config.groups, *queues}):
        found: GroupQueue | None = queues.get(name)
        report.append(
            {
                "group": name,
                "declared": name in config.groups,
                "live_optimizers": found.live_optimizers if found else 0,
                "threads": found.threads if found else 0,
                "tasks_pending": found.tasks_planned if found else 0,
                "tasks_running": found.tasks_scheduled + found.tasks_acked if found else 0,
                "tables": [
                    {
                        "table": t.table_id,
                        "status": t.status.value,
                        "quota": t.quota,
                        "last_minor_ms": t.last_minor_ms,
                        "last_major_ms": t.last_major_ms,
                        "last_full_ms": t.last_full_ms,
                        "last_error": t.last_error,
                        "failures": t.failures,
                    }
                    for t in db.tables(name)
                ],
            }
        )
    return report


def warnings(report: list[dict[str, Any]]) -> list[str]:
    """Plain sentences for what needs an operator: groups nobody serves, tables that failed."""
    found = []
    for group in report:
        waiting = group["tasks_pending"] + group["tasks_running"]
        if group["live_optimizers"] == 0 and (waiting or group["tables"]):
            found.append(
                f"group {group['group']} has no live optimizer; {group['tasks_pending']} tasks pending, "
                f"{len(group['tables'])} table(s) waiting"
            )
        for table in group["tables"]:
            if table["status"] == TableStatus.FAILED:
                found.append(f"table {table['table']} FAILED ({table['failures']} time(s) in a row): {table['last_error']}")
    return found
