"""bench.ingest's freshness figure: per live event, the time from its produce to the commit that
holds it; a live phase with no event after its first batch gives no figure instead of a crash
(``bench.ingest --quick`` crashed there)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("confluent_kafka")  # bench.ingest imports the Kafka LogStore

from bench.ingest import freshness


def _batch(partition: int, offsets: list[int], stamps: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, pa.Array]:
    n = len(offsets)
    return np.full(n, partition), np.array(offsets), np.array(stamps), pa.array([b""] * n)


def test_each_event_is_timed_to_the_first_commit_past_its_offset() -> None:
    commits = [(0, 2, 1_000), (0, 4, 1_500)]  # (partition, next offset, commit time)
    fresh = freshness(commits, [_batch(0, [0, 1, 2, 3, 4], [100, 200, 300, 400, 500])])
    assert fresh.tolist() == [900, 800, 1_200, 1_100]  # offset 4 not committed yet: not counted


def test_no_live_event_or_no_commit_gives_no_figure() -> None:
    assert freshness([(0, 2, 1_000)], []).size == 0
    assert freshness([], [_batch(0, [0], [100])]).size == 0
