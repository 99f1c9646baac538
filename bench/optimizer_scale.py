"""Optimizer scale: one optimizer of one group over 10,000 tables of one SQL catalog, next to the
code before issue 34 (its discovery loaded every table on every refresh).

Run it with::

    .venv/bin/python -m bench.optimizer_scale --quick    # 500 tables, 10 active, a few minutes
    .venv/bin/python -m bench.optimizer_scale            # 10,000 tables, 50 active

**The catalog.** A SQLite catalog with ``--tables`` keyed tables (key ``id int64``, a string
``v``) in namespace ``db``: ``--active`` of them are created through the catalog and loaded
with 100 rows (``db.active000``...), and the rest are idle. Creating 10,000 tables one by
one takes tens of minutes, so the idle ones are built fast: one table, ``db.idle00000``, is
created and bulk-loaded through the catalog (healthy: nothing to optimize), and each other idle
table is a copy of its two metadata files (the BaseStore's with its own ChangeStore link and
table uuid, the ChangeStore's with its own uuid) written under the table's folder and
registered by one bulk ``INSERT`` into pyiceberg's ``iceberg_tables``, the rows pyiceberg's
``register_table`` would write. The copies share the first table's manifests and data
files, which they only read. Each system gets its own catalog and system database, built the
same way.

**The systems.** Each one runs in its own process (``bench/optimizer_scale_measure.py``) with
``PYTHONPATH`` naming its source tree: this checkout (or ``--commit``'s), and the baseline, ``mixed_iceberg/`` of
``--baseline-commit`` (default: main before issue 34 item 5) extracted with ``git archive``.
Every figure of both comes from the same run of this script. Group properties:
``refresh-interval`` 10 s (the default; ``--refresh``), maintenance off (``maintenance-interval`` 0: not
measured here), the rest defaults. Active tables: ``self-optimizing.min-plan-interval`` 2 s,
``minor.trigger.interval`` 0 (a commit makes a table due at once, or when its
min-plan-interval runs out).

**Phase A: rounds.** No threads: the script calls ``coordinate()`` itself: a first round (every
table first seen), then ``--rounds`` more, each after the refresh interval, over the idle
catalog. Per round: CPU seconds of the process (the only thread working), wall seconds, the
statements run on the system database and on the catalog database (SQLAlchemy events),
resident memory after it. Then ``discover()`` alone, once more.

**Phase B: the service running**: the same service, started (its threads: heartbeat,
coordinator, 2 executors; ``start()`` registers it again). ``--batches`` times: one small ChangeStore commit to every active table, one
table after another, ``--commit-every`` seconds apart; a table is due at ``max(commit, last
optimized + min-plan-interval)``; the planning latency is the plan's time (the process's
``planned_ms``) minus that. Then ``--idle-seconds`` with no commit: the CPU seconds of the
process, and of its coordinator thread, over them.

Targets (issue 34): an idle round <= 1 s of CPU at 10,000 tables; memory that does not grow
with idle tables beyond a small per-table record; a due table planned within its
min-plan-interval + 1 s (a latency <= 1 s). The table and the JSON go to
``bench/results/optimizer_scale-<date>-<commit>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from io import BytesIO
from pathlib import Path
from typing import Any

import pyarrow as pa
from sqlalchemy import text

from bench.harness import ROOT, Figure, Run, capture_environment, publish, result_path
from mixed_iceberg.catalog import load_catalog
from mixed_iceberg.catalog.markers import CHANGE_IDENTIFIER

#: main before issue 34 item 5 (discovery loaded every table on every refresh).
BASELINE_COMMIT = "5bdbb49"
MEASURE = Path(__file__).with_name("optimizer_scale_measure.py")
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
MIN_PLAN_INTERVAL_MS = 2000
ACTIVE_PROPERTIES = {
    "self-optimizing.min-plan-interval": str(MIN_PLAN_INTERVAL_MS),
    "self-optimizing.minor.trigger.interval": "0",
}
GROUP_PROPERTIES = {"maintenance-interval": "0", "heartbeat-interval": "2s"}


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def rows(first: int, count: int) -> pa.Table:
    return pa.table({"id": pa.array(range(first, first + count), pa.int64()), "v": [f"v{i}" for i in range(count)]}, SCHEMA)


def build_catalog(root: Path, tables: int, active: int) -> dict[str, float]:
    """The catalog of the module docstring under ``root``; seconds spent per part."""
    root.mkdir(parents=True)
    started = time.monotonic()
    catalog = load_catalog("local", uri=f"sqlite:///{root}/catalog.db", warehouse=str(root / "wh"))
    for i in range(active):
        catalog.create_table(f"db.active{i:03d}", SCHEMA, primary_key=["id"], properties=ACTIVE_PROPERTIES).bulk_load(
            rows(0, 100)
        )
    active_s = time.monotonic() - started
    started = time.monotonic()
    first = catalog.create_table("db.idle00000", SCHEMA, primary_key=["id"])
    first.bulk_load(rows(0, 100))
    assert first.change_store is not None
    base_json = json.loads(Path(first.base_store.metadata_location.removeprefix("file://")).read_text())
    change_json = json.loads(Path(first.change_store.metadata_location.removeprefix("file://")).read_text())
    registered = []
    for i in range(1, tables - active):
        name = f"idle{i:05d}"
        folder = root / "wh" / "db" / name
        (folder / "metadata").mkdir(parents=True)
        (root / "wh" / "db" / f"{name}_change_" / "metadata").mkdir(parents=True)
        base = dict(
            base_json,
            location=f"file://{folder}",
            properties={**base_json["properties"], CHANGE_IDENTIFIER: f"db.{name}_change_"},
        )
        base["table-uuid"] = str(uuid.uuid4())
        change = dict(change_json, location=f"file://{folder}_change_")
        change["table-uuid"] = str(uuid.uuid4())
        for store, metadata in ((name, base), (f"{name}_change_", change)):
            location = root / "wh" / "db" / store / "metadata" / f"00000-{uuid.uuid4()}.metadata.json"
            location.write_text(json.dumps(metadata))
            registered.append({"name": store, "location": f"file://{location}"})
    with catalog.iceberg.engine.begin() as c:  # what SqlCatalog.register_table writes, in one statement
        c.execute(
            text(
                "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location,"
                " previous_metadata_location, iceberg_type) VALUES ('local', 'db', :name, :location, NULL, 'TABLE')"
            ),
            registered,
        )
    listed = catalog.list_tables("db")
    assert len(listed) == tables, (len(listed), tables)
    assert catalog.load_table(f"db.idle{tables - active - 1:05d}").change_store is not None
    catalog.iceberg.engine.dispose()
    return {"active_tables_s": active_s, "idle_tables_s": time.monotonic() - started}


def source_tree(commit: str, into: Path) -> Path:
    """``mixed_iceberg/`` as of ``commit``, extracted under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "mixed_iceberg"], capture_output=True, check=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def group_properties(args: argparse.Namespace) -> dict[str, str]:
    return {"refresh-interval": f"{args.refresh:g}s", **GROUP_PROPERTIES}


