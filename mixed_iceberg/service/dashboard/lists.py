"""The overview and the table list, from what :class:`~.source.Known` holds. Pure: no I/O, ``now_ms`` given.

A row's figures are the metrics' (``amoro_table_summary_*``, :mod:`mixed_iceberg.service.prometheus.summary`):
files and bytes of live data and delete files, unmerged ChangeStore files included; its health
is judged now against its ``health.target.*`` (:func:`mixed_iceberg.optimizing.health.judge`).
A table no optimizer serves has no status (``None``); one not summarized yet has no figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from mixed_iceberg.optimizing.health import judge
from mixed_iceberg.service.dashboard.source import Known
from mixed_iceberg.service.prometheus.families import STATUS_OF

__all__ = ["SORTS", "group_warning", "overview", "sort_rows", "table_rows"]

#: How many tables each "most in need" list names.
NEED = 10
#: The list's sort keys: the row field and whether the largest comes first by default.
SORTS: dict[str, tuple[str, bool]] = {
    "name": ("table", False),
    "files": ("files", True),
    "bytes": ("bytes", True),
    "avg_file_size": ("avg_file_size", False),
    "health": ("health_score", False),
    "status": ("status", False),
}


def table_rows(known: Known, now_ms: int) -> list[dict[str, Any]]:
    """One row per served table, sorted by catalog and name."""
    rows = []
    for t in known.tables:
        runtime = known.runtimes.get(f"{t.catalog}.{t.name}")
        s = t.summary
        health = judge(s.figures, s.health, now_ms=now_ms) if s is not None and s.health is not None else None
        rows.append(
            {
                "catalog": t.catalog,
                "table": t.name,
                "group": runtime.group_name if runtime else None,
                "status": STATUS_OF[runtime.status] if runtime else None,
                "optimizing": runtime.status.value if runtime else None,
                "files": s.total_files if s else None,
                "bytes": s.total_files_size if s else None,
                "records": s.total_records if s else None,
                "data_files": s.data_files if s else None,
                "unmerged_change_files": s.unmerged_change_files if s else None,
                "avg_file_size": (s.data_files_size // s.data_files if s.data_files else 0) if s else None,
                "health_score": health.score if health else None,
                "health_state": health.state.value if health else None,
                "last_optimized_ms": runtime.last_optimized_ms if runtime else None,
                "failures": runtime.failures if runtime else 0,
                "last_error": runtime.last_error if runtime else None,
            }
        )
    return rows


def sort_rows(rows: list[dict[str, Any]], sort: str, descending: bool | None) -> list[dict[str, Any]]:
    """``rows`` by ``sort`` (a key of :data:`SORTS`); rows without the figure last."""
    field, largest_first = SORTS[sort]
    reverse = largest_first if descending is None else descending
    present = [r for r in rows if r[field] is not None]
    absent = [r for r in rows if r[field] is None]
    present.sort(key=lambda r: (r[field], r["catalog"], r["table"]), reverse=reverse)
    return present + absent


def _need(rows: Iterable[dict[str, Any]], field: str, largest_first: bool) -> list[dict[str, Any]]:
    found = [r for r in rows if r[field] is not None and (r["files"] or 0) > 0]
    found.sort(key=lambda r: r[field], reverse=largest_first)
    return [{"catalog": r["catalog"], "table": r["table"], field: r[field], "files": r["files"]} for r in found[:NEED]]


def overview(known: Known, rows: list[dict[str, Any]], warehouses: dict[str, str]) -> dict[str, Any]:
    """Catalogs, totals, optimizing status of all tables, the tables most in need, the groups."""
    per_catalog = Counter(r["catalog"] for r in rows)
    summarized = [r for r in rows if r["files"] is not None]
    groups = []
    for name, queue in sorted(known.groups.items()):
        tables = queue.tables
        groups.append(
            {
                "group": name,
                "live_optimizers": queue.live_optimizers,
                "threads": queue.threads,
                "idle_optimizers": known.idle.get(name, 0),
                "tasks_pending": queue.tasks_planned + queue.tasks_scheduled,
                "tasks_running": queue.tasks_acked,
                "tables": tables,
                "tables_failed": queue.tables_failed,
                "occupation": round(queue.occupation, 4),
                "warning": group_warning(name, queue.live_optimizers, tables, queue.tasks_planned + queue.tasks_scheduled),
            }
        )
    return {
        "catalogs": [{"name": c, "warehouse": warehouses[c], "tables": per_catalog.get(c, 0)} for c in sorted(warehouses)],
        "totals": {
            "tables": len(rows),
            "summarized": len(summarized),
            "stale": known.stale,
            "files": sum(r["files"] for r in summarized),
            "bytes": sum(r["bytes"] for r in summarized),
            "records": sum(r["records"] for r in summarized),
        },
        "status": dict(sorted(Counter(r["status"] or "not served" for r in rows).items())),
        "health": dict(sorted(Counter(r["health_state"] or "unknown" for r in rows).items())),
        "need": {
            "files": _need(rows, "files", True),
            "avg_file_size": _need(rows, "avg_file_size", False),
            "health_score": _need(rows, "health_score", False),
        },
        "groups": groups,
        "warnings": [g["warning"] for g in groups if g["warning"]],
        "system_database": known.system_database,
        "system_database_error": known.error,
    }


def group_warning(group: str, live: int, tables: int, pending: int) -> str | None:
    """Amoro's silent failure, said aloud: a group with tables and nobody to optimize them."""
    if live or not (tables or pending):
        return None
    return (
        f"group {group} has {tables} table(s) and {pending} pending task(s) but no live optimizer: "
        "its tables are not optimized (start one: mixed-iceberg optimizer --group " + group + ")"
    )
