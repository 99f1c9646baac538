"""What the ingest client reports while the job runs: lag, rates, dead letters, freshness.

Pure: the client (:mod:`mixed_iceberg.ingest.monitor`) reads a :class:`JobState` every poll
(one ChangeStore refresh, one watermark query, one LogStore position fetch) and
:func:`progress` turns two successive states into a :class:`ProgressReport`, which
:func:`format_report` prints as one header line and one line per source partition::

    12:00:05 orders-ingest RUNNING 25 s, restarts 0: lag 12,000, 2.0 commits/s, 41,000 rows/s, dead letters 25 (+3), freshness p99 1.4 s
    12:00:05   p0: lag 3,000 (table 97,000 LogStore 97,000 end 100,000), 0.5 commits/s, 10,250 rows/s, dead letters 6 (+1), freshness p50 0.8 s p99 1.3 s, last commit 0.4 s ago

*Lag* is the source partition's end offset minus the smaller of what the table and the
LogStore hold (offsets, so a transactional producer's commit markers count: a caught-up
partition of such a topic may show a lag of a few offsets). Commits, rows and dead letters
are the job's ChangeStore commits of the partition (their snapshot summaries) since the
previous report; *freshness* is the newest such commit's event-to-commit latency (its
snapshot's timestamp minus the event times its summary records).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pyiceberg.table.metadata import TableMetadata

from mixed_iceberg.ingest.writer import SUMMARY_PREFIX
from mixed_iceberg.store.ancestry import ancestors
from mixed_iceberg.store.commit import COMMIT_WRITER

__all__ = [
    "CommitRecord",
    "IngestPosition",
    "JobState",
    "PartitionProgress",
    "PartitionState",
    "ProgressReport",
    "commit_record",
    "format_report",
    "ingest_positions",
    "progress",
]


@dataclass(frozen=True, slots=True)
class CommitRecord:
    """One ingest commit of a source partition, as its ChangeStore snapshot summary records it."""

    partition: int
    rows: int
    dead_letters: int
    timestamp_ms: int
    freshness_p50_ms: float | None = None
    freshness_p99_ms: float | None = None


def _int(summary: Mapping[str, str], key: str) -> int | None:
    value = summary.get(f"{SUMMARY_PREFIX}{key}")
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


def commit_record(summary: Mapping[str, str], timestamp_ms: int, topic: str) -> CommitRecord | None:
    """The ingest commit a snapshot summary describes (None: not an ingest commit of ``topic``).

    A summary from before the writer recorded dead letters and event times reads as 0 dead
    letters and no freshness.
    """
    partition = _int(summary, "partition")
    if summary.get(f"{SUMMARY_PREFIX}topic") != topic or partition is None:
        return None
    p50, p1 = _int(summary, "event-ms-p50"), _int(summary, "event-ms-p1")
    return CommitRecord(
        partition=partition,
        rows=_int(summary, "rows") or 0,
        dead_letters=_int(summary, "dead-letters") or 0,
        timestamp_ms=timestamp_ms,
        freshness_p50_ms=None if p50 is None else float(timestamp_ms - p50),
        freshness_p99_ms=None if p1 is None else float(timestamp_ms - p1),
    )


@dataclass(frozen=True, slots=True)
class IngestPosition:
    """Where an ingest job stands on one source partition, as the table's newest commit of that
    partition records it (``serve``'s metrics export it; the lag needs the partition's end offset)."""

    job: str
    topic: str
    partition: int
    next_offset: int
    commit_ms: int
    #: The newest commit's event-to-commit latency, p99 of its rows (None: no event times).
    freshness_p99_ms: float | None


def ingest_positions(change_store: TableMetadata | None) -> tuple[IngestPosition, ...]:
    """The newest ingest commit of every (job, topic, partition) in the ChangeStore's current
    ancestry, by job, topic and partition. Commits of other writers are passed over."""
    found: dict[tuple[str, str, int], IngestPosition] = {}
    if change_store is None:
        return ()
    for snapshot in ancestors(change_store):
        summary = snapshot.summary
        if summary is None:
            continue
        writer, topic = summary.get(COMMIT_WRITER), summary.get(f"{SUMMARY_PREFIX}topic")
        partition, next_offset = _int(summary, "partition"), _int(summary, "next-offset")
        if writer is None or topic is None or partition is None or next_offset is None:
            continue
        suffix = f"/{topic}/{partition}"
        if not (writer.startswith("ingest/") and writer.endswith(suffix)):
            continue
        job = writer[len("ingest/") : -len(suffix)]
        if (job, topic, partition) in found:
            continue
        record = commit_record(summary, snapshot.timestamp_ms, topic)
        found[job, topic, partition] = IngestPosition(
            job=job,
            topic=topic,
            partition=partition,
            next_offset=next_offset,
            commit_ms=snapshot.timestamp_ms,
            freshness_p99_ms=record.freshness_p99_ms if record is not None else None,
        )
    return tuple(found[key] for key in sorted(found))


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One source partition at one poll; ``commits``, ``rows`` and ``dead_letters`` count the
    commits the client has seen since it started."""

    partition: int
    low: int
    high: int
    table_next: int | None
    log_next: int | None = None
    commits: int = 0
    rows: int = 0
    dead_letters: int = 0
    last_commit_ms: int | None = None
    freshness_p50_ms: float | None = None
    freshness_p99_ms: float | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.low <= self.high:
            raise ValueError(f"partition {self.partition}: expected 0 <= low <= high, found {self.low}, {self.high}")

    def lag(self, *, with_log: bool) -> int:
        """End offset minus what both the table and (``with_log``) the LogStore hold."""
        held = self.table_next if self.table_next is not None else self.low
        if with_log:
            held = min(held, self.log_next if self.log_next is not None else self.low)
        return max(0, self.high - max(held, self.low))

    def with_commits(self, records: list[CommitRecord]) -> PartitionState:
        """This state plus ``records`` (this partition's commits, oldest first)."""
        if not records:
            return self
        newest = records[-1]
        fresh = next((r for r in reversed(records) if r.freshness_p99_ms is not None), None)
        return replace(
            self,
            commits=self.commits + len(records),
            rows=self.rows + sum(r.rows for r in records),
            dead_letters=self.dead_letters + sum(r.dead_letters for r in records),
            last_commit_ms=newest.timestamp_ms,
            freshness_p50_ms=fresh.freshness_p50_ms if fresh else self.freshness_p50_ms,
            freshness_p99_ms=fresh.freshness_p99_ms if fresh else self.freshness_p99_ms,
        )


