"""What operators see: each group's live optimizers, its backlog and its tables, from the system database.

A group whose tables wait with no live optimizer is named as such (Amoro's most common
confusion: tables PENDING forever because nobody serves their group).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mixed_iceberg.optimizer.config import OptimizerConfig
from mixed_iceberg.optimizer.sysdb.database import SystemDatabase, TableStatus, TaskStatus

__all__ = ["group_report", "warnings"]


def group_report(db: SystemDatabase, config: OptimizerConfig) -> list[dict[str, Any]]:
    """One entry per group (declared in ``config`` or recorded in the database)."""
    names = sorted({*config.groups, *(g.name for g in db.groups())})
    tasks = db.tasks()
    report = []
    for name in names:
        timeout = config.groups[name].properties.heartbeat_timeout_ms if name in config.groups else 60_000
        live = db.live_optimizers(name, timeout)
        states = Counter(t.status for t in tasks if t.group_name == name)
        tables = db.tables(name)
        report.append(
            {
                "group": name,
                "declared": name in config.groups,
                "live_optimizers": len(live),
                "threads": sum(o.threads for o in live),
                "tasks_pending": states.get(TaskStatus.PLANNED, 0),
                "tasks_running": states.get(TaskStatus.SCHEDULED, 0) + states.get(TaskStatus.ACKED, 0),
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
                    for t in tables
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
