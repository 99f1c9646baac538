"""IngestMetrics: what the job reports when each partition keeps its own metrics, and which event times count."""

from __future__ import annotations

import numpy as np

from mixed_iceberg.ingest.metrics import COUNTERS, EVENT_TIME_SKEW_MS, IngestMetrics

NOW = 1_750_000_000_000.0  # wall-clock ms


def test_total_sums_counters_and_takes_the_newest_commits_figures() -> None:
    older, newer, idle = IngestMetrics(records_in=5, dead_letters=1), IngestMetrics(records_in=7, changes_out=9), IngestMetrics()
    older.observe_commit(40.0, np.array([NOW - 100, NOW - 300], np.int64), NOW)
    newer.observe_commit(25.0, np.array([NOW - 10], np.int64), NOW)
    newer.last_commit_at = older.last_commit_at + 1.0  # not left to the clock's resolution
    total = IngestMetrics.total([newer, older, idle])
    assert (total.records_in, total.changes_out, total.dead_letters, total.commits) == (12, 9, 1, 2)
    assert total.last_commit_ms == 25.0
    assert total.last_freshness_p50_ms == 10.0
    assert total.freshness_samples == []  # pooled only on request
    pooled = IngestMetrics.total([newer, older], samples=True)
    assert sorted(pooled.freshness_samples) == [10.0, 100.0, 300.0]
    assert pooled.summary()["commits"] == 2


def test_every_counter_is_summed() -> None:
    parts = [IngestMetrics(**dict.fromkeys(COUNTERS, i + 1)) for i in range(3)]
    total = IngestMetrics.total(parts)
    assert all(getattr(total, name) == 6 for name in COUNTERS)


def test_bogus_event_times_are_counted_not_sampled() -> None:
    valid = NOW - np.arange(1, 1001, dtype=np.int64) * 10  # freshness 10 ms .. 10 s
    bogus = np.array([0, -5, int(NOW) + 365 * 86_400_000, int(NOW) + EVENT_TIME_SKEW_MS + 1], np.int64)
    absent = np.array([-1, -1], np.int64)  # no ts_ms: no event time, not an error either
    clean, mixed = IngestMetrics(), IngestMetrics()
    clean.observe_commit(5.0, valid, NOW)
    mixed.observe_commit(5.0, np.concatenate([bogus[:2], valid, absent, bogus[2:]]), NOW)
    assert mixed.last_freshness_p99_ms == clean.last_freshness_p99_ms == np.percentile(NOW - valid, 99)
    assert mixed.last_freshness_p50_ms == clean.last_freshness_p50_ms
    assert (mixed.event_time_rejected, clean.event_time_rejected) == (4, 0)
    assert mixed.summary()["freshness_p99_ms"] == clean.summary()["freshness_p99_ms"]
    assert mixed.summary()["event_time_rejected"] == 4


def test_an_event_time_within_the_clock_skew_allowance_counts() -> None:
    metrics = IngestMetrics()
    metrics.observe_commit(5.0, np.array([int(NOW) + EVENT_TIME_SKEW_MS], np.int64), NOW)
    assert (metrics.event_time_rejected, metrics.last_freshness_p99_ms) == (0, -EVENT_TIME_SKEW_MS)
