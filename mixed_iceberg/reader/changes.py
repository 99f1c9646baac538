"""CDC reads of a keyed table: ``table.changes(from_snapshot, to_snapshot).to_arrow()``.

Change files do not store the action (``I`` files hold +I and +U rows, ``ED`` files -D and -U
rows, and under upsert a copy of every +I), and a writer need not send before-images. So the
actions are derived from the table's states: each change row is applied, in LSN order, to its
key's state, starting from the state before it (a merged read of the touched keys). A data row
on an absent key is ``+I``; on a present key it is ``-U`` (the state before, the true
before-image) then ``+U``; a delete of a present key is ``-D`` with the state before; a delete
of an absent key emits nothing. A delete that shares its LSN with a data row of its key (the
``-U`` of an update pair, an upsert's delete) is that update's half, not a change of its own.

The BaseStore changes the merged view too (``bulk_load``, another engine's writes): the range
is cut at each such commit (:mod:`mixed_iceberg.reader.change_timeline`), which is emitted as
the difference of the view before and after it (:mod:`mixed_iceberg.reader.state_diff`), and
the change rows after it are derived from the view it left.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from pyiceberg.expressions import AlwaysTrue, And, BooleanExpression, In, Reference
from pyiceberg.expressions.visitors import bind
from pyiceberg.table.snapshots import Snapshot

from mixed_iceberg._pyiceberg.arrow_filters import arrow_filter
from mixed_iceberg.arrow_types import empty_table
from mixed_iceberg.basestore.optimized_sequence import read_optimized_sequence
from mixed_iceberg.config.merge import MergeConfig
from mixed_iceberg.exceptions import InvalidScanError, NoSuchSnapshotError, NotKeyedTableError, SnapshotExpiredError
from mixed_iceberg.merge.engines import scan_states
from mixed_iceberg.merge.equality import equal_rows
from mixed_iceberg.merge.latest import LSN, KeyIndex, key_codes
from mixed_iceberg.reader.change_timeline import Timeline, plan_timeline
from mixed_iceberg.reader.filters import split_filter
from mixed_iceberg.reader.plan import PartitionIndex, plan_change_files
from mixed_iceberg.reader.read import read_change_rows
from mixed_iceberg.reader.scan import MixedScan
from mixed_iceberg.reader.state_diff import ACTION, diff_states, with_actions
from mixed_iceberg.schema import selected_columns, top_level_names
from mixed_iceberg.store.manifests.live_files import live_files
from mixed_iceberg.store.manifests.removed import removed_files, removed_sequence

if TYPE_CHECKING:
    from mixed_iceberg.handle import TableHandle

__all__ = ["ChangeScan", "derive_actions"]

_ORDER = "__order"
#: Below this many touched keys the as-of read of their states pushes an IN predicate down.
_PUSHED_KEYS = 1000


def derive_actions(
    config: MergeConfig, changes: pa.Table, is_data: npt.NDArray[np.bool_], before: pa.Table, keys: list[str]
) -> pa.Table:
    """CDC rows (``_change_action``, in LSN order) from change rows and the states before them. Pure.

    ``changes`` holds the table's columns plus ``LSN``; ``before`` holds the table's columns of
    the touched keys' states before the first change (a key absent from it did not exist). A
    row's effect is the change of its key's merged state under ``config``'s engine (a first-row
    key ignores later inserts, a partial update shows the merged row). Under a merge engine a
    row that leaves the state as it was emits nothing (a late row that ``sequence.field`` ranks
    below the key's row, say); under plain deduplication every data row is an update.
    """
    columns = [c for c in changes.column_names if c != LSN]
    if changes.num_rows == 0:
        return _empty(changes, columns)
    n_before = before.num_rows
    rows = pa.concat_tables([before.select(columns), changes.select(columns)], promote_options="permissive")
    codes, _ = key_codes([rows.column(k) for k in keys])
    lsn = np.concatenate([np.zeros(n_before, np.int64), changes.column(LSN).to_numpy()])
    data = np.concatenate([np.ones(n_before, bool), is_data])
    is_base = np.concatenate([np.ones(n_before, bool), np.zeros(changes.num_rows, bool)])
    scanned = scan_states(config, rows, keys, codes, lsn, data, is_base)
    n = len(scanned.order)
    first = np.ones(n, dtype=bool)
    first[1:] = scanned.codes[1:] != scanned.codes[:-1]
    base_at = is_base[scanned.order]
    step = np.flatnonzero(~base_at)
    prev_at = step - 1
    prev_exists = ~first[step] & scanned.exists[np.maximum(prev_at, 0)]
    cur_at, cur_exists = step, scanned.exists[step]
    row_lsn = lsn[scanned.order][step]
    same = _equal_rows(scanned.states, prev_at, cur_at) if not config.is_default else np.zeros(len(step), dtype=bool)
    parts = [
        (prev_at, prev_exists & cur_exists & ~same, "-U", 0),
        (cur_at, prev_exists & cur_exists & ~same, "+U", 1),
        (cur_at, ~prev_exists & cur_exists, "+I", 1),
        (prev_at, prev_exists & ~cur_exists, "-D", 0),
    ]
    take = np.concatenate([at[mask] for at, mask, _, _ in parts])
    out_lsn = np.concatenate([row_lsn[mask] for _, mask, _, _ in parts])
    rank = np.concatenate([np.full(int(mask.sum()), r, np.int8) for _, mask, _, r in parts])
    labels = np.concatenate([np.full(int(mask.sum()), label) for _, mask, label, _ in parts])
    # Steps of one LSN (an update pair's -U and +U, each a change under a merge engine that
    # retracts) keep their order, and each step's -U stays right before its +U.
    position = np.concatenate([step[mask] for _, mask, _, _ in parts])
    in_order = np.lexsort((rank, position, out_lsn))
    out = scanned.states.take(pa.array(take[in_order]))
    out = out.append_column(ACTION, pa.array(labels[in_order], pa.string()))
    out_lsn = out_lsn[in_order]
    return out.append_column("_transaction_id", pa.array(out_lsn >> 32)).append_column(
        "_file_offset", pa.array(out_lsn & 0xFFFFFFFF)
    )


def _equal_rows(states: pa.Table, left: npt.NDArray[np.int64], right: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Whether the states at ``left`` and ``right`` are equal in every column (nulls equal,
    nested columns too: :mod:`mixed_iceberg.merge.equality`)."""
    return equal_rows(states, states, np.maximum(left, 0), np.maximum(right, 0))


def _empty(changes: pa.Table, columns: list[str]) -> pa.Table:
    out = changes.select(columns).slice(0, 0).append_column(ACTION, pa.array([], pa.string()))
    return out.append_column("_transaction_id", pa.array([], pa.int64())).append_column("_file_offset", pa.array([], pa.int64()))


def _rows_equal(left: pa.Table, right: pa.Table) -> npt.NDArray[np.bool_]:
    """Whether ``left`` and ``right`` (equally long, the same columns) are equal row by row."""
    positions = np.arange(left.num_rows, dtype=np.int64)
    return equal_rows(left, right, positions, positions)


class ChangeScan:
    """Change rows committed after ``from_snapshot`` up to and including ``to_snapshot``.

    Every change of the merged view in the range is there: the ChangeStore's change rows, and
    the BaseStore commits that change the view (``bulk_load`` into an empty table or with
    ``overwrite``, another engine's writes), emitted where they happened as the difference of
    the view before and after them (:mod:`mixed_iceberg.reader.change_timeline`). Without
    ``from_snapshot`` the range starts from the empty table: replaying ``changes(a, b)`` onto
    ``scan(snapshot_id=a)`` (onto nothing without ``a``) gives ``scan(snapshot_id=b)``.

    ``row_filter`` keeps the CDC rows whose image matches it (a ``-U`` and its ``+U`` are
    judged apart: an update out of the filter's range shows as its ``-U`` alone); its key-only
    conjuncts are pushed down to the files, value predicates apply to the derived rows.
    ``selected_fields`` projects the table's columns; the CDC columns always come.

    Raises:
        NoSuchSnapshotError: the ChangeStore has no snapshot ``from_snapshot`` or ``to_snapshot``.
        InvalidScanError: ``from_snapshot`` comes after ``to_snapshot``.
        SnapshotExpiredError: (on read) the range needs history that expiry or the change-data
            TTL removed.
    """

    def __init__(
        self,
        table: TableHandle,
        *,
        from_snapshot: int | None = None,
        to_snapshot: int | None = None,
        row_filter: str | BooleanExpression | None = None,
        selected_fields: Sequence[str] = ("*",),
        case_sensitive: bool = True,
    ) -> None:
        change = table.change_store
        if change is None:
            raise NotKeyedTableError(f"{table.name}: changes() needs a keyed table with a ChangeStore; this table has none")
        self.table = table
        self.filter = split_filter(row_filter, table.schema(), table.primary_key, case_sensitive, table=table.name)
        self.case_sensitive = case_sensitive
        self.columns = selected_columns(table.schema(), selected_fields, case_sensitive=case_sensitive, table=table.name)
        meta = change.metadata
        self._start = self._snapshot(meta.snapshot_by_id(from_snapshot) if from_snapshot is not None else None, from_snapshot)
        self._end = self._snapshot(
            meta.snapshot_by_id(to_snapshot) if to_snapshot is not None else change.current_snapshot(), to_snapshot
        )
        if self._start is not None and self._end is not None and _sequence(self._start) > _sequence(self._end):
            raise InvalidScanError(
                f"{table.name}: changes from ChangeStore snapshot {from_snapshot} to {to_snapshot}: expected from_snapshot "
                f"at or before to_snapshot, found it after (sequence {_sequence(self._start)} > {_sequence(self._end)})"
            )
        self.from_sequence = _sequence(self._start)
        self.to_sequence = _sequence(self._end)
        # The BaseStore snapshots read with the range's ends, paired as scan(snapshot_id=...) pairs them.
        self._start_base = MixedScan(table, snapshot_id=from_snapshot).base_snapshot if from_snapshot is not None else None
        self._end_base = (
            MixedScan(table, snapshot_id=to_snapshot).base_snapshot
            if to_snapshot is not None
            else table.base_store.current_snapshot()
        )

    def _snapshot(self, snapshot: Snapshot | None, wanted: int | None) -> Snapshot | None:
        if wanted is not None and snapshot is None:
            raise NoSuchSnapshotError(f"{self.table.name}: ChangeStore has no snapshot {wanted}")
        return snapshot

    def timeline(self) -> Timeline:
        """Where the range is cut by the BaseStore commits that change the merged view.

        Raises:
            SnapshotExpiredError: the change-data TTL removed change files of the range.
        """
        change, base = self.table.change_store, self.table.base_store
        assert change is not None
        low = self.from_sequence if self._start is not None else -1
        removed = {
            s.snapshot_id: removed_sequence(change, s)
            for s in change.metadata.snapshots
            if low < _sequence(s) <= self.to_sequence and removed_files(s)
        }
        return plan_timeline(
            table=self.table.name,
            base=base.metadata.snapshots,
            change=change.metadata.snapshots,
            start=(self._start, self._start_base) if self._start is not None else None,
            end=(self._end, self._end_base),
            removed={k: v for k, v in removed.items() if v >= 0},
            optimized_through=lambda snapshot: max(read_optimized_sequence(base, snapshot).values(), default=-1),
        )

    def to_arrow(self) -> pa.Table:
        """Table columns plus ``_change_action``, ``_transaction_id`` and ``_file_offset``, in
        the order the changes happened (``-U`` right before its ``+U``). The rows of a BaseStore
        event carry the ChangeStore sequence they follow as ``_transaction_id`` and no
        ``_file_offset``.

        Raises:
            SnapshotExpiredError: the range needs files that expiry or the change-data TTL removed.
        """
        try:
            rows = self._rows()
        except FileNotFoundError as exc:  # MissingFileError too: a file of the range was deleted
            raise SnapshotExpiredError(
                f"{self.table.name}: changes from ChangeStore snapshot {getattr(self._start, 'snapshot_id', None)} "
                f"to {getattr(self._end, 'snapshot_id', None)} need a file that maintenance deleted: {exc}"
            ) from exc
        if not isinstance(self.filter.full, AlwaysTrue) and rows.num_rows:
            schema = self.table.schema()
            bound = bind(schema, self.filter.full, case_sensitive=self.case_sensitive)
            match = ds.dataset(rows).to_table(columns={"m": arrow_filter(bound, schema)}).column("m")
            rows = rows.filter(pc.fill_null(match, False))
        return rows.select([*self.columns, ACTION, "_transaction_id", "_file_offset"])

    def _rows(self) -> pa.Table:
        timeline = self.timeline()
        keys = list(self.table.primary_key)
        parts: list[pa.Table] = []
        cursor, base = timeline.start_sequence, timeline.start_base
        for event in timeline.events:
            if event.from_nothing:  # the history before is gone: the state then, as inserts
                cursor, base = event.sequence, event.after
                state = self._view(cursor, base)
                parts.append(with_actions(state, ["+I"] * state.num_rows, cursor))
                continue
            if event.sequence > cursor:
                parts.append(self._derived(cursor, event.sequence, base))
                cursor = event.sequence
            before, after = self._view(cursor, event.before), self._view(cursor, event.after)
            parts.append(diff_states(before, after, keys, _rows_equal, cursor))
            base = event.after
        if timeline.end_sequence > cursor or not parts:
            parts.append(self._derived(cursor, timeline.end_sequence, base))
        return pa.concat_tables(parts, promote_options="permissive")

    def _change_at(self, sequence: int) -> Snapshot | None:
        """The ChangeStore snapshot of ``sequence`` (None for 0); the range's last one where
        expiry removed it (its live files, capped at ``sequence``, are then read)."""
        if sequence <= 0:
            return None
        change = self.table.change_store
        assert change is not None
        exact = [s for s in change.metadata.snapshots if _sequence(s) == sequence]
        return exact[0] if exact else self._end

    def _view(self, sequence: int, base: Snapshot | None, row_filter: BooleanExpression | None = None) -> pa.Table:
        """The merged view of ``base`` and the change rows up to ``sequence`` (of the keys the
        key predicates admit, and ``row_filter``'s)."""
        keyed = self.filter.keys if row_filter is None else And(self.filter.keys, row_filter)
        scan = MixedScan(self.table, row_filter=keyed, snapshots=(self._change_at(sequence), base), change_to_sequence=sequence)
        return scan.to_arrow()

    def _derived(self, low: int, high: int, base: Snapshot | None) -> pa.Table:
        """The CDC rows of the change rows in (``low``, ``high``] applied to the view (``low``, ``base``)."""
        table = self.table
        change = table.change_store
        assert change is not None
        schema = table.schema()
        keys = list(table.primary_key)
        end = self._change_at(high)
        refs = plan_change_files(
            change,
            live_files(change, end) if end is not None else [],
            PartitionIndex(),
            read_optimized_sequence(table.base_store, base),
            from_sequence=low,
            to_sequence=high,
        )
        columns = top_level_names(schema)
        history = change.metadata.schemas
        keyed = self.filter.keys
        inserts = read_change_rows(change.io, schema, [r for r in refs if not r.is_delete], columns, keyed, schemas=history)
        deletes = read_change_rows(change.io, schema, [r for r in refs if r.is_delete], columns, keyed, schemas=history)
        rows = pa.concat_tables([inserts, deletes.select(inserts.column_names)])
        is_data = np.concatenate([np.ones(inserts.num_rows, bool), np.zeros(deletes.num_rows, bool)])
        before = self._states_before(rows, keys, low, base) if rows.num_rows else empty_table(table.arrow_schema())
        return derive_actions(table.merge_config, rows, is_data, before, keys)

    def _states_before(self, rows: pa.Table, keys: list[str], sequence: int, base: Snapshot | None) -> pa.Table:
        """The view (``sequence``, ``base``) of the keys ``rows`` touch."""
        row_filter: BooleanExpression | None = None
        if len(keys) == 1:
            touched = rows.column(keys[0]).unique()
            if len(touched) <= _PUSHED_KEYS:
                row_filter = In(Reference(keys[0]), touched.to_pylist())  # type: ignore[call-arg]
        state = self._view(sequence, base, row_filter)
        touched = KeyIndex([rows.column(k) for k in keys]).lookup([state.column(k) for k in keys]) >= 0
        return state.filter(pa.array(touched))


def _sequence(snapshot: Snapshot | None) -> int:
    return int(snapshot.sequence_number or 0) if snapshot is not None else 0
