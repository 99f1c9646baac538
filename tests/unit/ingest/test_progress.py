"""The client's progress report: lag, rates and freshness from two successive states, and its lines."""

from __future__ import annotations

import pytest

from mixed_iceberg.ingest.progress import (
    CommitRecord,
    JobState,
    PartitionState,
    ReportLines,
    commit_record,
    format_report,
    progress,
)
from mixed_iceberg.ingest.writer import SUMMARY_PREFIX

NOW = 1_750_000_000_000


def _summary(partition: int, rows: int, dead: int, *, p50: int | None = None, p1: int | None = None) -> dict[str, str]:
    out = {
        f"{SUMMARY_PREFIX}topic": "orders",
        f"{SUMMARY_PREFIX}partition": str(partition),
        f"{SUMMARY_PREFIX}rows": str(rows),
        f"{SUMMARY_PREFIX}dead-letters": str(dead),
    }
    if p50 is not None and p1 is not None:
        out[f"{SUMMARY_PREFIX}event-ms-p50"], out[f"{SUMMARY_PREFIX}event-ms-p1"] = str(p50), str(p1)
    return out


def test_commit_record_reads_rows_dead_letters_and_freshness_from_the_summary() -> None:
    record = commit_record(_summary(3, 500, 2, p50=NOW - 800, p1=NOW - 1500), NOW, "orders")
    assert record == CommitRecord(3, 500, 2, NOW, freshness_p50_ms=800.0, freshness_p99_ms=1500.0)


@pytest.mark.parametrize(
    ("summary", "topic"),
    [
        (_summary(0, 1, 0), "other-topic"),
        ({"operation": "append"}, "orders"),  # an optimizer's or another writer's commit
        ({f"{SUMMARY_PREFIX}topic": "orders", f"{SUMMARY_PREFIX}partition": "x"}, "orders"),
    ],
)
def test_commit_record_ignores_what_is_not_an_ingest_commit_of_the_topic(summary: dict[str, str], topic: str) -> None:
    assert commit_record(summary, NOW, topic) is None


def test_a_summary_from_an_older_writer_reads_as_no_dead_letters_and_no_freshness() -> None:
    old = {k: v for k, v in _summary(1, 10, 0).items() if not k.endswith("dead-letters")}
    assert commit_record(old, NOW, "orders") == CommitRecord(1, 10, 0, NOW)


@pytest.mark.parametrize(
    ("table_next", "log_next", "with_log", "lag"),
    [
        (None, None, True, 90),  # nothing committed: everything from the low watermark
        (60, 80, True, 40),  # the smaller of the two positions
        (80, 60, True, 40),
        (80, None, True, 90),  # the LogStore holds nothing yet
        (80, None, False, 20),  # no LogStore: the table alone
        (100, 100, True, 0),
        (5, 5, True, 90),  # positions below the low watermark (retention): from the low watermark
    ],
)
def test_lag_is_the_end_offset_minus_what_both_stores_hold(
    table_next: int | None, log_next: int | None, with_log: bool, lag: int
) -> None:
    assert PartitionState(0, 10, 100, table_next, log_next).lag(with_log=with_log) == lag


def _state(at: float, *partitions: PartitionState, restarts: int = 0) -> JobState:
    return JobState("orders-ingest", at, NOW + at * 1000, partitions, with_log=True, restarts=restarts, started_at=0.0)


def test_rates_lag_dead_letters_and_freshness_over_one_interval() -> None:
    p0 = PartitionState(0, 0, 1000, 100, 100)
    p1 = PartitionState(1, 0, 1000, 1000, 1000)
    first = _state(10.0, p0, p1)
    commits = [
        CommitRecord(0, 400, 1, int(NOW + 11_000), 500.0, 900.0),
        CommitRecord(0, 400, 2, int(NOW + 13_000), 300.0, 700.0),
    ]
    later = _state(14.0, PartitionState(0, 0, 1500, 900, 900).with_commits(commits), PartitionState(1, 0, 1000, 1000, 1000))
    report = progress(first, later)
    one, two = report.partitions
    assert (one.lag, one.commits_per_s, one.rows_per_s, one.dead_letters, one.new_dead_letters) == (600, 0.5, 200.0, 3, 3)
    assert (one.freshness_p50_ms, one.freshness_p99_ms, one.since_commit_s) == (300.0, 700.0, 1.0)  # the newest commit's
    assert (two.lag, two.commits_per_s, two.since_commit_s, two.freshness_p99_ms) == (0, 0.0, None, None)
    assert (report.lag, report.commits_per_s, report.rows_per_s, report.freshness_p99_ms) == (600, 0.5, 200.0, 700.0)
    assert (report.interval_s, report.elapsed_s) == (4.0, 14.0)
    assert later.behind() == {0: 900}


