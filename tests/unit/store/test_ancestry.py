"""ancestors walks exactly the parent chain pyiceberg's snapshot_by_id would, short or long,
and ends where the metadata no longer holds a parent; and a long walk stays linear."""

from __future__ import annotations

from pyiceberg.table.snapshots import Operation, Snapshot, Summary

from mixed_iceberg.store.ancestry import ancestors


class _Metadata:
    """The two lookups ancestors makes of TableMetadata, over a list (as pyiceberg keeps them)."""

    def __init__(self, snapshots: list[Snapshot], current: int | None) -> None:
        self.snapshots = snapshots
        self.current = current
        self.by_id_calls = 0

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        self.by_id_calls += 1
        return next((s for s in self.snapshots if s.snapshot_id == snapshot_id), None)

    def current_snapshot(self) -> Snapshot | None:
        return None if self.current is None else self.snapshot_by_id(self.current)


def _snapshot(snapshot_id: int, parent: int | None) -> Snapshot:
    return Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent,
        sequence_number=snapshot_id,
        timestamp_ms=snapshot_id,
        manifest_list=f"m{snapshot_id}",
        summary=Summary(Operation.APPEND),
    )


def _naive(metadata: _Metadata) -> list[int]:
    chain, snapshot = [], metadata.current_snapshot()
    while snapshot is not None:
        chain.append(snapshot.snapshot_id)
        parent = snapshot.parent_snapshot_id
        snapshot = metadata.snapshot_by_id(parent) if parent is not None else None
    return chain


def test_the_chain_of_the_current_snapshot_newest_first_branches_left_out() -> None:
    # 1 <- 2 <- ... <- 30 on main; a branch 100 <- 101 off 5; 3's parent expired (not held).
    snapshots = [_snapshot(i, i - 1 if i > 1 else None) for i in range(4, 31)] + [_snapshot(3, 2)]
    snapshots += [_snapshot(100, 5), _snapshot(101, 100)]
    metadata = _Metadata(snapshots, current=30)
    walked = [s.snapshot_id for s in ancestors(metadata)]  # type: ignore[arg-type]
    assert walked == _naive(metadata) == list(range(30, 2, -1))
    assert [s.snapshot_id for s in ancestors(metadata, metadata.snapshot_by_id(101))] == [101, 100, *range(5, 2, -1)]  # type: ignore[arg-type]
    assert list(ancestors(_Metadata([], current=None))) == []  # type: ignore[arg-type]


def test_a_walk_that_stops_early_looks_up_only_what_it_visits() -> None:
    metadata = _Metadata([_snapshot(i, i - 1 if i > 1 else None) for i in range(1, 2001)], current=2000)
    walk = ancestors(metadata)  # type: ignore[arg-type]
    assert [next(walk).snapshot_id for _ in range(3)] == [2000, 1999, 1998]
    assert metadata.by_id_calls <= 3  # the current snapshot and two parents, no map of 2,000


def test_a_long_walk_is_linear_in_the_history() -> None:
    metadata = _Metadata([_snapshot(i, i - 1 if i > 1 else None) for i in range(1, 5001)], current=5000)
    chain = list(ancestors(metadata))  # type: ignore[arg-type]
    assert len(chain) == 5000
    # A scan of the list per step would be 5,000 lookups (12.5 M comparisons).
    assert metadata.by_id_calls < 20