def measure(tree: Path, root: Path, args: argparse.Namespace, script: Path) -> dict[str, Any]:
    command = [
        sys.executable,
        str(script),
        "--root",
        str(root),
        "--tables",
        str(args.tables),
        "--active",
        str(args.active),
        "--rounds",
        str(args.rounds),
        "--batches",
        str(args.batches),
        "--commit-every",
        str(args.commit_every),
        "--idle-seconds",
        str(args.idle_seconds),
        "--wait-timeout",
        str(args.wait_timeout),
        "--group-properties",
        json.dumps(group_properties(args)),
        "--min-plan-interval-ms",
        str(MIN_PLAN_INTERVAL_MS),
    ]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, cwd=tree, env=env, stdout=subprocess.PIPE, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(result["library"]) == tree / "mixed_iceberg", (result["library"], tree)
    return result


def steady(result: dict[str, Any], key: str) -> float:
    """The median of the rounds after the first (every table known)."""
    values = sorted(r[key] for r in result["rounds"][1:])
    return float(values[len(values) // 2])


def idle_growth(result: dict[str, Any]) -> float | None:
    """Resident memory grown from the first idle round to the last (None with one idle round)."""
    idle = result["rounds"][1:]
    return (idle[-1]["rss_bytes"] - idle[0]["rss_bytes"]) / 2**20 if len(idle) > 1 else None


def figures(ours: dict[str, Any], base: dict[str, Any], tables: int) -> list[Figure]:
    def both(name: str, unit: str, pick: Any) -> Figure:
        return Figure(name, pick(ours), unit, baseline=pick(base))

    def grown(result: dict[str, Any]) -> float:
        return float(result["rounds"][-1]["rss_bytes"] - result["rss_start_bytes"]) / tables

    return [
        both("idle round: CPU", "s", lambda r: steady(r, "cpu_s")),
        both("idle round: wall", "s", lambda r: steady(r, "wall_s")),
        both("idle round: system-database queries", "", lambda r: steady(r, "sysdb_queries")),
        both("idle round: catalog queries", "", lambda r: steady(r, "catalog_queries")),
        both("first round (every table new): CPU", "s", lambda r: r["rounds"][0]["cpu_s"]),
        both("discovery alone, idle: CPU", "s", lambda r: r["discovery"]["cpu_s"]),
        both("resident memory after the rounds", "MB", lambda r: r["rounds"][-1]["rss_bytes"] / 2**20),
        both("resident memory grown per table", "KB", lambda r: grown(r) / 1024),
        both("resident memory grown over the idle rounds", "MB", idle_growth),
        both("planning latency past due: median", "s", lambda r: r["latency"]["median_s"]),
        both("planning latency past due: max", "s", lambda r: r["latency"]["max_s"]),
        both("due tables not planned within the timeout", "", lambda r: r["latency"]["missed"]),
        both("service idle: CPU per minute", "s", lambda r: r["live"]["idle_cpu_s"] * 60 / r["live"]["idle_wall_s"]),
        both(
            "service idle: coordinator CPU per minute",
            "s",
            lambda r: r["live"]["idle_coordinator_cpu_s"] * 60 / r["live"]["idle_wall_s"],
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 tables, 10 active, one batch, 10 s idle")
    parser.add_argument("--tables", type=int, default=None, help="tables in the catalog (10,000; 500 with --quick)")
    parser.add_argument("--active", type=int, default=None, help="tables receiving commits (50; 10 with --quick)")
    parser.add_argument("--rounds", type=int, default=2, help="idle rounds after the first")
    parser.add_argument("--batches", type=int, default=None, help="commit batches to the active tables (2; 1)")
    parser.add_argument("--commit-every", type=float, default=0.5, help="seconds between two commits of a batch")
    parser.add_argument("--idle-seconds", type=float, default=None, help="service idle time measured (30; 10)")
    parser.add_argument("--refresh", type=float, default=10.0, help="the group's refresh-interval, seconds (default 10)")
    parser.add_argument("--wait-timeout", type=float, default=1200.0, help="seconds phase B waits for plans, in all")
    parser.add_argument("--baseline-commit", default=BASELINE_COMMIT)
    parser.add_argument("--commit", help="measure this commit's mixed_iceberg/ (default: the checkout as it is)")
    parser.add_argument("--output", type=Path, help="the run's JSON (default bench/results/optimizer_scale-<date>-<commit>.json)")
    parser.add_argument("--keep", action="store_true", help="keep the catalogs")
    args = parser.parse_args(argv)
    args.tables = args.tables or (500 if args.quick else 10_000)
    args.active = args.active or (10 if args.quick else 50)
    args.batches = args.batches or (1 if args.quick else 2)
    args.idle_seconds = args.idle_seconds or (10.0 if args.quick else 30.0)
    environment = capture_environment()
    work = Path(tempfile.mkdtemp(prefix="bench-optimizer-scale-"))
    results: dict[str, dict[str, Any]] = {}
    builds: dict[str, dict[str, float]] = {}
    try:
        # Both trees and the measuring script are copied now: the run measures what was
        # committed when it started, whatever the checkout holds by the time a system's turn comes.
        script = Path(shutil.copy(MEASURE, work / MEASURE.name))
        trees = {
            "baseline": source_tree(args.baseline_commit, work / "baseline-tree"),
            "ours": source_tree(args.commit, work / "ours-tree") if args.commit else ROOT,
        }
        for system, tree in trees.items():
            root = work / system
            progress(f"{system}: building {args.tables} tables")
            builds[system] = build_catalog(root, args.tables, args.active)
            progress(f"{system}: built in {sum(builds[system].values()):.0f} s; measuring")
            results[system] = measure(tree, root, args, script)
    finally:
        if args.keep:
            progress(f"catalogs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    ours, base = results["ours"], results["baseline"]
    notes = [
        f"idle round CPU {steady(ours, 'cpu_s'):.3f} s at {args.tables} tables (target <= 1 s)",
        f"planning latency past due: max {ours['latency']['max_s']} s (target <= 1 s), {ours['latency']['missed']} missed",
        "memory: see 'resident memory grown per table' and 'grown over the idle rounds'",
    ]
    run = Run(
        "optimizer_scale",
        environment.finished(),
        figures(ours, base, args.tables),
        baseline=f"the optimizer service of {args.baseline_commit} (discovery loads every table every refresh), same run",
        config={
            **{k: v for k, v in vars(args).items() if k != "output"},
            "output": str(args.output) if args.output else None,
            "group_properties": group_properties(args),
            "active_table_properties": ACTIVE_PROPERTIES,
        },
        notes=notes,
        detail={"builds": builds, "ours": ours, "baseline": base},
    )
    publish(run, args.output or result_path(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
