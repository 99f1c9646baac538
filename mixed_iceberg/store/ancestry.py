"""A snapshot's ancestry, newest first, in time linear in the table's history. Pure.

pyiceberg's ``TableMetadata.snapshot_by_id`` scans the snapshot list, so a walk of the parents
through it costs the history's length squared: the optimizer's plan, looking for the last full
optimizing of a table that never had one, walked 4,000 snapshots (half a day of commits every
ten seconds) in about 8 million comparisons. Here the first few steps go through
``snapshot_by_id`` (most walks stop at the parent or the one before it), and a longer walk
looks its parents up in a map of the snapshots built once.
"""

from __future__ import annotations

from collections.abc import Iterator

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot

__all__ = ["ancestors"]

#: Parent steps taken through ``snapshot_by_id`` before the walk builds its map.
_SHORT_WALK = 8


def ancestors(metadata: TableMetadata, snapshot: Snapshot | None = None) -> Iterator[Snapshot]:
    """``snapshot`` (default: the current one) and its ancestors, newest first, as far as the
    metadata holds them (an expired parent ends the walk)."""
    current = metadata.current_snapshot() if snapshot is None else snapshot
    by_id: dict[int, Snapshot] | None = None
    steps = 0
    while current is not None:
        yield current
        parent = current.parent_snapshot_id
        if parent is None:
            return
        steps += 1
        if steps <= _SHORT_WALK:
            current = metadata.snapshot_by_id(parent)
            continue
        if by_id is None:
            by_id = {s.snapshot_id: s for s in metadata.snapshots}
        current = by_id.get(parent)
