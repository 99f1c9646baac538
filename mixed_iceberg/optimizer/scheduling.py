"""Which table's task an idle executor thread takes next: Amoro's ``quota`` and ``balanced`` policies. Pure.

``quota``: a table is entitled to its quota of the group's threads (``quota x threads``, or
``quota`` threads for a quota above 1). Its *occupation* is the executor time its tasks used
over the look-back window, divided by the window and by that entitlement. The least occupied
table goes first, so over time the tables' shares of executor time follow their quotas.
Amoro's ``QuotaOccupySorter`` divides by the entitlement rounded up to whole threads instead,
which gives 0.9 and 0.1 the same share on a one-thread group. A table that already runs as
many tasks as its entitlement rounded up (:func:`quota_limit`) is skipped, unless nothing else
waits (``break-quota-limit-enabled``). One churny table therefore cannot starve its siblings.

``balanced``: the table optimized least recently goes first (Amoro's ``BalancedSorter``).

>>> loads = [TableLoad("a", 0.9, 3_000_000, 1, 10, True), TableLoad("b", 0.1, 0, 0, 5, True)]
>>> pick_table("quota", loads, window_ms=3_600_000, threads=2, break_quota=True)
'b'
>>> pick_table("balanced", loads, window_ms=3_600_000, threads=2, break_quota=True)
'b'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["TableLoad", "entitlement", "pick_table", "quota_limit", "quota_occupation", "table_order"]


@dataclass(frozen=True, slots=True)
class TableLoad:
    """One table's scheduling facts, read from the system database."""

    table_id: str
    quota: float
    executor_ms: int  # executor time of its tasks within the look-back window (running ones too)
    running: int  # tasks scheduled or running now
    last_optimized_ms: int  # the latest commit of any type (0: never)
    waiting: bool  # it has a task waiting to be scheduled


def quota_limit(quota: float, threads: int) -> int:
    """How many of the group's ``threads`` a table of ``quota`` may use at once (at least one)."""
    if quota > 1:
        return int(quota)
    return max(1, math.ceil(quota * max(1, threads)))


def entitlement(quota: float, threads: int) -> float:
    """Threads' worth of executor time a table of ``quota`` is entitled to (never zero)."""
    share = quota if quota > 1 else quota * max(1, threads)
    return max(share, 1e-6)


def quota_occupation(load: TableLoad, window_ms: int, threads: int) -> float:
    """The share of its entitlement a table used over the window (1.0: all of it)."""
    return load.executor_ms / max(1, window_ms) / entitlement(load.quota, threads)


def table_order(policy: str, loads: Sequence[TableLoad], *, window_ms: int, threads: int) -> list[TableLoad]:
    """``loads`` in the order the policy serves them (ties by table id, so the order is stable)."""
    if policy == "balanced":
        return sorted(loads, key=lambda load: (load.last_optimized_ms, load.table_id))
    return sorted(loads, key=lambda load: (quota_occupation(load, window_ms, threads), load.table_id))


def pick_table(policy: str, loads: Sequence[TableLoad], *, window_ms: int, threads: int, break_quota: bool) -> str | None:
    """The table whose waiting task an idle thread should take; None when none waits."""
    order = [load for load in table_order(policy, loads, window_ms=window_ms, threads=threads) if load.waiting]
    if policy == "balanced":
        return order[0].table_id if order else None
    for load in order:
        if load.running < quota_limit(load.quota, threads):
            return load.table_id
    if break_quota and order:
        return order[0].table_id
    return None
