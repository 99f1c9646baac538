"""The optimizer soak's figures: live files, merged reads, backlog and drain of each setting, beside off.

Pure functions of the raw measurements ``bench.optimizer_soak`` keeps in its detail (``runs``:
one dict per setting with its samples, backlog polls, optimizer processes and CPU), so a stored
run can be summarized again. See that module for what is measured and the targets.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from bench.harness import Figure

__all__ = [
    "FIGURES",
    "FLAT_TOLERANCE",
    "backlog_series",
    "drain_seconds",
    "figures_and_notes",
    "live_file_bound",
    "quiet_since",
    "summarize",
]

#: Our reading of "flat": wall-clock reads on a shared machine move by more than 10 %.
FLAT_TOLERANCE = 1.25

FIGURES = (  # summary key, figure name, unit; the summaries in the detail hold more
    ("peak_live_files", "peak live files per table", "files"),
    ("mean_live_files_writing", "mean live files per table while writing", "files"),
    ("bound", "live-file bound per table", "files"),
    ("change_files_per_s", "change files written per table per second", "files/s"),
    ("plan_interval_s", "interval between two plans of a table, median", "s"),
    ("plan_to_commit_s", "plan to optimizer commit, median", "s"),
    ("read_first_s", "merged read, first third of the writes", "s"),
    ("read_last_s", "merged read, last third of the writes", "s"),
    ("read_end_s", "merged read at the end", "s"),
    ("backlog_peak", "backlog peak", "tasks"),
    ("drain_s", "backlog drained after the writes stopped", "s"),
    ("ingest_lag_s", "writes stopped after the stream ended", "s"),
)
#: Figures that have no meaning for a table nobody optimizes: no baseline beside them.
_NO_BASELINE = {
    "bound",
    "drain_s",
    "backlog_peak",
    "commits",
    "optimizer_cpu_s",
    "executor_busy_pct",
    "plan_interval_s",
    "plan_to_commit_s",
}


def live_file_bound(properties: Mapping[str, str], data_bytes: int) -> int:
    """``base.file-index.hash-bucket x ceil(size / self-optimizing.target-size) +
    self-optimizing.minor.trigger.file-count``, read from the table's properties (at least one
    file per bucket)."""
    from mixed_iceberg.config.registry import BASE_HASH_BUCKET, OPT_MINOR_FILES, OPT_TARGET_SIZE

    files_per_bucket = max(1, math.ceil(data_bytes / OPT_TARGET_SIZE.read(properties)))
    return int(BASE_HASH_BUCKET.read(properties) * files_per_bucket + OPT_MINOR_FILES.read(properties))


def quiet_since(polls: Sequence[Sequence[float]], stop: float, window: float, poll_s: float) -> float | None:
    """The first poll from ``stop`` on after which the polls saw nothing queued or in flight for
    ``window`` seconds (``None``: not yet). Polls miss processes shorter than their period; the
    figures use :func:`drain_seconds`, this only tells a running phase when to stop watching."""
    for i, (t, _, _) in enumerate(polls):
        if t < stop - poll_s:
            continue
        later = [p for p in polls[i:] if p[0] <= t + window]
        if polls[-1][0] >= t + window and all(b == 0 and f == 0 for _, b, f in later):
            return t
    return None


def drain_seconds(processes: Sequence[Mapping[str, Any]], stop: float, window: float) -> float | None:
    """Seconds from ``stop`` until the last optimizing process of the writes committed: the
    processes planned up to ``window`` seconds after ``stop`` (the longest a due plan waits;
    later ones are the minor trigger interval's, not the backlog's). 0 when none ran after it;
    ``None`` when one had not committed when the phase ended."""
    ends = [
        p["finished_s"]
        for p in processes
        if p["planned_s"] <= stop + window and (p["finished_s"] is None or p["finished_s"] > stop)
    ]
    if any(end is None for end in ends):
        return None
    return max(0.0, max(ends, default=stop) - stop)


def backlog_series(processes: Sequence[Mapping[str, Any]]) -> list[tuple[float, int]]:
    """(t, tasks queued or running) after every change, from the processes' plan times and their
    tasks' finish times: exact, where the 0.5 s polls miss the short tasks."""
    events = sorted(
        [(p["planned_s"], len(p["task_finished_s"])) for p in processes]
        + [(t, -1) for p in processes for t in p["task_finished_s"] if t is not None]
    )
    series, queued = [], 0
    for t, change in events:
        queued += change
        series.append((t, queued))
    return series


