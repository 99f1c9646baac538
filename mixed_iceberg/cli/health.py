"""``mixed-iceberg status --check``: tables against their health targets (``health.target.*``),
for cron or CI: exit code 5 (UNHEALTHY) when a target is missed, 6 (WARNING) when one is close,
0 when every target is met. A table that cannot be read counts as missed."""

from __future__ import annotations

import argparse
from typing import Any

from mixed_iceberg import load_catalog
from mixed_iceberg.cli.exits import ExitCode, one_line
from mixed_iceberg.cli.progress import Progress
from mixed_iceberg.cli.render import Result, table
from mixed_iceberg.cli.status import health_text, status_report
from mixed_iceberg.exceptions import MixedIcebergError

__all__ = ["check_result"]

_CODES = {"red": ExitCode.UNHEALTHY, "amber": ExitCode.WARNING, "green": ExitCode.OK}


def check_result(args: argparse.Namespace, progress: Progress) -> Result:
    """Judge ``args.table``, or every table of ``args.catalog``."""
    if args.table:
        names = [args.table]
    else:
        catalog = load_catalog(args.catalog)
        names = [t for namespace in catalog.list_namespaces() for t in catalog.list_tables(namespace)]
    data: list[dict[str, Any]] = []
    for name in names:
        progress.step(f"{name}: checking")
        try:
            health = status_report(args.catalog, name)["health"]
        except (MixedIcebergError, OSError) as exc:  # one unreadable table is a missed target, the others still judged
            data.append({"table": name, "state": "red", "score": None, "checks": [], "error": one_line(str(exc))})
            continue
        data.append({"table": name, **health, "error": None})
    worst = max((d["state"] for d in data), key=["green", "amber", "red"].index, default="green")
    rows = [{"table": d["table"], "health": d["error"] or health_text(d)} for d in data]
    text = table(rows, ["table", "health"], empty=f"no table in catalog {args.catalog}")
    return Result(data, text, code=_CODES[worst])
