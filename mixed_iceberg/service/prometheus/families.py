"""The metric families of ``GET /metrics``, from records already read. Pure: no I/O, ``now_ms`` given.

Every exported name is declared once here, in :data:`METRICS` (name, tags, help); docs/metrics.md
lists the same names with their mapping to Amoro's. Amoro's names keep their ``amoro_`` prefix
and tags (``catalog``, ``database``, ``table``, ``group``) so its Grafana dashboards work; ours
start with ``mixed_iceberg_``. All are gauges: Amoro declares its process counts counters since
the service started, ours are counts of the processes the system database records, which an
operator may prune (``rate()`` and ``increase()`` work on them all the same).

Amoro's "unknown time" is 0 (its ``INVALID_TIME``): a ``since_last_*`` gauge of a table never
optimized, and the lag of a table without both times, are 0 here too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily

from mixed_iceberg.config.kinds import HealthState, OptimizingType, ProcessStatus, TableStatus
from mixed_iceberg.optimizer.sysdb.records import GroupQueue, TableRuntimeStats
from mixed_iceberg.optimizing.health import judge
from mixed_iceberg.service.prometheus.summary import TableSummary

__all__ = ["METRICS", "Scrape", "SummarizedTable", "families"]

_T = ("catalog", "database", "table")
_TG = ("catalog", "database", "table", "group")
_G = ("group",)
_TI = ("catalog", "database", "table", "job", "topic", "partition")
_A = "amoro_"
_M = "mixed_iceberg_"

#: Amoro's names of a table's optimizing status, by ours (FAILED: waiting for its back-off to
#: end, then planned again, which Amoro shows as pending).
STATUS_OF: dict[TableStatus, str] = {
    TableStatus.IDLE: "idle",
    TableStatus.FAILED: "pending",
    TableStatus.PLANNING: "planning",
    TableStatus.MINOR: "executing",
    TableStatus.MAJOR: "executing",
    TableStatus.FULL: "executing",
    TableStatus.COMMITTING: "committing",
}
_STATUSES = ("idle", "pending", "planning", "executing", "committing")
_TYPES = (("minor", OptimizingType.MINOR), ("major", OptimizingType.MAJOR), ("full", OptimizingType.FULL))
_ENDED = (ProcessStatus.SUCCESS, ProcessStatus.FAILED, ProcessStatus.CANCELED)
_STATE_VALUES = {HealthState.GREEN: 0, HealthState.AMBER: 1, HealthState.RED: 2}

#: Every exported metric: name -> (tags, help).
METRICS: dict[str, tuple[tuple[str, ...], str]] = {
    **{
        f"{_A}table_optimizing_status_{s}_duration_mills": (_TG, f"Milliseconds the table has been {s} (0: not {s})")
        for s in _STATUSES
    },
    **{f"{_A}table_optimizing_status_in_{s}": (_TG, f"1 while the table is {s}, else 0") for s in _STATUSES},
    f"{_A}table_optimizing_process_total_count": (_TG, "Ended optimizing processes the system database records"),
    f"{_A}table_optimizing_process_failed_count": (_TG, "Failed optimizing processes the system database records"),
    **{
        f"{_A}table_optimizing_{t}_total_count": (_TG, f"Ended {t} optimizing processes the system database records")
        for t, _ in _TYPES
    },
    **{
        f"{_A}table_optimizing_{t}_failed_count": (_TG, f"Failed {t} optimizing processes the system database records")
        for t, _ in _TYPES
    },
    **{
        f"{_A}table_optimizing_since_last_{t}_optimization_mills": (
            _TG,
            f"Milliseconds since the last successful {t} optimizing (0: never)",
        )
        for t, _ in _TYPES
    },
    f"{_A}table_optimizing_since_last_optimization_mills": (_TG, "Milliseconds since the last successful optimizing (0: never)"),
    f"{_A}table_optimizing_lag_duration_mills": (
        _TG,
        "Milliseconds from the last successful optimizing to the newest commit that added data (0: none since, or unknown)",
    ),
    f"{_A}table_summary_health_score": (_T, "Health score 0-100: small files, delete ratio, equality deletes (docs/cli.md)"),
    f"{_A}table_summary_total_files": (_T, "Files a read of the table opens: data files and delete files"),
    f"{_A}table_summary_data_files": (_T, "Data files: live base files and unmerged change inserts"),
    f"{_A}table_summary_equality_delete_files": (_T, "Equality delete files: base ones and unmerged change deletes"),
    f"{_A}table_summary_position_delete_files": (_T, "Position delete files of the base store"),
    f"{_A}table_summary_dangling_delete_files": (_T, "Base delete files no live data file references"),
    f"{_A}table_summary_total_files_size": (_T, "Bytes of all files"),
    f"{_A}table_summary_data_files_size": (_T, "Bytes of data files"),
    f"{_A}table_summary_equality_delete_files_size": (_T, "Bytes of equality delete files"),
    f"{_A}table_summary_position_delete_files_size": (_T, "Bytes of position delete files"),
    f"{_A}table_summary_total_records": (_T, "Records of all files (data and deletes)"),
    f"{_A}table_summary_data_files_records": (_T, "Records of data files"),
    f"{_A}table_summary_equality_delete_files_records": (_T, "Records of equality delete files"),
    f"{_A}table_summary_position_delete_files_records": (_T, "Records of position delete files"),
    f"{_A}table_summary_snapshots": (_T, "Snapshots of the base store"),
    f"{_A}optimizer_group_pending_tasks": (_G, "Tasks planned or scheduled, not yet acknowledged by an executor"),
    f"{_A}optimizer_group_executing_tasks": (_G, "Tasks an executor acknowledged and runs"),
    **{
        f"{_A}optimizer_group_{s}_tables": (_G, f"Tables of the group that are {s}")
        for s in ("planing", "pending", "executing", "idle", "committing")
    },
    f"{_A}optimizer_group_optimizer_instances": (_G, "Live optimizers (heartbeat within the group's timeout)"),
    f"{_A}optimizer_group_threads": (_G, "Executor threads of the live optimizers"),
    f"{_A}optimizer_group_idle_optimizers": (_G, "Live optimizers with no task in flight (scheduled or acknowledged)"),
    f"{_M}table_unmerged_change_files": (_T, "ChangeStore files not yet merged into the base store"),
    f"{_M}table_unmerged_change_bytes": (_T, "Bytes of unmerged ChangeStore files"),
    f"{_M}table_unmerged_change_insert_records": (_T, "Insert rows of unmerged ChangeStore files"),
    f"{_M}table_unmerged_change_delete_records": (_T, "Delete rows of unmerged ChangeStore files (a merged read pays them)"),
    f"{_M}table_health_state": (_T, "Worst health.target.* state: 0 green (or none set), 1 amber, 2 red"),
    f"{_M}table_health_targets_missed": (_T, "health.target.* properties the table misses now (red)"),
    f"{_M}table_oldest_unmerged_change_mills": (_T, "Milliseconds since the oldest unmerged ChangeStore commit (0: none)"),
    f"{_M}table_since_last_commit_mills": (
        _T,
        "Milliseconds since the newest commit of either store (freshness; 0: never written)",
    ),
    f"{_M}table_optimizing_failures": (_TG, "Consecutive failed optimizing processes or plannings of the table"),
    f"{_M}optimizer_group_failed_tables": (_G, "Tables of the group whose last optimizing or planning failed"),
    f"{_M}optimizer_group_occupation": (_G, "Share of the live executors' time spent on tasks over the last minute"),
    f"{_M}ingest_next_offset": (_TI, "The next source offset the table holds: the ingest job's newest commit of the partition"),
    f"{_M}ingest_lag_records": (
        _TI,
        "Source offsets past what the table holds (end offset minus next offset; only when serve reaches the "
        "source's Kafka: kafka-bootstrap-servers in service.yaml)",
    ),
    f"{_M}ingest_since_last_commit_mills": (_TI, "Milliseconds since the ingest job's newest commit of the partition"),
    f"{_M}ingest_freshness_p99_mills": (
        _TI,
        "Event-to-commit latency of the newest commit of the partition, p99 of its rows (absent without event times)",
    ),
    f"{_M}metrics_system_database_up": ((), "1 when the optimizer's system database answered this scrape, else 0"),
    f"{_M}metrics_summaries_stale": ((), "Tables whose summary predates their metadata (the scrape's time budget ran out)"),
}


@dataclass(frozen=True, slots=True)
class SummarizedTable:
    """One table of a served catalog with its summary (None: not summarized yet)."""

    catalog: str
    name: str  # namespace.table
    summary: TableSummary | None


@dataclass(frozen=True, slots=True)
class Scrape:
    """What one scrape read."""

    now_ms: int
    tables: tuple[SummarizedTable, ...]
    stale: int
    runtimes: tuple[TableRuntimeStats, ...] = ()
    process_totals: Mapping[tuple[str, OptimizingType, ProcessStatus], int] | None = None
    groups: Mapping[str, GroupQueue] | None = None  # None: no system database answered
    idle_optimizers: Mapping[str, int] | None = None
    #: The source topics' end offsets (None: serve reaches no source cluster).
    end_offsets: Mapping[tuple[str, int], int] | None = None


class _Families:
    def __init__(self) -> None:
        self.found: dict[str, GaugeMetricFamily] = {}

    def add(self, name: str, labels: Iterable[str], value: float) -> None:
        family = self.found.get(name)
        if family is None:
            tags, text = METRICS[name]
            family = self.found[name] = GaugeMetricFamily(name, text, labels=list(tags))
        family.add_metric(list(labels), value)


def _split(name: str) -> tuple[str, str]:
    database, _, table = name.rpartition(".")
    return database, table


def _since(now_ms: int, then_ms: int | None) -> int:
    return max(0, now_ms - then_ms) if then_ms else 0


def _summary_metrics(out: _Families, table: SummarizedTable, now_ms: int) -> None:
    s = table.summary
    if s is None:
        return
    tags = (table.catalog, *_split(table.name))
    figures = {
        "total_files": s.total_files,
        "data_files": s.data_files,
        "equality_delete_files": s.equality_delete_files,
        "position_delete_files": s.position_delete_files,
        "dangling_delete_files": s.dangling_delete_files,
        "total_files_size": s.total_files_size,
        "data_files_size": s.data_files_size,
        "equality_delete_files_size": s.equality_delete_files_size,
        "position_delete_files_size": s.position_delete_files_size,
        "total_records": s.total_records,
        "data_files_records": s.data_files_records,
        "equality_delete_files_records": s.equality_delete_files_records,
        "position_delete_files_records": s.position_delete_files_records,
        "snapshots": s.snapshots,
    }
    for key, value in figures.items():
        out.add(f"{_A}table_summary_{key}", tags, value)
    out.add(f"{_M}table_unmerged_change_files", tags, s.unmerged_change_files)
    out.add(f"{_M}table_unmerged_change_bytes", tags, s.unmerged_change_bytes)
    out.add(f"{_M}table_unmerged_change_insert_records", tags, s.unmerged_change_insert_records)
    out.add(f"{_M}table_unmerged_change_delete_records", tags, s.unmerged_change_delete_records)
    out.add(f"{_M}table_oldest_unmerged_change_mills", tags, _since(now_ms, s.oldest_unmerged_change_ms))
    out.add(f"{_M}table_since_last_commit_mills", tags, _since(now_ms, s.last_commit_ms))
    if s.health is not None:  # judged now: the oldest unmerged change ages between scrapes
        health = judge(s.figures, s.health, now_ms=now_ms)
        out.add(f"{_A}table_summary_health_score", tags, health.score)
        out.add(f"{_M}table_health_state", tags, _STATE_VALUES[health.state])
        out.add(f"{_M}table_health_targets_missed", tags, sum(1 for c in health.checks if c.state is HealthState.RED))


def _ingest_metrics(out: _Families, table: SummarizedTable, scrape: Scrape) -> None:
    if table.summary is None:
        return
    for position in table.summary.ingest:
        tags = (table.catalog, *_split(table.name), position.job, position.topic, str(position.partition))
        out.add(f"{_M}ingest_next_offset", tags, position.next_offset)
        out.add(f"{_M}ingest_since_last_commit_mills", tags, _since(scrape.now_ms, position.commit_ms))
        if position.freshness_p99_ms is not None:
            out.add(f"{_M}ingest_freshness_p99_mills", tags, position.freshness_p99_ms)
        end = (scrape.end_offsets or {}).get((position.topic, position.partition))
        if end is not None:
            out.add(f"{_M}ingest_lag_records", tags, max(0, end - position.next_offset))


def _optimizing_metrics(
    out: _Families,
    stats: TableRuntimeStats,
    totals: Mapping[tuple[str, OptimizingType, ProcessStatus], int],
    summary: TableSummary | None,
    now_ms: int,
) -> None:
    r = stats.runtime
    tags = (r.catalog, *_split(r.table_name), r.group_name)
    status = STATUS_OF[r.status]
    last = stats.last_process
    since = last.planned_ms if status == "executing" and last is not None and last.process_id == r.process_id else r.updated_ms
    for s in _STATUSES:
        out.add(f"{_A}table_optimizing_status_{s}_duration_mills", tags, _since(now_ms, since) if s == status else 0)
        out.add(f"{_A}table_optimizing_status_in_{s}", tags, 1 if s == status else 0)
    ended = {kind: sum(totals.get((r.table_id, kind, e), 0) for e in _ENDED) for _, kind in _TYPES}
    failed = {kind: totals.get((r.table_id, kind, ProcessStatus.FAILED), 0) for _, kind in _TYPES}
    out.add(f"{_A}table_optimizing_process_total_count", tags, sum(ended.values()))
    out.add(f"{_A}table_optimizing_process_failed_count", tags, sum(failed.values()))
    last_ms = {OptimizingType.MINOR: r.last_minor_ms, OptimizingType.MAJOR: r.last_major_ms, OptimizingType.FULL: r.last_full_ms}
    for name, kind in _TYPES:
        out.add(f"{_A}table_optimizing_{name}_total_count", tags, ended[kind])
        out.add(f"{_A}table_optimizing_{name}_failed_count", tags, failed[kind])
        out.add(f"{_A}table_optimizing_since_last_{name}_optimization_mills", tags, _since(now_ms, last_ms[kind]))
    out.add(f"{_A}table_optimizing_since_last_optimization_mills", tags, _since(now_ms, r.last_optimized_ms))
    data_ms = summary.last_data_commit_ms if summary is not None else None
    lag = max(0, data_ms - r.last_optimized_ms) if data_ms and r.last_optimized_ms else 0
    out.add(f"{_A}table_optimizing_lag_duration_mills", tags, lag)
    out.add(f"{_M}table_optimizing_failures", tags, r.failures)


def _group_metrics(
    out: _Families, groups: Mapping[str, GroupQueue], idle: Mapping[str, int], runtimes: Iterable[TableRuntimeStats]
) -> None:
    tables: dict[tuple[str, str], int] = defaultdict(int)
    for stats in runtimes:
        tables[stats.runtime.group_name, STATUS_OF[stats.runtime.status]] += 1
    for name, queue in sorted(groups.items()):
        tags = (name,)
        out.add(f"{_A}optimizer_group_pending_tasks", tags, queue.tasks_planned + queue.tasks_scheduled)
        out.add(f"{_A}optimizer_group_executing_tasks", tags, queue.tasks_acked)
        for ours, amoro in (("planning", "planing"), ("pending", "pending"), ("executing", "executing"), ("idle", "idle")):
            out.add(f"{_A}optimizer_group_{amoro}_tables", tags, tables.get((name, ours), 0))
        out.add(f"{_A}optimizer_group_committing_tables", tags, tables.get((name, "committing"), 0))
        out.add(f"{_A}optimizer_group_optimizer_instances", tags, queue.live_optimizers)
        out.add(f"{_A}optimizer_group_threads", tags, queue.threads)
        out.add(f"{_A}optimizer_group_idle_optimizers", tags, idle.get(name, 0))
        out.add(f"{_M}optimizer_group_failed_tables", tags, queue.tables_failed)
        out.add(f"{_M}optimizer_group_occupation", tags, round(queue.occupation, 4))


def families(scrape: Scrape) -> Iterator[GaugeMetricFamily]:
    """The families of ``scrape``, each name once, in :data:`METRICS` order."""
    out = _Families()
    summaries = {(t.catalog, t.name): t.summary for t in scrape.tables}
    for table in scrape.tables:
        _summary_metrics(out, table, scrape.now_ms)
        _ingest_metrics(out, table, scrape)
    if scrape.groups is not None:
        for stats in scrape.runtimes:
            summary = summaries.get((stats.runtime.catalog, stats.runtime.table_name))
            _optimizing_metrics(out, stats, scrape.process_totals or {}, summary, scrape.now_ms)
        _group_metrics(out, scrape.groups, scrape.idle_optimizers or {}, scrape.runtimes)
    out.add(f"{_M}metrics_system_database_up", (), 1 if scrape.groups is not None else 0)
    out.add(f"{_M}metrics_summaries_stale", (), scrape.stale)
    for name in METRICS:
        if name in out.found:
            yield out.found[name]