@dataclass(frozen=True, slots=True)
class JobState:
    """Everything one poll saw. ``at``: monotonic seconds; ``now_ms``: wall clock."""

    job: str
    at: float
    now_ms: float
    partitions: tuple[PartitionState, ...]
    with_log: bool
    status: str = "RUNNING"
    restarts: int = 0
    started_at: float = 0.0

    def behind(self) -> dict[int, int]:
        """The partitions with a lag, each with the offset both stores hold (where to look for a record)."""
        lags = {state.partition: (state.high, state.lag(with_log=self.with_log)) for state in self.partitions}
        return {p: high - lag for p, (high, lag) in lags.items() if lag}


@dataclass(frozen=True, slots=True)
class PartitionProgress:
    """One partition over one interval."""

    partition: int
    lag: int
    table_next: int | None
    log_next: int | None
    high: int
    commits_per_s: float
    rows_per_s: float
    dead_letters: int
    new_dead_letters: int
    freshness_p50_ms: float | None
    freshness_p99_ms: float | None
    since_commit_s: float | None


@dataclass(frozen=True, slots=True)
class ProgressReport:
    """The job over one interval (``progress(previous, current)``)."""

    job: str
    status: str
    elapsed_s: float
    interval_s: float
    restarts: int
    with_log: bool
    partitions: tuple[PartitionProgress, ...] = field(default=())

    @property
    def lag(self) -> int:
        return sum(p.lag for p in self.partitions)

    @property
    def commits_per_s(self) -> float:
        return sum(p.commits_per_s for p in self.partitions)

    @property
    def rows_per_s(self) -> float:
        return sum(p.rows_per_s for p in self.partitions)

    @property
    def dead_letters(self) -> int:
        return sum(p.dead_letters for p in self.partitions)

    @property
    def new_dead_letters(self) -> int:
        return sum(p.new_dead_letters for p in self.partitions)

    @property
    def freshness_p99_ms(self) -> float | None:
        """The worst partition's latest p99."""
        found = [p.freshness_p99_ms for p in self.partitions if p.freshness_p99_ms is not None]
        return max(found) if found else None


