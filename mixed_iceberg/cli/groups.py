"""The optimizer verbs: ``groups``, ``optimizers``, ``processes`` (read from the system
database) and ``optimizer`` (run one in this process).

Each reads the optimizer config named by ``--config`` (default: beside the catalogs file, see
:func:`config_help`) for the system database and the groups.
"""

from __future__ import annotations

import argparse
import logging
import signal
from typing import TYPE_CHECKING, Any

from mixed_iceberg.cli.progress import Progress
from mixed_iceberg.cli.render import Result, ago, size, table

if TYPE_CHECKING:
    from mixed_iceberg.optimizer.config import OptimizerConfig
    from mixed_iceberg.optimizer.sysdb.database import SystemDatabase

__all__ = ["config_help", "groups_result", "register"]

#: The heartbeat timeout of a group the config does not declare (as the groups report uses).
_UNDECLARED_TIMEOUT_MS = 60_000


def config_help() -> str:
    """``--config`` help that names the file the verb reads when it is not given (help and behaviour agree)."""
    from mixed_iceberg.optimizer.config import default_optimizer_config_path

    return (
        "optimizer config (default: $MIXED_ICEBERG_OPTIMIZER_CONFIG, else optimizer.yaml beside the catalogs "
        f"file; here: {default_optimizer_config_path()})"
    )


def _open(config_path: str | None) -> tuple[OptimizerConfig, SystemDatabase]:
    from mixed_iceberg.optimizer.config import load_optimizer_config
    from mixed_iceberg.optimizer.sysdb.database import SystemDatabase

    config = load_optimizer_config(config_path)
    db = SystemDatabase(config.system_database)
    db.migrate()
    return config, db


def groups_result(args: argparse.Namespace, progress: Progress) -> Result:
    """``groups``: per group, its live optimizers, its backlog and its tables."""
    from mixed_iceberg.optimizer.report import group_report, warnings

    config, db = _open(args.config)
    report = group_report(db, config)
    rows = [
        {
            "group": g["group"],
            "declared": g["declared"],
            "live_optimizers": g["live_optimizers"],
            "threads": g["threads"],
            "tasks_pending": g["tasks_pending"],
            "tasks_running": g["tasks_running"],
            "tables": len(g["tables"]),
        }
        for g in report
    ]
    text = table(rows, list(rows[0]) if rows else ["group"], empty="no optimizer group is declared or recorded")
    tables = [{"group": g["group"], **t, "last_optimized": _last(t)} for g in report for t in g["tables"]]
    if tables:
        text += "\n\n" + table(tables, ["table", "group", "status", "quota", "last_optimized", "failures", "last_error"])
    return Result(report, text, warnings=tuple(warnings(report)))


def _last(entry: dict[str, Any]) -> str:
    return ago(max(entry["last_minor_ms"] or 0, entry["last_major_ms"] or 0, entry["last_full_ms"] or 0))


def optimizers_result(args: argparse.Namespace, progress: Progress) -> Result:
    """``optimizers``: registered optimizers, live or not, with their heartbeat's age."""
    config, db = _open(args.config)
    records = [o for o in db.optimizers(args.group) if args.all or o.stopped_ms is None]
    data: list[dict[str, Any]] = []
    for o in records:
        group = config.groups.get(o.group_name)
        timeout = group.properties.heartbeat_timeout_ms if group else _UNDECLARED_TIMEOUT_MS
        live = o.stopped_ms is None and o.heartbeat_ms >= _now_ms() - timeout
        data.append(
            {
                "optimizer": o.optimizer_id,
                "group": o.group_name,
                "container": o.container,
                "threads": o.threads,
                "host": o.host,
                "pid": o.pid,
                "live": live,
                "started_ms": o.started_ms,
                "heartbeat_ms": o.heartbeat_ms,
                "stopped_ms": o.stopped_ms,
            }
        )
    rows = [{**d, "heartbeat": ago(d["heartbeat_ms"]), "started": ago(d["started_ms"])} for d in data]
    columns = ["optimizer", "group", "container", "threads", "host", "pid", "live", "heartbeat", "started"]
    return Result(data, table(rows, columns, empty="no optimizer registered" + ("" if args.all else " and running")))


