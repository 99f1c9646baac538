"""Self-optimizing soak: a streaming upsert workload with optimizing after every commit, next to none.

Run it with::

    .venv/bin/python -m bench.optimizing_soak            # 1M base rows, 200 commits of 5k upserts
    .venv/bin/python -m bench.optimizing_soak --quick    # 100k base rows, 40 commits of 1k upserts

Several keyed Mixed-Iceberg tables (SQLite catalog, local warehouse in a temporary folder) get
the same bulk load and then the same upsert commits, in the same process. After every commit
each table gets ``table.optimizing.run()``: an evaluation of Amoro's triggers, and a minor,
major or full run when one is due. The tables differ only in their properties (``--setting``):

- ``off``: ``self-optimizing.enabled=false``, the baseline: change files pile up;
- ``amoro-defaults``: Amoro's defaults (``self-optimizing.target-size`` 128 MB);
- ``tuned``: ``self-optimizing.target-size`` chosen for this data scale (``--target-size``);
- ``tuned-batched``: the same, plus ``self-optimizing.minor.trigger.file-count`` 36, so minor
  runs every 4th commit instead of after every one.

A commit stands for one checkpoint of a streaming writer, a minute or more apart, so
``self-optimizing.min-plan-interval`` (60 s) would not hold any run; since the benchmark commits
back to back, the optimizing tables set it to 0, which takes the same decisions without
depending on how fast the machine commits.

An upsert batch is half updates of distinct random existing keys (a ``-U`` row with the old
values, then its ``+U`` row) and half inserts of new keys (``+I``); the batches come from
``format_core.py``'s oracle, an Arrow table of the expected state. Every ``--phase-every``
commits, and after the bulk load, each table's merged read (``table.scan().to_arrow()``) is
checked against that oracle (row count and checksums, then every value); a mismatch stops the
run with a non-zero exit. Per phase and per table the script reports live files, delete files,
merged-read seconds, what the optimizer did (runs by type, rows/s, rows per CPU second), write
amplification (optimizer bytes written / ChangeStore bytes written) and cumulative optimizer
time. The tables take turns going first on each commit, so load from elsewhere hits all alike.

The harness prints the end state of each setting beside ``off`` (the baseline) as a Markdown
table, with the self-optimizing issue's targets as notes, and writes the run to
``bench/results/optimizing_soak-<date>-<commit>.json`` (``--output`` elsewhere); every phase's
figures, every ``run()`` and every commit are in its detail. Timings are wall-clock
(``time.perf_counter``) and CPU time of the whole process (``time.process_time``, all threads);
nothing is asserted on them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa

# The data generator and the oracle are format_core's, so both benchmarks load the same rows.
from bench.format_core import SCHEMA, Oracle, OracleMismatchError, check, make_rows
from bench.harness import Clock, Figure, Run, capture_environment, format_number, publish
from bench.soak_catch_up import catch_up

if TYPE_CHECKING:
    from pyiceberg.table import Table

    from mixed_iceberg.table import MixedTable

BASELINE = "off"  # the setting every other one is set beside
WRITER = "bench"
MB = 1024 * 1024
TARGET_SIZE = "self-optimizing.target-size"
MINOR_FILE_COUNT = "self-optimizing.minor.trigger.file-count"
# Each commit stands for one checkpoint of a streaming writer, a minute or more apart, so
# self-optimizing.min-plan-interval (60 s) would let a run follow every commit. The benchmark
# commits back to back: it sets the interval to 0 to take the same decisions without depending
# on how fast this machine commits.
EVERY_COMMIT = {"self-optimizing.min-plan-interval": "0"}

# Targets of the self-optimizing issue (issue 3, "Benchmark (script)").
TARGET_READ_S = 0.2
TARGET_WRITE_AMP = 5.0
TARGET_MINOR_ROWS_PER_CORE_S = 3_000_000
FLAT_TOLERANCE = 1.25  # our reading of "flat": wall-clock reads on a shared machine move by more than 10%

T = TypeVar("T")


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True, slots=True)
class Setting:
    """One table of the run: its label, its table properties and why a user would pick them."""

    name: str
    properties: Mapping[str, str]
    why: str

    @property
    def optimizing(self) -> bool:
        return self.properties.get("self-optimizing.enabled", "true") != "false"


def parse_size(text: str) -> int:
    """``8MB``, ``512KB`` or a plain byte count."""
    raw = text.strip().upper().removesuffix("B")
    for suffix, factor in (("K", 1024), ("M", MB), ("G", 1024 * MB)):
        if raw.endswith(suffix):
            return int(float(raw[:-1]) * factor)
    return int(raw)


def default_target_size(rows: int) -> int:
    """The tuned target: about 23 bytes of Parquet per row here, in 4 base buckets, so 1M rows
    make 4 files of ~6 MB. 8 MB per million rows (1 MB for the quick run's 100k) keeps those
    files out of the fragment class (<= target / 8) that every minor run rewrites."""
    return max(1, round(8 * rows / 1_000_000)) * MB


def settings_for(names: list[str], target_size: int) -> list[Setting]:
    known = {
        "off": Setting(
            "off",
            {"self-optimizing.enabled": "false"},
            "baseline: self-optimizing.enabled=false; run() still evaluates (and finds nothing to do), "
            "the ChangeStore keeps every change file and readers merge them all",
        ),
        "amoro-defaults": Setting(
            "amoro-defaults",
            {**EVERY_COMMIT},
            "Amoro's defaults: target-size 128 MB, so fragments are <= 16 MB and every base file of this "
            "~25 MB table is a fragment that each minor run rewrites with the change rows",
        ),
        "tuned": Setting(
            "tuned",
            {**EVERY_COMMIT, TARGET_SIZE: str(target_size)},
            f"target-size {target_size / MB:g} MB for this scale: fragments <= {target_size / 8 / MB:g} MB "
            f"(the change rows merged since the last run), undersized <= {0.75 * target_size / MB:g} MB; "
            "the bulk-loaded base files are left in place and only get position deletes, until "
            "major.trigger.duplicate-ratio (0.1) rewrites them",
        ),
        "tuned-batched": Setting(
            "tuned-batched",
            {**EVERY_COMMIT, TARGET_SIZE: str(target_size), MINOR_FILE_COUNT: "36"},
            "as tuned, for commits every 15 s, where min-plan-interval (60 s) would hold runs for 4 commits: "
            "minor.trigger.file-count 36 (default 12) gives that cadence without wall-clock dependence, since a "
            "commit adds 8 change files (4 ChangeStore buckets x insert and delete file) and 4 fragments remain. "
            "Minor rewrites the same fragments a quarter as often; readers merge up to 4 commits of change files "
            "(majors are not held)",
        ),
    }
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown setting(s) {unknown}; expected some of {sorted(known)}")
    return [known[n] for n in names]


# --------------------------------------------------------------------------- one table


@dataclass(slots=True)
class OptimizerRun:
    """One ``table.optimizing.run()`` call."""

    commit: int
    type: str | None
    wall_s: float
    cpu_s: float
    duration_s: float
    files_in: int = 0
    files_out: int = 0
    delete_files_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    rows_in: int = 0
    rows_out: int = 0


@dataclass(slots=True)
class TableState:
    """A table's state at the end of a phase."""

    commits: int
    rows: int
    base_data_files: int
    base_delete_files: int
    change_files_unmerged: int
    change_delete_files_unmerged: int
    change_files_live: int
    read_s: list[float]
    read_cpu_s: list[float]
    pending: str | None

    @property
    def delete_files(self) -> int:
        return self.base_delete_files + self.change_delete_files_unmerged


@dataclass(slots=True)
class SoakTable:
    """One table under test and everything measured on it."""

    setting: Setting
    table: MixedTable
    runs: list[OptimizerRun] = field(default_factory=list)
    commit_s: list[float] = field(default_factory=list)
    change_bytes: list[int] = field(default_factory=list)
    states: list[TableState] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.setting.name

    @property
    def change_store(self) -> Table:
        if self.table.change_store is None:
            raise TypeError(f"{self.table.name}: a keyed table has a ChangeStore; found none")
        return self.table.change_store

    def commit(self, sequence: int, batch: pa.Table) -> None:
        clock = Clock.start()
        with self.table.new_transaction((WRITER, sequence)) as txn:
            txn.write(batch)
        self.commit_s.append(clock.elapsed().wall_s)
        outcome = txn.outcome
        if outcome is None or outcome.skipped:
            raise OracleMismatchError(f"{self.name}: commit {sequence} did not land (outcome {outcome})")
        change = self.change_store
        change.refresh()
        snapshot = change.current_snapshot()
        if snapshot is None or snapshot.summary is None:
            raise OracleMismatchError(f"{self.name}: no ChangeStore snapshot after commit {sequence}")
        # What ingestion wrote: the denominator of write amplification.
        self.change_bytes.append(int(snapshot.summary["added-files-size"] or 0))

    def optimize(self, commit: int) -> OptimizerRun:
        clock = Clock.start()
        result = self.table.optimizing.run()
        took = clock.elapsed()
        run = OptimizerRun(commit, result.type.value if result.type else None, took.wall_s, took.cpu_s, result.duration_s)
        if result.committed:
            for key in ("files_in", "files_out", "delete_files_out", "bytes_in", "bytes_out", "rows_in", "rows_out"):
                setattr(run, key, getattr(result, key))
        self.runs.append(run)
        return run

    def measure(self, commits: int, oracle: Oracle, read_repeats: int) -> TableState:
        from mixed_iceberg.optimizing.collect import collect

        reads, cpus = [], []
        for repeat in range(read_repeats):
            clock = Clock.start()
            result = self.table.scan().to_arrow()
            took = clock.elapsed()
            reads.append(took.wall_s)
            cpus.append(took.cpu_s)
            if repeat == 0:
                check(f"{self.name} after {commits} commits", result, oracle)
            del result
        self.table.refresh()
        collected = collect(self.table)
        change = self.change_store
        live_change = 0 if change.current_snapshot() is None else len(change.inspect.files())
        evaluation = self.table.optimizing.evaluate()
        snap = TableState(
            commits=commits,
            rows=oracle.state.num_rows,
            base_data_files=sum(len(p.base) for p in collected.partitions),
            base_delete_files=len(collected.delete_files),
            change_files_unmerged=len(collected.change_files),
            change_delete_files_unmerged=sum(c.is_delete for p in collected.partitions for c in p.change),
            change_files_live=live_change,
            read_s=reads,
            read_cpu_s=cpus,
            pending=evaluation.type.value if evaluation.type else None,
        )
        self.states.append(snap)
        return snap


# --------------------------------------------------------------------------- figures


def optimizer_figures(runs: list[OptimizerRun], change_bytes: int) -> dict[str, Any]:
    """Sums over ``runs`` (idle evaluations included in the wall time, not in the rates)."""
    done = [r for r in runs if r.type is not None]
    by_type: dict[str, dict[str, float | None]] = {}
    for kind in ("minor", "major", "full"):
        of_kind = [r for r in done if r.type == kind]
        rows = sum(r.rows_in for r in of_kind)
        secs = sum(r.duration_s for r in of_kind)
        cpu = sum(r.cpu_s for r in of_kind)
        by_type[kind] = {
            "runs": len(of_kind),
            "rows_in": rows,
            "duration_s": secs,
            "cpu_s": cpu,
            "rows_per_s": rows / secs if secs else None,
            "rows_per_cpu_s": rows / cpu if cpu else None,
            "bytes_out": sum(r.bytes_out for r in of_kind),
        }
    rows = sum(r.rows_in for r in done)
    secs = sum(r.duration_s for r in done)
    cpu = sum(r.cpu_s for r in done)
    bytes_out = sum(r.bytes_out for r in done)
    return {
        "evaluations": len(runs),
        "runs": len(done),
        "by_type": by_type,
        "wall_s": sum(r.wall_s for r in runs),
        "idle_wall_s": sum(r.wall_s for r in runs if r.type is None),
        "rows_in": rows,
        "duration_s": secs,
        "cpu_s": cpu,
        "rows_per_s": rows / secs if secs else None,
        "rows_per_cpu_s": rows / cpu if cpu else None,
        "bytes_in": sum(r.bytes_in for r in done),
        "bytes_out": bytes_out,
        "change_bytes": change_bytes,
        "write_amplification": bytes_out / change_bytes if change_bytes and done else None,
    }


def phase_entry(tables: list[SoakTable], start: int, end: int) -> dict[str, Any]:
    """Figures of commits ``(start, end]`` per table, plus cumulative ones since the bulk load."""
    entry: dict[str, Any] = {"commits": end, "loadavg": [round(x, 2) for x in os.getloadavg()]}
    for t in tables:
        snap = t.states[-1]
        in_phase = [r for r in t.runs if start < r.commit <= end]
        commit_ms = [s * 1000 for s in t.commit_s[start:end]]
        entry[t.name] = {
            "rows": snap.rows,
            "files": {
                "base_data": snap.base_data_files,
                "base_delete": snap.base_delete_files,
                "change_unmerged": snap.change_files_unmerged,
                "change_delete_unmerged": snap.change_delete_files_unmerged,
                "change_live": snap.change_files_live,
                "delete_files": snap.delete_files,
            },
            "pending": snap.pending,
            "read_s": snap.read_s[0],
            "read_s_best": min(snap.read_s),
            "read_s_all": snap.read_s,
            # CPU seconds of the fastest read: less sensitive than wall time to other load.
            "read_cpu_s_best": min(snap.read_cpu_s),
            "read_cpu_s_all": snap.read_cpu_s,
            "commit_ms_median": statistics.median(commit_ms) if commit_ms else None,
            "phase": optimizer_figures(in_phase, sum(t.change_bytes[start:end])),
            "cumulative": optimizer_figures([r for r in t.runs if r.commit <= end], sum(t.change_bytes[:end])),
        }
    return entry


def targets(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each table's figures against the issue's targets (``None`` where a figure does not apply)."""
    first, last = report["phases"][0], report["phases"][-1]
    out: dict[str, dict[str, Any]] = {}
    for name in report["config"]["settings"]:
        # "Flat": read seconds per million rows at the end against right after the bulk load,
        # when the table is 4 clean base files with nothing to merge (the table grows 1.5x).
        start = first[name]["read_s_best"] / first[name]["rows"] * 1e6
        end = last[name]["read_s_best"] / last[name]["rows"] * 1e6
        cumulative = last[name]["cumulative"]
        minor = cumulative["by_type"]["minor"]
        out[name] = {
            "read_s_best_end": last[name]["read_s_best"],
            "read_ok": last[name]["read_s_best"] <= TARGET_READ_S,
            "read_s_per_m_rows_start": start,
            "read_s_per_m_rows_end": end,
            "read_flat": end <= start * FLAT_TOLERANCE,
            "write_amplification": cumulative["write_amplification"],
            "write_amp_ok": None
            if cumulative["write_amplification"] is None
            else cumulative["write_amplification"] <= TARGET_WRITE_AMP,
            "minor_rows_per_cpu_s": minor["rows_per_cpu_s"],
            "minor_ok": None if minor["rows_per_cpu_s"] is None else minor["rows_per_cpu_s"] >= TARGET_MINOR_ROWS_PER_CORE_S,
        }
    return out


# --------------------------------------------------------------------------- the report


def _yes(ok: bool | None) -> str:
    return "-" if ok is None else ("yes" if ok else "NO")


def setting_figures(report: dict[str, Any]) -> list[Figure]:
    """Each setting's state at the end (and its read right after the bulk load), beside ``off``'s.

    Metric first, then setting, so the rows to compare are next to each other.
    """
    names: list[str] = report["config"]["settings"]
    baseline = BASELINE if BASELINE in names else None
    first, last = report["phases"][0], report["phases"][-1]
    end = f"after {last['commits']} commits"

    def cumulative(key: str) -> Callable[[str], float | None]:
        return lambda n: last[n]["cumulative"][key]

    def runs_of(kind: str) -> Callable[[str], float | None]:
        return lambda n: last[n]["cumulative"]["by_type"][kind]["runs"]

    metrics: list[tuple[str, str, Callable[[str], float | None]]] = [
        ("merged read after the bulk load, best", "s", lambda n: first[n]["read_s_best"]),
        (f"merged read {end}, first", "s", lambda n: last[n]["read_s"]),
        (f"merged read {end}, best", "s", lambda n: last[n]["read_s_best"]),
        (f"merged read {end}, least CPU", "s", lambda n: last[n]["read_cpu_s_best"]),
        ("read per M rows after the bulk load, best", "s", lambda n: report["targets"][n]["read_s_per_m_rows_start"]),
        (f"read per M rows {end}, best", "s", lambda n: report["targets"][n]["read_s_per_m_rows_end"]),
        (f"BaseStore data files {end}", "files", lambda n: last[n]["files"]["base_data"]),
        (f"unmerged ChangeStore files {end}", "files", lambda n: last[n]["files"]["change_unmerged"]),
        (f"delete files {end}", "files", lambda n: last[n]["files"]["delete_files"]),
        ("minor runs", "runs", runs_of("minor")),
        ("major runs", "runs", runs_of("major")),
        ("full runs", "runs", runs_of("full")),
        ("optimizer rows in", "rows", cumulative("rows_in")),
        ("optimizer rows/s over the runs' durations", "rows/s", cumulative("rows_per_s")),
        ("optimizer rows per CPU second", "rows/cpu-s", cumulative("rows_per_cpu_s")),
        ("minor rows per CPU second", "rows/cpu-s", lambda n: last[n]["cumulative"]["by_type"]["minor"]["rows_per_cpu_s"]),
        ("write amplification (optimizer bytes / ChangeStore bytes)", "x", cumulative("write_amplification")),
        ("optimizer bytes written", "MB", lambda n: last[n]["cumulative"]["bytes_out"] / MB),
        ("optimizer time, every run() call", "s", cumulative("wall_s")),
        ("optimizer CPU, every run() call", "cpu-s", cumulative("cpu_s")),
        ("ingest commit, median", "ms", lambda n: 1000 * statistics.median(report["commit_s"][n])),
    ]
    figures = [
        Figure(f"{label} ({n})", value(n), unit, None if baseline is None else value(baseline))
        for label, unit, value in metrics
        for n in names
        if n != baseline
    ]
    bulk = report["bulk_load"]
    figures += [
        Figure("base files after the bulk load", bulk["base_files"], "files"),
        Figure("mean base file after the bulk load", bulk["mean_file_bytes"] / MB, "MB"),
    ]
    c = report.get("catch_up")
    if c:
        figures += [
            Figure("catch-up minor of the off table's backlog: rows in", c["rows_in"], "rows", c["baseline_rows_in"]),
            Figure("catch-up minor: wall", c["wall_s"], "s", c["baseline_wall_s"]),
            Figure("catch-up minor: CPU", c["cpu_s"], "cpu-s", c["baseline_cpu_s"]),
            Figure("catch-up minor: rows per CPU second", c["rows_per_cpu_s"], "rows/cpu-s", c["baseline_rows_per_cpu_s"]),
        ]
    return figures


def target_notes(report: dict[str, Any]) -> list[str]:
    """Issue 3's targets, each with every setting's figure and whether it meets it."""
    cfg, t = report["config"], report["targets"]
    names: list[str] = cfg["settings"]

    def line(target: str, cell: Callable[[dict[str, Any]], str]) -> str:
        return f"target {target}: " + ", ".join(f"{n} {cell(t[n])}" for n in names)

    return [
        *(f"{d['name']} {dict(d['properties']) or '{}'}: {d['why']}" for d in report["setting_details"]),
        line(
            f"merged read <= {TARGET_READ_S} s after {cfg['commits']} commits (best read)",
            lambda x: f"{format_number(x['read_s_best_end'], 's')} {_yes(x['read_ok'])}",
        ),
        line(
            f"merged read flat (s per M rows, bulk load -> end, within {FLAT_TOLERANCE:g}x)",
            lambda x: (
                f"{format_number(x['read_s_per_m_rows_start'], 's')} -> {format_number(x['read_s_per_m_rows_end'], 's')} "
                f"{_yes(x['read_flat'])}"
            ),
        ),
        line(
            f"write amplification <= {TARGET_WRITE_AMP:g}x",
            lambda x: f"{format_number(x['write_amplification'], 'x')} {_yes(x['write_amp_ok'])}",
        ),
        line(
            f"minor >= {TARGET_MINOR_ROWS_PER_CORE_S / 1e6:g} M rows per CPU second",
            lambda x: f"{format_number(x['minor_rows_per_cpu_s'])} {_yes(x['minor_ok'])}",
        ),
        "rows in = base rows rewritten + change rows merged (ChangeStore inserts and deletes); optimizer rows/s use "
        "the runs' own durations (collect, plan, execute, commit); CPU seconds are the process's, all threads",
    ]


# --------------------------------------------------------------------------- the run


def turns(items: list[T], index: int) -> list[T]:
    """``items`` rotated by ``index``: who goes first changes from one commit to the next."""
    shift = index % len(items)
    return items[shift:] + items[:shift]


def progress(phase: dict[str, Any], names: list[str]) -> str:
    parts = []
    for n in names:
        f = phase[n]
        c = f["cumulative"]
        wa = "-" if c["write_amplification"] is None else f"{c['write_amplification']:.1f}x"
        parts.append(
            f"{n}: {f['files']['base_data']}+{f['files']['change_unmerged']} files/{f['files']['delete_files']} del, "
            f"read {f['read_s_best']:.2f}s, opt {c['wall_s']:.0f}s, WA {wa}"
        )
    return f"  after {phase['commits']} commits (load {phase['loadavg'][0]}): " + "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 100k base rows, 40 commits of 1k upserts")
    parser.add_argument("--rows", type=int, default=None, help="base rows (default 1,000,000; 100,000 with --quick)")
    parser.add_argument("--commits", type=int, default=None, help="upsert commits (default 200; 40 with --quick)")
    parser.add_argument("--upserts", type=int, default=None, help="upserts per commit (default rows / 200)")
    parser.add_argument("--phase-every", type=int, default=None, help="commits per phase (default commits / 10)")
    parser.add_argument(
        "--setting",
        action="append",
        default=None,
        help="tables to run, in column order (default: off, amoro-defaults, tuned, tuned-batched); repeat the flag",
    )
    parser.add_argument(
        "--target-size",
        type=parse_size,
        default=None,
        help="target-size of the 'tuned' table, e.g. 8MB (default 8 MB per M rows)",
    )
    parser.add_argument(
        "--read-repeats", type=int, default=5, help="merged reads per phase; the first is checked (default %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=20240601, help="numpy seed (default %(default)s)")
    parser.add_argument(
        "--output", type=Path, default=None, help="JSON results file (default bench/results/optimizing_soak-<date>-<commit>.json)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary warehouse")
    args = parser.parse_args(argv)

    rows = args.rows or (100_000 if args.quick else 1_000_000)
    commits = args.commits or (40 if args.quick else 200)
    upserts = args.upserts or max(2, rows // 200 if not args.quick else rows // 100)
    every = args.phase_every or max(1, commits // 10)
    target_size = args.target_size or default_target_size(rows)
    settings = settings_for(args.setting or ["off", "amoro-defaults", "tuned", "tuned-batched"], target_size)
    names = [s.name for s in settings]

    environment = capture_environment()
    workdir = Path(tempfile.mkdtemp(prefix="mixed-iceberg-soak-"))
    rng = np.random.default_rng(args.seed)
    report: dict[str, Any] = {
        "config": {
            "rows": rows,
            "commits": commits,
            "upserts": upserts,
            "phase_every": every,
            "quick": args.quick,
            "seed": args.seed,
            "read_repeats": args.read_repeats,
            "settings": names,
            "target_size": target_size,
        },
        "setting_details": [{"name": s.name, "properties": dict(s.properties), "why": s.why} for s in settings],
        "phases": [],
    }
    try:
        # The catalog config reads the warehouse from the environment: set it before loading.
        os.environ["MIXED_ICEBERG_WAREHOUSE_DIR"] = str(workdir / "warehouse")
        from mixed_iceberg import load_catalog

        catalog = load_catalog("local")
        tables = [
            SoakTable(
                s,
                catalog.create_table(
                    f"bench.soak_{s.name.replace('-', '_')}", schema=SCHEMA, primary_key=["id"], properties=s.properties
                ),
            )
            for s in settings
        ]
        print(f"bulk load: {rows:,} rows into {len(tables)} tables ({', '.join(names)})", file=sys.stderr, flush=True)
        base_rows = make_rows(rng, np.arange(rows, dtype=np.int64), 0)
        oracle = Oracle(base_rows, rows)
        for t in tables:
            t.table.bulk_load(base_rows)
        sizes: list[int] = tables[0].table.base_store.inspect.files().column("file_size_in_bytes").to_pylist()
        report["bulk_load"] = {"base_files": len(sizes), "mean_file_bytes": sum(sizes) / len(sizes), "file_bytes": sizes}
        for t in tables:
            t.measure(0, oracle, args.read_repeats)
        report["phases"].append(phase_entry(tables, 0, 0))
        print(progress(report["phases"][-1], names), file=sys.stderr, flush=True)
        start = 0
        for commit in range(1, commits + 1):
            batch = oracle.upsert_batch(rng, upserts, commit)
            for t in turns(tables, commit):
                t.commit(commit, batch)
                t.optimize(commit)
            if commit % every == 0 or commit == commits:
                for t in turns(tables, commit):
                    t.measure(commit, oracle, args.read_repeats)
                report["phases"].append(phase_entry(tables, start, commit))
                print(progress(report["phases"][-1], names), file=sys.stderr, flush=True)
                start = commit
        off = next((t for t in tables if t.name == BASELINE), None)
        if off is not None:
            report["catch_up"] = catch_up(off.table, oracle, workdir)
            print(f"catch-up: {report['catch_up']}", file=sys.stderr, flush=True)
        report["runs"] = {t.name: [asdict(r) for r in t.runs] for t in tables}
        report["commit_s"] = {t.name: t.commit_s for t in tables}
        report["change_bytes"] = {t.name: t.change_bytes for t in tables}
    finally:
        if args.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    report["targets"] = targets(report)
    figures, notes = setting_figures(report), target_notes(report)
    config = report.pop("config")
    run = Run(
        "optimizing_soak",
        environment.finished(),
        figures,
        baseline=f"the {BASELINE} table (self-optimizing.enabled=false) where it runs; catch-up: pyarrow reads the "
        "same files and writes the merged rows as one zstd Parquet file",
        config=config,
        notes=notes,
        detail=report,  # every phase's figures, every run() and commit
    )
    publish(run, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