def summarize(result: Mapping[str, Any]) -> dict[str, Any]:
    """One setting's figures: live files, reads, backlog, drain, commits, CPU."""
    samples, stop = result["samples"], result["writes_stopped_s"]
    live = [[t["change_files"] + t["data_files"] + t["delete_files"] for t in s["tables"]] for s in samples]
    writing = [i for i, s in enumerate(samples) if s["t"] <= stop]
    third = max(1, len(writing) // 3)
    reads = [statistics.mean(t["read_s"] for t in s["tables"]) for s in samples]
    first = statistics.median(reads[i] for i in writing[:third])
    last = statistics.median(reads[i] for i in writing[-third:])
    bound = live_file_bound(result["properties"], max(t["data_bytes"] for t in samples[-1]["tables"]))
    cpu = result["cpu_s"]
    out: dict[str, Any] = {
        "peak_live_files": max(max(row) for row in live),
        "mean_live_files_writing": statistics.mean(statistics.mean(live[i]) for i in writing),
        "end_live_files": max(live[-1]),
        "bound": bound,
        "within_bound_pct": 100 * sum(n <= bound for i in writing for n in live[i]) / sum(len(live[i]) for i in writing),
        "read_first_s": first,
        "read_last_s": last,
        "read_growth": last / first if first else None,
        "read_end_s": reads[-1],
        "change_commits": result["change_commits"],
        "change_files_per_s": result["change_files_written"] / result["tables"] / stop,
        "ingest_lag_s": stop - result["stream_end_s"],
        "optimizer_cpu_s": cpu["optimizer"],
        "ingest_cpu_s": cpu["ingest"],
        "bench_cpu_s": cpu["bench"],
        "broker_cpu_s": cpu["broker"],
        "cores_used": sum(cpu.values()) / result["wall_s"],
    }
    events = result.get("events_per_table", 0) * result["tables"]
    if events:  # issue 18: the optimizer job's CPU per change event beside the ingest job's
        out["optimizer_cpu_us_per_event"] = cpu["optimizer"] / events * 1e6
        out["ingest_cpu_us_per_event"] = cpu["ingest"] / events * 1e6
    if result["parallelism"]:
        polls, processes = result["polls"], result["processes"]
        backlog = backlog_series(processes)
        done = [p for p in processes if p["status"] == "SUCCESS"]
        latency = [p["finished_s"] - p["planned_s"] for p in done]
        planned: dict[str, list[float]] = {}
        for p in processes:
            planned.setdefault(p["table"], []).append(p["planned_s"])
        intervals = [b - a for times in map(sorted, planned.values()) for a, b in itertools.pairwise(times)]
        out.update(
            backlog_peak=max((n for _, n in backlog), default=0),
            backlog_at_stop=next((n for t, n in reversed(backlog) if t <= stop), 0),
            polled_backlog_peak=max((b for _, b, _ in polls), default=0),
            drain_s=drain_seconds(processes, stop, result["quiet_window_s"]),
            commits=len(done),
            failed=sum(p["status"] in ("FAILED", "CANCELED") for p in processes),
            plan_to_commit_s=statistics.median(latency) if latency else None,
            plan_interval_s=statistics.median(intervals) if intervals else None,
            executor_busy_pct=100 * sum(p["task_ms"] for p in processes) / 1000 / (result["wall_s"] * result["parallelism"]),
        )
    return out


def figures_and_notes(
    results: Sequence[Mapping[str, Any]], summaries: Mapping[str, Mapping[str, Any]]
) -> tuple[list[Figure], list[str]]:
    """Each optimizing setting's figures beside the ``off`` run with as many tables; the targets as notes."""
    figures: list[Figure] = []
    notes: list[str] = []
    for result in results:
        if not result["parallelism"]:
            continue
        ours, off = summaries[result["setting"]], summaries.get(f"t{result['tables']}-off", {})
        for key, name, unit in FIGURES:
            if ours.get(key) is not None:
                baseline = None if key in _NO_BASELINE else off.get(key)
                figures.append(Figure(f"{result['label']}: {name}", ours[key], unit, baseline=baseline))
        if ours.get("ingest_cpu_us_per_event"):
            figures.append(
                Figure(
                    f"{result['label']}: optimizer job CPU per change event, baseline the ingest job's",
                    ours["optimizer_cpu_us_per_event"],
                    "us",
                    baseline=ours["ingest_cpu_us_per_event"],
                )
            )
        target_drain = 2 * result["refresh_s"]
        bounded = ours["peak_live_files"] <= ours["bound"]
        flat = ours["read_growth"] is not None and ours["read_growth"] <= FLAT_TOLERANCE
        drained = ours["drain_s"] is not None and ours["drain_s"] <= target_drain
        drain = f"{ours['drain_s']:.1f} s" if ours["drain_s"] is not None else "a process still running at the end"
        cadence = (ours["plan_interval_s"] or 0) * ours["change_files_per_s"]
        notes.append(
            f"{result['label']}: live files {'bounded' if bounded else 'NOT bounded'} (peak {ours['peak_live_files']} per "
            f"table, bound {ours['bound']}, {ours['within_bound_pct']:.0f}% of samples within it; "
            f"{ours['change_files_per_s']:.1f} change files/s per table x a plan every {ours['plan_interval_s'] or 0:.1f} s = "
            f"{cadence:.0f} files between two minors); merged read {'flat' if flat else 'NOT flat'} "
            f"({ours['read_first_s']:.3f} -> {ours['read_last_s']:.3f} s, {ours['read_growth']:.3f}x over the writes, off "
            f"{off.get('read_growth', float('nan')):.2f}x); backlog {'drained' if drained else 'NOT drained'} within two "
            f"refresh intervals ({drain}, target {target_drain:.0f} s); {ours['failed']} failed or canceled processes; "
            f"executors busy {ours['executor_busy_pct']:.0f}%, optimizer job {ours['optimizer_cpu_s']:.1f} CPU s; jobs, "
            f"producers, broker and sampler used {ours['cores_used']:.2f} cores (off: {off.get('cores_used', float('nan')):.2f})"
        )
    for result in results:
        if not all(result["oracle_ok"]):
            notes.append(f"{result['label']}: merged read DIFFERS from the producers' oracle")
    return figures, notes
