"""One system's side of ``bench.optimizer_scale``: run as a script, with ``PYTHONPATH`` naming
the source tree whose ``mixed_iceberg`` is measured (the worktree, or an older commit's tree).

It imports nothing from ``bench``, and of ``mixed_iceberg`` only what both sides have: the
service's constructor, ``discover()``, ``coordinate()``, ``start()``/``stop()``, the system
database's ``migrate()`` and engine, and the catalog. Processes are read from the system
database with plain SQL. It prints one JSON object on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from sqlalchemy import event, text

import mixed_iceberg
from mixed_iceberg.catalog import load_catalog
from mixed_iceberg.optimizer.config import parse_optimizer_config
from mixed_iceberg.optimizer.service import OptimizerService


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class Counter:
    """Statements run on an engine, from any thread."""

    def __init__(self, engine: Any) -> None:
        self.count = 0
        self._lock = threading.Lock()
        event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, *_: Any) -> None:
        with self._lock:
            self.count += 1


def register(service: OptimizerService) -> None:
    """What ``start()`` does before its threads: migrate and register."""
    service.db.migrate()
    service.optimizer_id = service.db.register_optimizer(service.group.name, service.container, service.threads)


def thread_cpu(thread: threading.Thread) -> float:
    """CPU seconds of a thread of this process so far (Linux: its /proc task stat)."""
    fields = Path(f"/proc/self/task/{thread.native_id}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_timed(work: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def commit_one(table: Any, key: int) -> None:
    """One small ChangeStore commit: an insert of a new key."""
    batch = pa.table(
        {
            "id": pa.array([key], pa.int64()),
            "v": pa.array([f"v{key}"], pa.string()),
            "_change_action": pa.array(["+I"], pa.string()),
        }
    )
    with table.new_transaction() as txn:
        txn.write(batch)


def processes(engine: Any, table_id: str) -> list[dict[str, Any]]:
    with engine.connect() as c:
        rows = c.execute(
            text("SELECT process_id, status, planned_ms, finished_ms FROM optimizing_processes WHERE table_id = :t"),
            {"t": table_id},
        ).mappings()
        return [dict(r) for r in rows]


def in_flight(engine: Any, table_ids: list[str]) -> int:
    ended = ("SUCCESS", "FAILED", "CANCELED", "CLOSED")
    count = 0
    for table_id in table_ids:
        count += sum(p["status"] not in ended for p in processes(engine, table_id))
    return count


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--tables", type=int, required=True)
    parser.add_argument("--active", type=int, required=True)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batches", type=int, default=2)
    parser.add_argument("--commit-every", type=float, default=0.5)
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    parser.add_argument("--wait-timeout", type=float, default=900.0)
    parser.add_argument("--group-properties", type=str, required=True)
    parser.add_argument("--min-plan-interval-ms", type=int, required=True)
    args = parser.parse_args()
    group_properties = json.loads(args.group_properties)
    refresh_s = float(group_properties["refresh-interval"].removesuffix("s"))
    out: dict[str, Any] = {"library": str(Path(mixed_iceberg.__file__).parent)}
    progress(f"measuring {out['library']}")
    config = parse_optimizer_config(
        {
            "system-database": f"sqlite:///{args.root}/system.db",
            "catalogs": [
                {"name": "local", "properties": {"uri": f"sqlite:///{args.root}/catalog.db", "warehouse": str(args.root / "wh")}}
            ],
            "optimizer_groups": [{"name": "default", "properties": group_properties}],
        }
    )
    catalog = load_catalog("local", uri=f"sqlite:///{args.root}/catalog.db", warehouse=str(args.root / "wh"))
    catalog_queries = Counter(catalog.iceberg.engine)
    rss_start = rss_bytes()

    # Phase A: rounds run here, one after another, no threads: every CPU second is the round's.
    service = OptimizerService(config, "default", threads=2, catalogs={"local": catalog})
    sysdb_queries = Counter(service.db.engine)
    register(service)
    rounds: list[dict[str, Any]] = []
    for number in range(1 + args.rounds):
        if number:
            time.sleep(refresh_s + 0.5)  # every table evaluated last round is due again where the code says so
        before_sys, before_cat = sysdb_queries.count, catalog_queries.count
        _, cpu, wall = cpu_timed(lambda: service.coordinate(None, discover=True))
        rounds.append(
            {
                "round": number,
                "cpu_s": cpu,
                "wall_s": wall,
                "sysdb_queries": sysdb_queries.count - before_sys,
                "catalog_queries": catalog_queries.count - before_cat,
                "rss_bytes": rss_bytes(),
            }
        )
        progress(f"round {number}: {rounds[-1]}")
    before_sys, before_cat = sysdb_queries.count, catalog_queries.count
    served, discover_cpu, discover_wall = cpu_timed(service.discover)
    out["discovery"] = {
        "cpu_s": discover_cpu,
        "wall_s": discover_wall,
        "served": len(served),
        "catalog_queries": catalog_queries.count - before_cat,
        "sysdb_queries": sysdb_queries.count - before_sys,
    }
    progress(f"discovery alone: {out['discovery']}")
    out["rounds"] = rounds
    out["rss_start_bytes"] = rss_start
    out["rss_after_rounds_bytes"] = rss_bytes()

    # Phase B: the same service (what it learned in phase A kept), now with its own threads
    # (start() registers it again); commits to the active tables, planning latency.
    live = service
    live.start()
    active = [f"db.active{i:03d}" for i in range(args.active)]
    active_ids = [f"local.{name}" for name in active]
    tables = {name: catalog.load_table(name) for name in active}
    deadline = time.monotonic() + args.wait_timeout
    engine = live.db.engine
    latencies: list[float] = []
    missed = 0
    key = 1_000_000
    for batch in range(args.batches):
        while in_flight(engine, active_ids) and time.monotonic() < deadline:
            time.sleep(0.5)
        committed: dict[str, tuple[float, int]] = {}
        for name, table_id in zip(active, active_ids, strict=True):  # one table at a time, spaced
            history = processes(engine, table_id)
            done = [p["finished_ms"] for p in history if p["status"] == "SUCCESS" and p["finished_ms"]]
            seen = max((p["process_id"] for p in history), default=0)
            key += 1
            commit_one(tables[name].refresh(), key)
            due_ms = max(time.time() * 1000, max(done, default=0) + args.min_plan_interval_ms)
            committed[table_id] = (due_ms, seen)
            time.sleep(args.commit_every)
        batch_deadline = min(deadline, time.monotonic() + args.wait_timeout / max(1, args.batches))
        pending = dict(committed)
        while pending and time.monotonic() < batch_deadline:
            for table_id, (due_ms, seen) in list(pending.items()):
                new = [p for p in processes(engine, table_id) if p["process_id"] > seen]
                if new:
                    latencies.append((min(p["planned_ms"] for p in new) - due_ms) / 1000)
                    del pending[table_id]
            time.sleep(0.2)
        missed += len(pending)
        progress(f"batch {batch}: {len(committed) - len(pending)} planned, {len(pending)} not within the timeout")
    while in_flight(engine, active_ids) and time.monotonic() < deadline:
        time.sleep(0.5)
    coordinator = next(t for t in threading.enumerate() if t.name == "optimizer-coordinator")
    cpu_before, wall_before, coordinator_before = time.process_time(), time.monotonic(), thread_cpu(coordinator)
    time.sleep(args.idle_seconds)
    idle_cpu = time.process_time() - cpu_before
    idle_wall = time.monotonic() - wall_before
    coordinator_cpu = thread_cpu(coordinator) - coordinator_before
    live.stop()
    out["latency"] = {
        "seconds": latencies,
        "median_s": statistics.median(latencies) if latencies else None,
        "max_s": max(latencies) if latencies else None,
        "missed": missed,
    }
    out["live"] = {
        "idle_coordinator_cpu_s": coordinator_cpu,
        "idle_cpu_s": idle_cpu,
        "idle_wall_s": idle_wall,
        "rss_bytes": rss_bytes(),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
