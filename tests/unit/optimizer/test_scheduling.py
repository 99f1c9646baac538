"""Scheduling policies: a table's quota bounds its share of the group's threads; balanced serves the least recently optimized."""

from __future__ import annotations

import pytest

from mixed_iceberg.optimizer.scheduling import TableLoad, pick_table, quota_limit, quota_occupation, table_order

HOUR = 3_600_000


def load(
    table: str, quota: float = 0.5, executor_ms: int = 0, running: int = 0, last: int = 0, waiting: bool = True
) -> TableLoad:
    return TableLoad(table, quota, executor_ms, running, last, waiting)


@pytest.mark.parametrize(
    ("quota", "threads", "limit"), [(0.1, 4, 1), (0.5, 4, 2), (0.9, 4, 4), (0.01, 100, 1), (3.0, 2, 3), (0.0, 8, 1)]
)
def test_quota_limit_is_a_share_of_the_threads_or_a_thread_count_above_one(quota: float, threads: int, limit: int) -> None:
    assert quota_limit(quota, threads) == limit


def test_the_least_occupied_table_goes_first() -> None:
    # on 2 threads, a is entitled to 1.8 threads and used 45 min (0.42); b to 0.2 and used 30 min (2.5)
    loads = [load("b", 0.1, executor_ms=HOUR // 2), load("a", 0.9, executor_ms=3 * HOUR // 4)]
    assert quota_occupation(loads[1], HOUR, 2) == pytest.approx(0.75 / 1.8)
    assert [x.table_id for x in table_order("quota", loads, window_ms=HOUR, threads=2)] == ["a", "b"]
    assert pick_table("quota", loads, window_ms=HOUR, threads=2, break_quota=False) == "a"


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_shares_of_executor_time_follow_the_quotas(threads: int) -> None:
    """Two tables that always have work, equal tasks: over 1,000 tasks the 0.9 table gets 90 %
    of the executor time within 2 points, on any number of threads."""
    used = {"big": 0, "small": 0}
    quotas = {"big": 0.9, "small": 0.1}
    for _ in range(1000):
        loads = [load(t, quotas[t], executor_ms=used[t]) for t in used]
        chosen = pick_table("quota", loads, window_ms=HOUR, threads=threads, break_quota=True)
        assert chosen is not None
        used[chosen] += 1000
    share = used["big"] / sum(used.values())
    assert share == pytest.approx(0.9, abs=0.02)


def test_a_table_at_its_thread_limit_waits_unless_nothing_else_does() -> None:
    busy = load("busy", 0.1, running=1)  # limit 1 of 4 threads, already running one
    other = load("other", 0.5, executor_ms=HOUR, waiting=True)
    assert pick_table("quota", [busy, other], window_ms=HOUR, threads=4, break_quota=False) == "other"
    idle = load("other", 0.5, waiting=False)
    assert pick_table("quota", [busy, idle], window_ms=HOUR, threads=4, break_quota=False) is None
    assert pick_table("quota", [busy, idle], window_ms=HOUR, threads=4, break_quota=True) == "busy"


def test_balanced_serves_the_least_recently_optimized_table_that_waits() -> None:
    loads = [load("new", last=300), load("old", last=100, waiting=False), load("mid", last=200)]
    assert pick_table("balanced", loads, window_ms=HOUR, threads=1, break_quota=False) == "mid"
    assert pick_table("balanced", [], window_ms=HOUR, threads=1, break_quota=True) is None
