"""Where a small ChangeStore commit's time goes, and what the peers workload writes, by kind.

```
.venv/bin/python -m bench.commit_profile                      # profile at ~20 and ~220 snapshots
.venv/bin/python -m bench.commit_profile --optimize --bytes   # + optimizer after every commit, bytes by kind
```

Runs the peers benchmark's mixed-iceberg adapter (``bench/peers/systems.py`` ``Mixed``) over the
peers workload (``bench/peers/workload.py``, generated into a temporary folder unless
``--workload`` names one): the bulk load, then every upsert commit in order. The commits whose
ChangeStore snapshot count falls in a window (``--window`` commits from each ``--at`` count) have
their time split into components (``COMPONENTS``: functions wrapped with exclusive timers, a
few microseconds each; a sampling profiler inflated call-heavy code such as SQLAlchemy's
several times over). Component figures are means per commit over the window.

``--bytes`` classifies the bytes the process wrote (``/proc/self/io`` ``wchar``, the figure the
peers benchmark divides by the input's Parquet bytes) by what was written: every file that
appears under the warehouse between two steps is counted once by its name (Amoro's file type
for data files, Iceberg's names for metadata); the rest of ``wchar`` is the catalog (SQLite
database and WAL) and files written and removed within one step; the bytes figures are set
beside the workload's input (its zstd Parquet bytes) as their baseline. The run goes to
``bench/results/commit_profile-<date>-<commit>.json`` (``--json`` elsewhere).

Another version of the library on the same workload: a folder holding only its ``mixed_iceberg``
first on ``PYTHONPATH``, and ``-P`` so the working directory (this tree) does not come first::

    mkdir /tmp/lib && ln -s /path/to/other/tree/mixed_iceberg /tmp/lib/
    PYTHONPATH=/tmp/lib:. .venv/bin/python -P -m bench.commit_profile

The result's environment names the ``mixed_iceberg`` folder the run imported (``library``).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import inspect
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from bench.harness import Clock, Figure, Run, capture_environment, publish
from bench.peers.systems import Mixed
from bench.peers.workload import Shape, write_workload

MB = 1024 * 1024

#: (component, module, owner class or None, attribute): wrapped with a timer while profiling.
#: Times are exclusive: a component's time excludes the components called inside it. Only the
#: main thread is timed; the Parquet writer threads and pyiceberg's manifest executor count as
#: the main thread's wait for them.
COMPONENTS: tuple[tuple[str, str, str | None, str], ...] = (
    ("validate + offsets", "mixed_iceberg.changestore.transaction", "ChangeTransaction", "write"),
    ("route + split rows", "mixed_iceberg.changestore.transaction", None, "write_change_files"),
    ("parquet files (writer threads)", "mixed_iceberg.changestore.writer", None, "write_groups"),
    ("commit_files (rest)", "mixed_iceberg.changestore.transaction", None, "commit_files"),
    ("refresh", "pyiceberg.table", "Table", "refresh"),
    ("catalog: load table", "mixed_iceberg._pyiceberg.sql_catalog", "SqlCatalogWithCache", "load_table"),
    ("idempotency check", "mixed_iceberg.store.commit", None, "_is_committed"),
    ("manifest + parent list + merge", "pyiceberg.table.update.snapshot", "_SnapshotProducer", "_manifests"),
    ("snapshot summary", "pyiceberg.table.update.snapshot", "_SnapshotProducer", "_summary"),
    ("manifest list write", "pyiceberg.manifest", "ManifestListWriter", "__enter__"),
    ("manifest list write", "pyiceberg.manifest", "ManifestListWriter", "add_manifests"),
    ("manifest list write", "pyiceberg.manifest", "ManifestListWriter", "__exit__"),
    ("transaction commit (rest)", "pyiceberg.table", "Transaction", "commit_transaction"),
    ("catalog commit (SQL + rest)", "mixed_iceberg._pyiceberg.sql_catalog", "SqlCatalogWithCache", "commit_table"),
    ("metadata apply", "mixed_iceberg._pyiceberg.sql_catalog", None, "updated_metadata"),
    ("metadata apply", "mixed_iceberg._pyiceberg.transaction", None, "updated_metadata"),
    ("metadata JSON write", "mixed_iceberg._pyiceberg.sql_catalog", "SqlCatalogWithCache", "_write_metadata"),
    ("delete merged manifests", "mixed_iceberg.store.commit", None, "_delete_merged_manifests"),
)


class Timers:
    """Exclusive wall time per component, main thread only, while ``active``."""

    def __init__(self) -> None:
        self.active = False
        self.totals: dict[str, float] = defaultdict(float)
        self._stack: list[list[float]] = []  # per open call: [children's time]
        self._main = threading.main_thread()

    def install(self) -> list[str]:
        """Wrap every component; return the ones not found (moved by a refactoring: their time
        counts as "other (untimed)" until ``COMPONENTS`` names where they went)."""
        missing = []
        for label, module_name, owner_name, attr in COMPONENTS:
            module = importlib.import_module(module_name)
            owner: Any = getattr(module, owner_name, None) if owner_name else module
            try:
                static = inspect.getattr_static(owner, attr)
            except AttributeError:
                missing.append(f"{label}: {module_name}.{owner_name + '.' if owner_name else ''}{attr}")
                print(f"commit_profile: not found, not timed: {missing[-1]}", file=sys.stderr, flush=True)
                continue
            function = static.__func__ if isinstance(static, staticmethod) else getattr(owner, attr)
            wrapped = self._wrap(label, function)
            setattr(owner, attr, staticmethod(wrapped) if isinstance(static, staticmethod) else wrapped)
        return missing

    def _wrap(self, label: str, function: Any) -> Any:
        timers = self

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if not timers.active or threading.current_thread() is not timers._main:
                return function(*args, **kwargs)
            frame = [0.0]
            timers._stack.append(frame)
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - started
                timers._stack.pop()
                timers.totals[label] += elapsed - frame[0]
                if timers._stack:
                    timers._stack[-1][0] += elapsed

        return timed


def _kind(name: str) -> str:
    """What a file is, from its name (Amoro's data file types, Iceberg's metadata names)."""
    if name.endswith(".metadata.json"):
        return "metadata JSON"
    if name.startswith("snap-") and name.endswith(".avro"):
        return "manifest lists"
    if name.endswith(".avro"):
        return "manifests"
    if name.endswith(".puffin") or name.endswith(".stats"):
        return "statistics (puffin)"
    if name.startswith("catalog") or ".db" in name:
        return "catalog (SQLite)"
    if name.endswith(".parquet"):
        parts = name.split("-")
        kind = parts[1] if len(parts) > 1 else "?"
        return {
            "I": "change insert files (I)",
            "ED": "change delete files (ED)",
            "B": "base data files (B)",
            "PD": "position delete files (PD)",
            "EQ": "equality delete files",
        }.get(kind, f"other parquet ({kind})")
    return "other"


class Bytes:
    """New files under the warehouse between steps, by kind; the rest of ``wchar`` apart."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.seen: dict[str, int] = {}
        self.by_phase: dict[str, dict[str, int]] = {}
        self.wchar_start = _wchar()

    def step(self, phase: str) -> None:
        into = self.by_phase.setdefault(phase, defaultdict(int))
        for root, _, names in os.walk(self.folder):
            for name in names:
                path = os.path.join(root, name)
                kind = _kind(name)
                if kind == "catalog (SQLite)":
                    continue  # rewritten in place: counted as the rest of wchar
                if path in self.seen:
                    continue
                try:
                    size = os.path.getsize(path)
                except FileNotFoundError:
                    continue
                self.seen[path] = size
                into[kind] += size

    def report(self) -> dict[str, Any]:
        total: dict[str, int] = defaultdict(int)
        for kinds in self.by_phase.values():
            for kind, size in kinds.items():
                total[kind] += size
        wchar = _wchar() - self.wchar_start
        files = sum(total.values())
        return {
            "by_phase": {p: dict(k) for p, k in self.by_phase.items()},
            "total": dict(total),
            "wchar": wchar,
            "catalog_and_transient": wchar - files,
        }


