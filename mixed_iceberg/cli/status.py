"""``mixed-iceberg status``: what a table's metadata says about what a reader pays, without
reading a data file (docs/cli.md); with no table, the optimizer groups (as ``groups``).

The merged view's row count is known from metadata only when nothing is left to merge: no
unmerged ChangeStore file and no equality delete. Otherwise ``records`` is None and
``records_at_most`` bounds it (a merged row is a live base row or an unmerged change insert);
which base rows the change deletes hit, only a read can say. The delete ratio counts both kinds
of delete (position deletes and unmerged change deletes) against all rows written.
"""

from __future__ import annotations

import argparse
from typing import Any

from mixed_iceberg import load_catalog
from mixed_iceberg.cli.groups import config_help, groups_result
from mixed_iceberg.cli.health import check_result, health_of, health_text
from mixed_iceberg.cli.progress import Progress
from mixed_iceberg.cli.render import Result, fields, size, table
from mixed_iceberg.config.kinds import FileClass
from mixed_iceberg.optimizing.collect import collect
from mixed_iceberg.table import MixedTable
from mixed_iceberg.typedef import TableFormat

__all__ = ["kind_of", "register", "status_report"]


def kind_of(table: MixedTable) -> str:
    """``keyed`` or ``unkeyed`` (Mixed-Iceberg), or ``iceberg`` (a plain Iceberg table)."""
    if table.format is TableFormat.ICEBERG:
        return "iceberg"
    return "keyed" if table.is_keyed else "unkeyed"


KIND_TEXT = {"keyed": "Mixed-Iceberg, keyed", "unkeyed": "Mixed-Iceberg, unkeyed", "iceberg": "plain Iceberg"}


def status_report(catalog: str, name: str) -> dict[str, Any]:
    """The figures of ``status`` for one table (what ``--json`` prints)."""
    mixed = load_catalog(catalog).load_table(name)
    config = mixed.config.optimizing
    collected = collect(mixed.handle)
    evaluation = mixed.optimizing.evaluate()
    classes = {c.value: 0 for c in FileClass}
    base = [f for p in collected.partitions for f in p.base]
    change = [c for p in collected.partitions for c in p.change]
    for file in base:
        classes[config.classify(file.size).value] += 1
    base_records = sum(f.records for f in base)
    position_deleted = sum(f.pos_delete_records for f in base)
    change_inserts = sum(c.records for c in change if not c.is_delete)
    change_deletes = sum(c.records for c in change if c.is_delete)
    equality_deletes = {p for f in base for p in f.eq_delete_files}
    written = base_records + change_inserts
    live_base = base_records - position_deleted
    exact = not change and not equality_deletes
    kind = kind_of(mixed)
    figures, health = health_of(mixed, collected)
    return {
        "table": name,
        "catalog": catalog,
        "kind": kind,
        "format": mixed.format.value,
        "keyed": mixed.is_keyed,
        "records": live_base if exact else None,
        "records_at_most": live_base + change_inserts,
        "base_files": classes,
        "base_bytes": sum(f.size for f in base),
        "base_delete_files": len(collected.delete_files),
        "equality_delete_files": len(equality_deletes),
        "change_files_unmerged": len(collected.change_files),
        "change_bytes_unmerged": sum(c.size for c in change),
        "base_records": base_records,
        "base_position_deleted_records": position_deleted,
        "change_insert_records_unmerged": change_inserts,
        "change_delete_records_unmerged": change_deletes,
        "delete_ratio": round((position_deleted + change_deletes) / written, 4) if written else 0.0,
        "files_read": figures.files,
        "small_files": figures.small_files,
        "read_bytes": figures.read_bytes,
        "oldest_unmerged_change_ms": figures.oldest_unmerged_change_ms,
        "health": health,
        "optimizing_enabled": config.enabled,
        "optimizer_group": config.group,
        "pending": evaluation.type.value if evaluation.type else None,
        "partitions": [
            {"partition": p.path or "<unpartitioned>", "pending": p.type.value if p.type else None, "reason": p.reason}
            for p in evaluation.partitions
        ],
    }


def status_text(report: dict[str, Any]) -> str:
    """``report`` for people."""
    files = report["base_files"]
    if report["records"] is not None:
        records = f"{report['records']} (exact: nothing left to merge)"
    else:
        records = (
            f"at most {report['records_at_most']} ({report['change_delete_records_unmerged']} unmerged change "
            "delete(s) may remove some; only a read can say)"
        )
    pending = report["pending"] or ("nothing due" if report["optimizing_enabled"] else "nothing (self-optimizing disabled)")
    head = fields(
        [
            ("table", f"{report['catalog']}.{report['table']} ({KIND_TEXT[report['kind']]})"),
            ("records", records),
            ("base records", f"{report['base_records']} written, {report['base_position_deleted_records']} position-deleted"),
            (
                "unmerged change",
                f"{report['change_files_unmerged']} file(s), {size(report['change_bytes_unmerged'])}: "
                f"{report['change_insert_records_unmerged']} insert(s), {report['change_delete_records_unmerged']} delete(s)",
            ),
            ("delete ratio", f"{report['delete_ratio']} (position and unmerged change deletes over rows written)"),
            (
                "base files",
                f"{sum(files.values())} ({', '.join(f'{n} {k}' for k, n in files.items())}), {size(report['base_bytes'])}; "
                f"{report['base_delete_files']} delete file(s)",
            ),
            ("optimizing", f"{pending}; group {report['optimizer_group']}"),
            ("health", health_text(report["health"])),
        ]
    )
    rows = report["partitions"]
    return head + ("\n\n" + table(rows, ["partition", "pending", "reason"]) if rows else "")


def run_status(args: argparse.Namespace, progress: Progress) -> Result:
    """The ``status`` verb."""
    if args.check:
        return check_result(args, progress)
    if args.table is None:
        return groups_result(args, progress)
    report = status_report(args.catalog, args.table)
    return Result(report, status_text(report))


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``status`` to the verbs."""
    status = sub.add_parser(
        "status",
        parents=[common],
        help="a table: records, unmerged change, delete ratio, file classes, what optimizing is due; "
        "no table: the optimizer groups",
    )
    status.add_argument("table", nargs="?", default=None, help="namespace.table (none: the optimizer groups)")
    status.add_argument("--config", default=None, help=config_help())
    status.add_argument(
        "--check",
        action="store_true",
        help="judge the table (none: every table of --catalog) against its health targets; "
        "exit 5 when one is missed, 6 when one is close",
    )
    status.set_defaults(func=run_status)
