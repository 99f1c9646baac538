"""Health in the CLI: each table's figures judged against its targets (``health.target.*``), as
``status`` shows them, and ``status --check`` for cron or CI: exit code 5 (UNHEALTHY) when a
target is missed, 6 (WARNING) when one is close, 0 when every target is met. A table that
cannot be read counts as missed."""

from __future__ import annotations

import argparse
from typing import Any

from mixed_iceberg import load_catalog
from mixed_iceberg.cli.exits import ExitCode, one_line
from mixed_iceberg.cli.progress import Progress
from mixed_iceberg.cli.render import Result, duration, size, table
from mixed_iceberg.exceptions import MixedIcebergError
from mixed_iceberg.optimizing.collect import collect
from mixed_iceberg.reports import health_of

__all__ = ["check_result", "health_of", "health_text"]

_CODES = {"red": ExitCode.UNHEALTHY, "amber": ExitCode.WARNING, "green": ExitCode.OK}


def show(key: str, value: float) -> str:
    """A target's figure in its unit."""
    if key.endswith("-age"):
        return duration(value)
    if key.endswith("-bytes"):
        return size(int(value))
    return f"{value:g}"


def health_text(health: dict[str, Any]) -> str:
    """``score 87, green (3 targets met)`` or the targets missed, worst first."""
    checks = health["checks"]
    if not checks:
        return f"score {health['score']}; no health target set (health.target.*)"
    missed = [c for c in checks if c["state"] != "green"]
    said = "; ".join(
        f"{c['state']}: {c['key']} {show(c['key'], c['value'])} {'>' if c['state'] == 'red' else 'near'} {show(c['key'], c['target'])}"
        for c in sorted(missed, key=lambda c: c["state"] != "red")
    )
    return f"score {health['score']}, {health['state']}" + (f" ({said})" if said else f" ({len(checks)} target(s) met)")


def check_result(args: argparse.Namespace, progress: Progress) -> Result:
    """Judge ``args.table``, or every table of ``args.catalog``."""
    catalog = load_catalog(args.catalog)
    names = [args.table] if args.table else [t for n in catalog.list_namespaces() for t in catalog.list_tables(n)]
    data: list[dict[str, Any]] = []
    for name in names:
        progress.step(f"{name}: checking")
        try:
            mixed = catalog.load_table(name)
            _, health = health_of(mixed, collect(mixed.handle))
        except (MixedIcebergError, OSError) as exc:  # one unreadable table is a missed target, the others still judged
            data.append({"table": name, "state": "red", "score": None, "checks": [], "error": one_line(str(exc))})
            continue
        data.append({"table": name, **health, "error": None})
    worst = max((d["state"] for d in data), key=["green", "amber", "red"].index, default="green")
    rows = [{"table": d["table"], "health": d["error"] or health_text(d)} for d in data]
    text = table(rows, ["table", "health"], empty=f"no table in catalog {args.catalog}")
    return Result(data, text, code=_CODES[worst])
