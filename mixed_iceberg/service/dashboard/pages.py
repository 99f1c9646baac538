"""The table page and the groups page: one table loaded (its metadata, never its data), and the
optimizer groups from the system database. Blocking I/O: the routes call these off the event loop."""

from __future__ import annotations

from typing import Any

from mixed_iceberg.optimizer.report import group_report, warnings
from mixed_iceberg.optimizer.sysdb.records import ProcessHistory, now_ms
from mixed_iceberg.optimizing.collect import collect
from mixed_iceberg.reports import describe_report, files_report, snapshots_report, status_of
from mixed_iceberg.service.catalogs import ServedCatalog
from mixed_iceberg.service.dashboard.actions import ActionLog
from mixed_iceberg.service.dashboard.lists import group_warning
from mixed_iceberg.service.dashboard.source import WINDOW_MS, Source

__all__ = ["groups_page", "table_page"]

#: Processes the table page lists (newest first).
HISTORY = 50
#: The heartbeat timeout of a group the optimizer config does not declare (as the groups report).
_UNDECLARED_TIMEOUT_MS = 60_000


def _process(h: ProcessHistory) -> dict[str, Any]:
    p = h.process
    return {
        "process": p.process_id,
        "type": p.type.value,
        "status": p.status.value,
        "planned_ms": p.planned_ms,
        "finished_ms": p.finished_ms,
        "duration_ms": h.duration_ms,
        "files_in": p.files_in,
        "files_out": p.files_out,
        "bytes_in": p.bytes_in,
        "bytes_out": p.bytes_out,
        "rows_in": p.rows_in,
        "rows_out": p.rows_out,
        "snapshot_id": p.snapshot_id,
        "error": p.error,
        "tasks": [
            {
                "task": t.task_id,
                "status": t.status.value,
                "optimizer": t.owner,
                "thread": t.thread,
                "runs": t.runs,
                "retries": t.retries,
                "duration_ms": t.duration_ms,
                "input_bytes": t.input_bytes,
                "bytes_out": t.bytes_out,
                "rows_in": t.rows_in,
                "rows_out": t.rows_out,
                "error": t.error,
            }
            for t in h.tasks
        ],
    }


def table_page(source: Source, served: ServedCatalog, name: str) -> dict[str, Any]:
    """Everything the table page shows about ``name`` of ``served``.

    Raises:
        MixedIcebergError: the table does not exist or its metadata cannot be read.
    """
    mixed = served.mixed().load_table(name)
    collected = collect(mixed.handle)
    table_id = f"{served.name}.{name}"
    runtime: dict[str, Any] | None = None
    history: list[dict[str, Any]] = []
    opened = source.database()
    if opened is not None:
        _, db = opened
        found = db.table(table_id)
        if found is not None:
            runtime = {
                "group": found.group_name,
                "status": found.status.value,
                "quota": found.quota,
                "pending_type": found.pending_type.value if found.pending_type else None,
                "pending_reason": found.pending_reason,
                "last_minor_ms": found.last_minor_ms,
                "last_major_ms": found.last_major_ms,
                "last_full_ms": found.last_full_ms,
                "last_error": found.last_error,
                "failures": found.failures,
                "next_plan_ms": found.next_plan_ms,
                "last_maintenance_ms": found.last_maintenance_ms,
                "maintenance_error": found.maintenance_error,
            }
        history = [_process(h) for h in db.process_history(table_id, limit=HISTORY)]
    return {
        "describe": describe_report(mixed, served.name),
        "status": status_of(mixed, served.name, collected),
        "files": files_report(mixed, collected),
        "snapshots": snapshots_report(mixed),
        "runtime": runtime,
        "processes": history,
        "actions": [a.as_dict() for a in ActionLog.of(served).recent(name)],
        "system_database": opened is not None,
    }


def groups_page(source: Source) -> dict[str, Any]:
    """Per group: its optimizers with their heartbeat's age, its tasks and tables, and a loud
    warning when it has tables but no live optimizer."""
    opened = source.database()
    if opened is None:
        return {"system_database": False, "groups": [], "optimizers": [], "warnings": []}
    config, db = opened
    report = group_report(db, config)
    now = now_ms()
    failed = db.failed_tasks()
    stats = {s.runtime.table_id: s for s in db.table_stats(window_ms=WINDOW_MS)}
    for g in report:
        g["tasks_failed"] = failed.get(g["group"], 0)
        for t in g["tables"]:
            found = stats.get(t["table"])
            # executor threads the table's tasks kept busy over the window, beside its quota (a share of one thread)
            t["occupation"] = round(found.executor_ms / found.window_ms, 4) if found else 0.0
            t["tasks_running"] = found.tasks_running if found else 0
            t["tasks_waiting"] = found.tasks_waiting if found else 0
        g["warning"] = group_warning(g["group"], g["live_optimizers"], len(g["tables"]), g["tasks_pending"])
    optimizers = []
    for o in db.optimizers():
        group = config.groups.get(o.group_name)
        timeout = group.properties.heartbeat_timeout_ms if group else _UNDECLARED_TIMEOUT_MS
        if o.stopped_ms is not None and o.stopped_ms < now - 3_600_000:
            continue  # stopped over an hour ago: the CLI's `optimizers --all` lists them
        optimizers.append(
            {
                "optimizer": o.optimizer_id,
                "group": o.group_name,
                "container": o.container,
                "threads": o.threads,
                "host": o.host,
                "pid": o.pid,
                "live": o.stopped_ms is None and o.heartbeat_ms >= now - timeout,
                "heartbeat_age_ms": max(0, now - o.heartbeat_ms),
                "started_ms": o.started_ms,
                "stopped_ms": o.stopped_ms,
            }
        )
    return {
        "system_database": True,
        "groups": report,
        "optimizers": optimizers,
        "warnings": [g["warning"] for g in report if g["warning"]]
        + [w for w in warnings(report) if "no live optimizer" not in w],
    }