def _now_ms() -> int:
    from mixed_iceberg.optimizer.sysdb.records import now_ms

    return now_ms()


def processes_result(args: argparse.Namespace, progress: Progress) -> Result:
    """``processes``: optimizing processes (newest first) of a table, a group or all."""
    _, db = _open(args.config)
    table_id = f"{args.catalog}.{args.table}" if args.table else None
    records = sorted(db.processes(table_id, args.group), key=lambda p: -p.process_id)[: args.limit]
    data: list[dict[str, Any]] = [
        {
            "process": p.process_id,
            "table": p.table_id,
            "group": p.group_name,
            "type": p.type.value,
            "status": p.status.value,
            "tasks": p.task_count,
            "planned_ms": p.planned_ms,
            "finished_ms": p.finished_ms,
            "duration_ms": None if p.finished_ms is None else p.finished_ms - p.planned_ms,
            "files_in": p.files_in,
            "files_out": p.files_out,
            "bytes_in": p.bytes_in,
            "bytes_out": p.bytes_out,
            "rows_in": p.rows_in,
            "rows_out": p.rows_out,
            "error": p.error,
        }
        for p in records
    ]
    rows = [
        {
            **d,
            "planned": ago(d["planned_ms"]),
            "duration": None if d["duration_ms"] is None else f"{d['duration_ms'] / 1000:.1f}s",
            "files": f"{d['files_in']} -> {d['files_out']}",
            "bytes": f"{size(d['bytes_in'])} -> {size(d['bytes_out'])}",
        }
        for d in data
    ]
    columns = ["process", "table", "type", "status", "tasks", "planned", "duration", "files", "bytes", "error"]
    return Result(data, table(rows, columns, empty="no optimizing process recorded"))


def run_optimizer(args: argparse.Namespace, progress: Progress) -> Result:
    """``optimizer``: serve a group in this process until SIGTERM or SIGINT."""
    from mixed_iceberg.optimizer.config import load_optimizer_config
    from mixed_iceberg.optimizer.service import OptimizerService

    service = OptimizerService(load_optimizer_config(args.config), args.group, threads=args.threads, container="local")

    def stop(signum: int, _: object) -> None:
        logging.getLogger(__name__).info("signal %d: stopping the optimizer", signum)
        service.request_stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    service.run_forever()
    return Result({"group": args.group, "stopped": True}, f"optimizer of group {args.group} stopped")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``groups``, ``optimizers``, ``processes`` and ``optimizer`` to the verbs."""
    groups = sub.add_parser("groups", parents=[common], help="optimizer groups: live optimizers, pending tasks, table states")
    groups.add_argument("--config", default=None, help=config_help())
    groups.set_defaults(func=groups_result)
    optimizers = sub.add_parser("optimizers", parents=[common], help="registered optimizers and their heartbeats")
    optimizers.add_argument("--group", default=None, help="only this group's")
    optimizers.add_argument("--all", action="store_true", help="stopped optimizers too")
    optimizers.add_argument("--config", default=None, help=config_help())
    optimizers.set_defaults(func=optimizers_result)
    processes = sub.add_parser("processes", parents=[common], help="optimizing processes, newest first")
    processes.add_argument("table", nargs="?", default=None, help="namespace.table of --catalog (none: every table)")
    processes.add_argument("--group", default=None, help="only this group's")
    processes.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    processes.add_argument("--config", default=None, help=config_help())
    processes.set_defaults(func=processes_result)
    optimizer = sub.add_parser(
        "optimizer", parents=[common], help="run an optimizer of a group in this process until SIGTERM/SIGINT"
    )
    optimizer.add_argument("--group", default="default")
    optimizer.add_argument("--threads", type=int, default=1, help="executor threads (default 1)")
    optimizer.add_argument("--config", default=None, help=config_help())
    optimizer.set_defaults(func=run_optimizer, long_running=True)