def progress(previous: JobState, current: JobState) -> ProgressReport:
    """Rates over ``previous`` -> ``current`` (a partition new in ``current`` counts from zero)."""
    interval = current.at - previous.at
    if interval <= 0:
        raise ValueError(f"{current.job}: expected a later state, found {interval:.3f} s between the two")
    before = {p.partition: p for p in previous.partitions}
    parts = []
    for state in current.partitions:
        old = before.get(state.partition, PartitionState(state.partition, state.low, state.low, None))
        parts.append(
            PartitionProgress(
                partition=state.partition,
                lag=state.lag(with_log=current.with_log),
                table_next=state.table_next,
                log_next=state.log_next,
                high=state.high,
                commits_per_s=(state.commits - old.commits) / interval,
                rows_per_s=(state.rows - old.rows) / interval,
                dead_letters=state.dead_letters,
                new_dead_letters=state.dead_letters - old.dead_letters,
                freshness_p50_ms=state.freshness_p50_ms,
                freshness_p99_ms=state.freshness_p99_ms,
                since_commit_s=None if state.last_commit_ms is None else max(0.0, (current.now_ms - state.last_commit_ms) / 1000),
            )
        )
    return ProgressReport(
        job=current.job,
        status=current.status,
        elapsed_s=current.at - current.started_at,
        interval_s=interval,
        restarts=current.restarts,
        with_log=current.with_log,
        partitions=tuple(parts),
    )


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.1f} s"


def _rate(value: float) -> str:
    return f"{value:,.1f}" if value < 10 else f"{value:,.0f}"


def _offset(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def is_idle(report: ProgressReport) -> bool:
    """Caught up and quiet over the interval: no lag, no commit, no dead letter, no restart."""
    return report.lag == 0 and report.commits_per_s == 0 and report.new_dead_letters == 0


def format_report(report: ProgressReport, *, idle_since_s: float | None = None) -> list[str]:
    """One header line, then one line per partition (see the module docstring).

    ``idle_since_s``: the job has been :func:`idle <is_idle>` this long; one line says so (the
    per-partition lines would repeat the last report's)."""
    fresh = report.freshness_p99_ms
    if idle_since_s is not None:
        ages = [p.since_commit_s for p in report.partitions if p.since_commit_s is not None]
        newest = f", last commit {min(ages):.0f} s ago" if ages else ""
        return [
            f"{report.job} {report.status} {report.elapsed_s:.0f} s, restarts {report.restarts}: caught up, idle for "
            f"{idle_since_s:.0f} s (dead letters {report.dead_letters:,}{newest})"
        ]
    lines = [
        f"{report.job} {report.status} {report.elapsed_s:.0f} s, restarts {report.restarts}: lag {report.lag:,}, "
        f"{_rate(report.commits_per_s)} commits/s, {_rate(report.rows_per_s)} rows/s, "
        f"dead letters {report.dead_letters:,} (+{report.new_dead_letters:,})"
        + ("" if fresh is None else f", freshness p99 {_seconds(fresh)}")
    ]
    for p in report.partitions:
        held = f"table {_offset(p.table_next)}" + (f" LogStore {_offset(p.log_next)}" if report.with_log else "")
        line = (
            f"  p{p.partition}: lag {p.lag:,} ({held} end {p.high:,}), {_rate(p.commits_per_s)} commits/s, "
            f"{_rate(p.rows_per_s)} rows/s, dead letters {p.dead_letters:,} (+{p.new_dead_letters:,})"
        )
        if p.freshness_p50_ms is not None and p.freshness_p99_ms is not None:
            line += f", freshness p50 {_seconds(p.freshness_p50_ms)} p99 {_seconds(p.freshness_p99_ms)}"
        line += ", no commit yet" if p.since_commit_s is None else f", last commit {p.since_commit_s:.1f} s ago"
        lines.append(line)
    return lines


class ReportLines:
    """The lines to print for each report: all of them while the job works; once it is caught
    up and quiet, one line saying so, then one every ``idle_every_s`` (an idle job printed one
    line per partition every interval, forever)."""

    def __init__(self, idle_every_s: float = 60.0) -> None:
        self.idle_every_s = idle_every_s
        self._idle_from: float | None = None
        self._idle_printed_at: float | None = None

    def lines(self, report: ProgressReport, *, since_s: float) -> list[str]:
        """``since_s``: when the interval ``report`` covers began (the previous report's time)."""
        if not is_idle(report):
            self._idle_from = self._idle_printed_at = None
            return format_report(report)
        now = since_s + report.interval_s
        if self._idle_from is None:
            self._idle_from = since_s
        if self._idle_printed_at is not None and now - self._idle_printed_at < self.idle_every_s:
            return []
        self._idle_printed_at = now
        return format_report(report, idle_since_s=now - self._idle_from)