def _wchar() -> int:
    with open("/proc/self/io") as fh:
        return int(next(line for line in fh if line.startswith("wchar:")).split()[1])


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.workload:
        workload = Path(args.workload)
        if not (workload / "manifest.json").exists():
            write_workload(workload, Shape.quick() if args.quick else Shape.full(), args.seed)
    else:
        workload = Path(tempfile.mkdtemp(prefix="commit-profile-workload-"))
        print(f"writing the workload to {workload}", file=sys.stderr, flush=True)
        write_workload(workload, Shape.quick() if args.quick else Shape.full(), args.seed)
    manifest = json.loads((workload / "manifest.json").read_text())
    folder = Path(tempfile.mkdtemp(prefix="commit-profile-"))
    options: dict[str, str] = {"prop.self-optimizing.enabled": "false"}
    if args.optimize:  # the peers benchmark's "mixed-iceberg (optimizing)" entry
        target = str(8 * 1024 * 1024 * manifest["shape"]["rows"] // 1_000_000)
        options = {"prop.self-optimizing.target-size": target, "prop.self-optimizing.min-plan-interval": "0"}
    for prop in args.prop:
        key, value = prop.split("=", 1)
        options[f"prop.{key}"] = value
    for option in args.option:
        key, value = option.split("=", 1)
        options[key] = value
    system = Mixed(folder, workload, options)
    timers = Timers()
    missing = timers.install()
    tracker = Bytes(folder) if args.bytes else None
    windows = {at: range(at, at + args.window) for at in args.at}
    parts: dict[int, dict[str, float]] = {at: defaultdict(float) for at in args.at}
    elapsed_by_window: dict[int, list[float]] = {at: [] for at in args.at}
    all_commits: list[float] = []
    cpu_by_window: dict[int, list[float]] = {at: [] for at in args.at}
    optimize_s = 0.0
    commits = 0
    for phase in manifest["phases"]:
        for rel in phase["batches"]:
            if phase["name"] == "load":
                system.load(pq.read_table(workload / rel))
                if tracker:
                    tracker.step("load")
                continue
            batch = pq.read_table(workload / "changes" / rel)  # not timed: the input arrives in memory
            commits += 1
            snapshots = len(system.table.change_store.metadata.snapshots)
            at = next((a for a, w in windows.items() if snapshots in w), None)
            timers.totals.clear()
            timers.active = at is not None
            clock = Clock.start()
            system.commit(batch)
            took = clock.elapsed()
            elapsed, cpu = took.wall_s, took.cpu_s
            timers.active = False
            all_commits.append(elapsed)
            if at is not None:
                elapsed_by_window[at].append(elapsed)
                cpu_by_window[at].append(cpu)
                for label, secs in timers.totals.items():
                    parts[at][label] += secs
                parts[at]["other (untimed)"] += elapsed - sum(timers.totals.values())
            if tracker:
                tracker.step(f"{phase['name']} commits")
            if args.optimize:
                clock = Clock.start()
                system.optimize()
                optimize_s += clock.elapsed().wall_s
                if tracker:
                    tracker.step(f"{phase['name']} optimizer")
            if args.stop_after and commits >= args.stop_after:
                break
        if args.stop_after and commits >= args.stop_after:
            break
    out: dict[str, Any] = {
        "commits": commits,
        "options": options,
        "missing_components": missing,
        "commit_ms_median": 1000 * statistics.median(all_commits),
        "windows": {},
    }
    for at in args.at:
        n = len(elapsed_by_window[at])
        if not n:
            continue
        out["windows"][at] = {
            "commits": n,
            "ms_median": 1000 * statistics.median(elapsed_by_window[at]),
            "ms_mean": 1000 * statistics.fmean(elapsed_by_window[at]),
            "cpu_ms_median": 1000 * statistics.median(cpu_by_window[at]),
            "components_ms": {k: 1000 * v / n for k, v in sorted(parts[at].items(), key=lambda kv: -kv[1])},
        }
    out["optimize_s"] = optimize_s
    if tracker:
        out["bytes"] = tracker.report()
        out["input_parquet_bytes"] = manifest["input_parquet_bytes"]
    return out


def profile_figures(out: dict[str, Any]) -> list[Figure]:
    """The run's commit times, each window's split by component, and the bytes written by kind."""
    figures = [
        Figure("commits", out["commits"], "commits"),
        Figure("commit, median", out["commit_ms_median"], "ms"),
        Figure("optimizer, every run()", out["optimize_s"], "s"),
    ]
    for at, window in out["windows"].items():
        span = f"ChangeStore snapshots {at}-{at + window['commits'] - 1}"
        figures += [
            Figure(f"{span}: commit, median", window["ms_median"], "ms"),
            Figure(f"{span}: commit, mean", window["ms_mean"], "ms"),
            Figure(f"{span}: process CPU per commit, median", window["cpu_ms_median"], "ms"),
        ]
        figures += [Figure(f"{span}: {name} (mean per commit)", ms, "ms") for name, ms in window["components_ms"].items()]
    if "bytes" in out:
        data, report = out["input_parquet_bytes"] / MB, out["bytes"]
        figures.append(Figure("bytes written (wchar)", report["wchar"] / MB, "MB", data))
        rows = sorted(report["total"].items(), key=lambda kv: -kv[1])
        rows.append(("catalog (SQLite) + transient", report["catalog_and_transient"]))
        figures += [Figure(f"bytes written: {kind}", size / MB, "MB", data) for kind, size in rows]
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default=None, help="a peers workload folder (generated there if empty)")
    parser.add_argument("--quick", action="store_true", help="the --quick workload shape")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--at", type=int, action="append", default=None, help="snapshot counts to profile at")
    parser.add_argument("--window", type=int, default=20, help="commits timed per window")
    parser.add_argument("--optimize", action="store_true", help="optimizing.run() after every commit (the peers' setting)")
    parser.add_argument("--bytes", action="store_true", help="classify the bytes written by kind")
    parser.add_argument("--stop-after", type=int, default=0, help="stop after this many commits")
    parser.add_argument("--prop", action="append", default=[], help="extra table property key=value")
    parser.add_argument("--option", action="append", default=[], help="extra adapter option key=value")
    parser.add_argument(
        "--json", type=Path, default=None, help="the run's JSON (default bench/results/commit_profile-<date>-<commit>.json)"
    )
    args = parser.parse_args()
    args.at = args.at or [10, 205]
    environment = capture_environment()
    out = run(args)
    config = {key: value for key, value in vars(args).items() if key not in ("json", "workload")}
    publish(
        Run(
            "commit_profile",
            environment.finished(),
            profile_figures(out),
            baseline="bytes figures: the workload's input as zstd Parquet; the others have none",
            config=config | {"options": out["options"]},
            notes=[
                "components: exclusive wall time of the main thread (writer threads count as its wait for them)",
                *(f"component not found, not timed: {name}" for name in out["missing_components"]),
            ],
            detail=out,
        ),
        args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
