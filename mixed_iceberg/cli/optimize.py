"""``mixed-iceberg optimize`` and ``maintenance``: run self-optimizing or maintenance of one table now.

When ``optimize`` finds nothing to do it says why: self-optimizing is disabled, the table was
optimized within ``self-optimizing.min-plan-interval``, or each partition's triggers with their
values (:func:`mixed_iceberg.optimizing.evaluate.evaluate_partition` names them).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from mixed_iceberg import load_catalog
from mixed_iceberg.cli.progress import Progress
from mixed_iceberg.cli.render import Result, ago, duration, fields, size, table
from mixed_iceberg.optimizing.engine import Deferred, PlannedRun
from mixed_iceberg.table import MixedTable

__all__ = ["register"]


def _why_idle(mixed: MixedTable) -> tuple[str, list[dict[str, Any]]]:
    """Why a run without a forced type found nothing due, and each partition's reason."""
    if not mixed.config.optimizing.enabled:
        return "self-optimizing.enabled is false", []
    planned = mixed.optimizing.plan_or_defer()
    evaluation = mixed.optimizing.evaluate()
    partitions = [{"partition": p.path or "<unpartitioned>", "reason": p.reason} for p in evaluation.partitions]
    if isinstance(planned, Deferred):
        within = duration(mixed.config.optimizing.min_plan_interval.total_seconds())
        return (
            f"optimized within self-optimizing.min-plan-interval {within}; may be planned {ago(planned.due_ms)}",
            partitions,
        )
    if isinstance(planned, PlannedRun):  # another writer made something due since the run looked
        return f"{planned.kind.value} became due since the run looked; run again", partitions
    if not evaluation.partitions:
        return "the table has no data file", []
    return "no partition's trigger is reached", partitions


def run_optimize(args: argparse.Namespace, progress: Progress) -> Result:
    """The ``optimize`` verb."""
    mixed = load_catalog(args.catalog).load_table(args.table)
    progress.step(f"{args.table}: {'forcing ' + args.type if args.type else 'evaluating what is due'}")
    with progress.library_lines():
        result = mixed.optimizing.run(args.type, parallelism=args.parallelism)
    data: dict[str, Any] = {k: getattr(v, "value", v) for k, v in asdict(result).items()}
    if result.type is None:
        reason, partitions = _why_idle(mixed.refresh())
        data.update(reason=reason, partitions=partitions)
        text = f"{args.table}: nothing due: {reason}"
        if partitions:
            text += "\n\n" + table(partitions, ["partition", "reason"])
        return Result(data, text)
    text = fields(
        [
            ("table", args.table),
            (
                "optimizing",
                f"{result.type.value}, {result.tasks} task(s)"
                + (f", {result.tasks_failed} failed" if result.tasks_failed else ""),
            ),
            ("files", f"{result.files_in} -> {result.files_out} (+{result.delete_files_out} delete file(s))"),
            ("bytes", f"{size(result.bytes_in)} -> {size(result.bytes_out)}"),
            ("rows", f"{result.rows_in} -> {result.rows_out}"),
            ("committed", f"{result.committed} (snapshot {result.snapshot_id})"),
            ("duration", f"{result.duration_s:.2f}s"),
        ]
    )
    return Result(data, text)


def run_maintenance(args: argparse.Namespace, progress: Progress) -> Result:
    """The ``maintenance`` verb: every enabled step (change TTL, dangling deletes, manifests, expiry, orphans)."""
    mixed = load_catalog(args.catalog).load_table(args.table)
    progress.step(f"{args.table}: maintenance")
    with progress.library_lines():
        result = mixed.maintenance.run()
    data = {"table": args.table, **_plain(asdict(result))}
    rows = []
    for step in ("change_ttl", "dangling_deletes", "manifests", "expire", "orphans"):
        found = data.get(step)
        rows.append(
            {
                "step": step,
                "ran": found is not None,
                "files_deleted": (found or {}).get("files_deleted"),
                "bytes_deleted": size((found or {}).get("bytes_deleted")) if found else None,
                "commits": (found or {}).get("commits"),
            }
        )
    text = f"{args.table}: maintenance in {result.duration_s:.2f}s\n\n" + table(
        rows, ["step", "ran", "files_deleted", "bytes_deleted", "commits"]
    )
    return Result(data, text)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return getattr(value, "value", value)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``optimize`` and ``maintenance`` to the verbs."""
    optimize = sub.add_parser("optimize", parents=[common], help="run self-optimizing of a table now (what is due, or --type)")
    optimize.add_argument("table", help="namespace.table")
    optimize.add_argument("--type", choices=["minor", "major", "full"], default=None, help="force a type (default: what is due)")
    optimize.add_argument("--parallelism", type=int, default=1, help="tasks executed at once (default 1)")
    optimize.set_defaults(func=run_optimize, long_running=True)
    maintenance = sub.add_parser(
        "maintenance", parents=[common], help="run a table's maintenance now: change TTL, manifests, snapshot expiry, orphans"
    )
    maintenance.add_argument("table", help="namespace.table")
    maintenance.set_defaults(func=run_maintenance, long_running=True)
