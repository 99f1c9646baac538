"""Where a CDC read's range is cut: the BaseStore commits that change the merged view. Pure.

The merged view of a keyed table changes through the ChangeStore (change rows, in sequence
order) and through the BaseStore: ``bulk_load`` into an empty table or with ``overwrite``, or
another engine writing the BaseStore. Optimizing and other ``replace`` commits never change it
(DESIGN.md invariant 5). :func:`plan_timeline` orders the view-changing BaseStore commits of a
range among the ChangeStore's sequences, so that ``changes()`` can derive the change rows of
each stretch from the state before it and emit each BaseStore event as the difference of the
view just before and just after it.

A view is a pair (ChangeStore sequence ``s``, BaseStore snapshot ``B``): ``B``'s rows plus the
change rows above ``B``'s optimized sequence up to ``s``. An event is placed after the
ChangeStore sequence current when it was committed (never below the sequence it optimized
through: a ``bulk_load(overwrite=True)`` supersedes every change up to its own).

A range whose history is gone cannot be given as changes: change files that the change-data
TTL removed from within it (:class:`~mixed_iceberg.exceptions.SnapshotExpiredError`). From the
beginning (no ``from_snapshot``), a history that expiry or TTL cut short starts instead with the
table as of the oldest state left, emitted as ``+I`` rows (``from_nothing``), as a CDC source's
initial snapshot does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pyiceberg.table.snapshots import Operation, Snapshot

from mixed_iceberg.exceptions import SnapshotExpiredError

__all__ = ["BaseEvent", "Timeline", "changes_view", "plan_timeline"]

#: The summary key of our optimizing commits (optimizing.collect.OPTIMIZING_TYPE), and Amoro's.
_OPTIMIZING_TYPE = "mixed-iceberg.optimizing.type"
_PRODUCER, _OPTIMIZE = "snapshot.producer", "OPTIMIZE"


@dataclass(frozen=True, slots=True)
class BaseEvent:
    """A BaseStore commit that changed the merged view, read after ChangeStore ``sequence``.

    ``before`` is the BaseStore snapshot just before it (None: none), ``after`` the one it made
    (None only for the start of a cut-short history with no BaseStore yet). With
    ``from_nothing`` the view before is the empty table, not ``before``'s."""

    before: Snapshot | None
    after: Snapshot | None
    sequence: int
    from_nothing: bool = False

    def __post_init__(self) -> None:
        if self.sequence < 0:
            raise ValueError(f"a base event follows a ChangeStore sequence >= 0, found {self.sequence}")


@dataclass(frozen=True, slots=True)
class Timeline:
    """A CDC range: the view at the start, the BaseStore events in order, the last sequence."""

    start_sequence: int
    start_base: Snapshot | None
    events: tuple[BaseEvent, ...]
    end_sequence: int

    def __post_init__(self) -> None:
        placed = [self.start_sequence, *(e.sequence for e in self.events), self.end_sequence]
        if any(b < a for a, b in itertools.pairwise(placed)):
            raise ValueError(f"a timeline's sequences must not decrease, found {placed}")


def changes_view(snapshot: Snapshot) -> bool:
    """Whether a BaseStore commit can change the merged view: not a ``replace`` (which by
    Iceberg's spec changes no row) and not an optimizing commit (ours or Amoro's)."""
    summary = snapshot.summary
    if summary is None:
        return True
    if summary.operation == Operation.REPLACE or summary.get(_OPTIMIZING_TYPE):
        return False
    return summary.get(_PRODUCER) != _OPTIMIZE


def _sequence(snapshot: Snapshot | None) -> int:
    return int(snapshot.sequence_number or 0) if snapshot is not None else 0


def _as_of(snapshots: Sequence[Snapshot], timestamp_ms: int) -> Snapshot | None:
    older = [s for s in snapshots if s.timestamp_ms <= timestamp_ms]
    return max(older, key=lambda s: (s.timestamp_ms, s.sequence_number or 0)) if older else None


def _ancestry(snapshots: Mapping[int, Snapshot], end: Snapshot | None, stop: Snapshot | None) -> tuple[list[Snapshot], bool]:
    """``end`` and its ancestors, oldest first, down to ``stop`` (excluded; None: the store's
    first snapshot); and whether the walk reached it (False: a parent is gone, or ``stop`` is
    no ancestor of ``end``). Expiry clears the parent id of the oldest snapshot it keeps, so
    only a snapshot of sequence number 1 is the first."""
    chain: list[Snapshot] = []
    stop_id = stop.snapshot_id if stop is not None else None
    current = end
    while current is not None and current.snapshot_id != stop_id:
        chain.append(current)
        parent = current.parent_snapshot_id
        if parent is None:
            chain.reverse()
            return chain, stop_id is None and _sequence(current) <= 1
        current = snapshots.get(parent)
    chain.reverse()
    return chain, current is not None


