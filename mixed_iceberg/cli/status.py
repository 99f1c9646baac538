"""``mixed-iceberg status``: what a table's metadata says about what a reader pays, without
reading a data file (docs/cli.md; the figures: :mod:`mixed_iceberg.reports.status`); with no
table, the optimizer groups (as ``groups``)."""

from __future__ import annotations

import argparse
from typing import Any

from mixed_iceberg import load_catalog
from mixed_iceberg.cli.groups import config_help, groups_result
from mixed_iceberg.cli.health import check_result, health_text
from mixed_iceberg.cli.progress import Progress
from mixed_iceberg.cli.render import Result, fields, size, table
from mixed_iceberg.reports import KIND_TEXT, kind_of, status_of

__all__ = ["kind_of", "register", "status_report"]


def status_report(catalog: str, name: str) -> dict[str, Any]:
    """The figures of ``status`` for one table (what ``--json`` prints)."""
    return status_of(load_catalog(catalog).load_table(name), catalog)


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
