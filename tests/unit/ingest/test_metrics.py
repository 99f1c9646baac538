"""IngestMetrics.total: what the job reports when each partition keeps its own metrics."""

from __future__ import annotations

import numpy as np

from mixed_iceberg.ingest.metrics import COUNTERS, IngestMetrics


def test_total_sums_counters_and_takes_the_newest_commits_figures() -> None:
    older, newer, idle = IngestMetrics(records_in=5, dead_letters=1), IngestMetrics(records_in=7, changes_out=9), IngestMetrics()
    older.observe_commit(40.0, np.array([100.0, 300.0]))
    newer.observe_commit(25.0, np.array([10.0]))
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