def test_counts_are_cumulative_so_the_next_interval_reports_only_its_own_commits() -> None:
    start = PartitionState(0, 0, 100, 0, 0)
    once = start.with_commits([CommitRecord(0, 50, 1, NOW, 10.0, 20.0)])
    twice = once.with_commits([CommitRecord(0, 30, 0, NOW + 1000)])  # a commit without event times
    report = progress(_state(1.0, once), _state(3.0, twice))
    (p,) = report.partitions
    assert (p.rows_per_s, p.commits_per_s, p.dead_letters, p.new_dead_letters) == (15.0, 0.5, 1, 0)
    assert p.freshness_p99_ms == 20.0  # kept from the last commit that had event times


def test_a_partition_new_in_the_later_state_counts_from_zero() -> None:
    added = PartitionState(4, 0, 10, 10, 10).with_commits([CommitRecord(4, 20, 0, NOW)])
    (p,) = progress(_state(1.0), _state(2.0, added)).partitions
    assert (p.partition, p.rows_per_s, p.commits_per_s) == (4, 20.0, 1.0)


def test_states_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="expected a later state"):
        progress(_state(2.0), _state(2.0))


def test_a_partition_state_checks_its_watermarks() -> None:
    with pytest.raises(ValueError, match="expected 0 <= low <= high"):
        PartitionState(0, 10, 5, None)


def test_format_report_prints_a_header_and_one_line_per_partition() -> None:
    p0 = PartitionState(0, 0, 100_000, 90_000, 90_000)
    p0_later = PartitionState(0, 0, 100_000, 97_000, 97_000).with_commits(
        [CommitRecord(0, 20_500, 3, int(NOW + 4_600), 800.0, 1300.0), CommitRecord(0, 20_500, 3, int(NOW + 4_600))]
    )
    p1 = PartitionState(1, 0, 0, None, None)
    lines = format_report(progress(_state(3.0, p0, p1, restarts=1), _state(5.0, p0_later, p1, restarts=1)))
    assert lines == [
        "orders-ingest RUNNING 5 s, restarts 1: lag 3,000, 1.0 commits/s, 20,500 rows/s, dead letters 6 (+6), "
        "freshness p99 1.3 s",
        "  p0: lag 3,000 (table 97,000 LogStore 97,000 end 100,000), 1.0 commits/s, 20,500 rows/s, dead letters 6 (+6), "
        "freshness p50 0.8 s p99 1.3 s, last commit 0.4 s ago",
        "  p1: lag 0 (table - LogStore - end 0), 0.0 commits/s, 0.0 rows/s, dead letters 0 (+0), no commit yet",
    ]


def test_without_a_logstore_the_lines_show_the_table_alone() -> None:
    state = JobState("j", 1.0, NOW, (PartitionState(0, 0, 10, 4),), with_log=False)
    later = JobState("j", 2.0, NOW, (PartitionState(0, 0, 10, 4, log_next=None),), with_log=False)
    assert format_report(progress(state, later))[1].startswith("  p0: lag 6 (table 4 end 10)")


def test_a_caught_up_quiet_job_prints_one_line_then_one_a_minute() -> None:
    """An idle job used to print a header and one line per partition every interval, forever."""
    done = PartitionState(0, 0, 1000, 1000, 1000)
    behind = PartitionState(0, 0, 1200, 1000, 1000)
    lines = ReportLines(idle_every_s=60.0)

    def at(start: float, partition: PartitionState) -> list[str]:
        return lines.lines(progress(_state(start, done), _state(start + 5.0, partition)), since_s=start)

    first = at(10.0, done)
    assert first == ["orders-ingest RUNNING 15 s, restarts 0: caught up, idle for 5 s (dead letters 0)"]
    assert [at(t, done) for t in (15.0, 20.0, 65.0)] == [[], [], []]
    assert at(70.0, done) == ["orders-ingest RUNNING 75 s, restarts 0: caught up, idle for 65 s (dead letters 0)"]
    busy = at(75.0, behind)
    assert len(busy) == 2  # work again: every line, and the idle count restarts
    assert "lag 200" in busy[0]
    assert at(80.0, done)[0].endswith("caught up, idle for 5 s (dead letters 0)")