@dataclass(frozen=True, slots=True)
class _Placer:
    """Places BaseStore events among the ChangeStore's sequences, never decreasing."""

    change: Sequence[Snapshot]
    optimized_through: Callable[[Snapshot], int]
    low: int
    high: int

    def place(self, snapshot: Snapshot | None, timestamp_ms: int, floor: int) -> int:
        at = _sequence(_as_of(self.change, timestamp_ms))
        if snapshot is not None:
            at = max(at, self.optimized_through(snapshot))
        return min(max(at, floor, self.low), self.high)


def plan_timeline(
    *,
    table: str,
    base: Sequence[Snapshot],
    change: Sequence[Snapshot],
    start: tuple[Snapshot, Snapshot | None] | None,
    end: tuple[Snapshot | None, Snapshot | None],
    removed: Mapping[int, int],
    optimized_through: Callable[[Snapshot], int],
) -> Timeline:
    """The timeline of the range from ``start`` to ``end`` (each a ChangeStore snapshot and the
    BaseStore snapshot read with it; ``start`` None: from the empty table).

    Args:
        table: the table's name, for errors.
        base: the BaseStore's retained snapshots; ``change``: the ChangeStore's.
        removed: ChangeStore snapshot id -> the highest sequence of the change files it removed
            (change-data TTL), for the snapshots that removed any.
        optimized_through: a BaseStore snapshot -> the highest optimized sequence it records.

    Raises:
        SnapshotExpiredError: change files of the range were removed by the change-data TTL.
    """
    end_change, end_base = end
    high = _sequence(end_change)
    by_id = {s.snapshot_id: s for s in base}
    if start is not None:
        start_change, start_base = start
        low = _sequence(start_change)
        for snapshot in change:
            if low < _sequence(snapshot) <= high and removed.get(snapshot.snapshot_id, -1) > low:
                raise SnapshotExpiredError(
                    f"{table}: changes after ChangeStore snapshot {start_change.snapshot_id} need change files that "
                    f"the change-data TTL removed in snapshot {snapshot.snapshot_id} (change.data.ttl.minutes); "
                    "expected them retained: read the state with scan() and changes from a later snapshot"
                )
        placer = _Placer(change, optimized_through, low, high)
        chain, reached = _ancestry(by_id, end_base, start_base)
        if not reached:  # history gone, or another lineage: one event from the start to the end
            events = [BaseEvent(start_base, end_base, placer.place(end_base, _timestamp(end_base), low))]
            return Timeline(low, start_base, tuple(events) if start_base is not end_base else (), high)
        return Timeline(low, start_base, _events(chain, by_id, placer, low), high)
    placer = _Placer(change, optimized_through, 0, high)
    chain, complete = _ancestry(by_id, end_base, None)
    cut = [s.timestamp_ms for s in change if removed.get(s.snapshot_id, -1) >= 0 and _sequence(s) <= high]
    oldest_change = min(change, key=_sequence, default=None)
    if oldest_change is not None and _sequence(oldest_change) > 1:  # expiry took the ChangeStore's first ones
        cut.append(oldest_change.timestamp_ms)
    if not complete and chain:
        cut.append(chain[0].timestamp_ms)
    if not cut:
        return Timeline(0, None, _events(chain, by_id, placer, 0), high)
    moment = max(cut)
    before = [s for s in chain if s.timestamp_ms <= moment]
    origin = before[-1] if before else None
    first = placer.place(origin, moment, 0)
    events = [BaseEvent(None, origin, first, from_nothing=True)]
    after = chain[len(before) :]
    return Timeline(0, None, (*events, *_events(after, by_id, placer, first)), max(high, first))


def _timestamp(snapshot: Snapshot | None) -> int:
    return snapshot.timestamp_ms if snapshot is not None else 0


def _events(chain: Sequence[Snapshot], by_id: Mapping[int, Snapshot], placer: _Placer, floor: int) -> tuple[BaseEvent, ...]:
    events = []
    for snapshot in chain:
        if not changes_view(snapshot):
            continue
        parent = by_id.get(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id is not None else None
        floor = placer.place(snapshot, snapshot.timestamp_ms, floor)
        events.append(BaseEvent(parent, snapshot, floor))
    return tuple(events)
