"""CDC reads of a keyed table: ``table.changes(from_snapshot, to_snapshot).to_arrow()``.

Change files do not store the action (``I`` files hold +I and +U rows, ``ED`` files -D and -U
rows, and under upsert a copy of every +I), and a writer need not send before-images. So the
actions are derived from the table's states: each change row is applied, in LSN order, to its
key's state, starting from the state as of ``from_snapshot`` (a merged read of the touched
keys). A data row on an absent key is ``+I``; on a present key it is ``-U`` (the state before,
the true before-image) then ``+U``; a delete of a present key is ``-D`` with the state before;
a delete of an absent key emits nothing. A delete that shares its LSN with a data row of its
key (the ``-U`` of an update pair, an upsert's delete) is that update's half, not a change of
its own. Rows come out in LSN order, ``-U`` before its ``+U``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from pyiceberg.expressions import AlwaysTrue, BooleanExpression, In, Reference
from pyiceberg.expressions.visitors import bind
from pyiceberg.io.pyarrow import expression_to_pyarrow
from pyiceberg.table.snapshots import Snapshot

from mixed_iceberg.exceptions import InvalidScanError, NoSuchSnapshotError, NotKeyedTableError
from mixed_iceberg.reader.engines import scan_states
from mixed_iceberg.reader.filters import split_filter
from mixed_iceberg.reader.merge import LSN, KeyIndex, key_codes
from mixed_iceberg.reader.merge_options import MergeConfig
from mixed_iceberg.reader.plan import PartitionIndex, plan_change_files
from mixed_iceberg.reader.read import read_change_rows
from mixed_iceberg.reader.scan import MixedScan
from mixed_iceberg.schema import top_level_names
from mixed_iceberg.store.manifests.live_files import live_files

if TYPE_CHECKING:
    from mixed_iceberg.handle import TableHandle

__all__ = ["ChangeScan", "derive_actions"]

ACTION = "_change_action"
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
    in_order = np.lexsort((rank, out_lsn))
    out = scanned.states.take(pa.array(take[in_order]))
    out = out.append_column(ACTION, pa.array(labels[in_order], pa.string()))
    out_lsn = out_lsn[in_order]
    return out.append_column("_transaction_id", pa.array(out_lsn >> 32)).append_column(
        "_file_offset", pa.array(out_lsn & 0xFFFFFFFF)
    )


def _equal_rows(states: pa.Table, left: npt.NDArray[np.int64], right: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Whether the states at ``left`` and ``right`` are equal in every column (nulls equal)."""
    same = np.ones(len(left), dtype=bool)
    if len(left) == 0:
        return same
    a = states.take(pa.array(np.maximum(left, 0)))
    b = states.take(pa.array(np.maximum(right, 0)))
    for name in states.column_names:
        x, y = a.column(name), b.column(name)
        equal = pc.or_kleene(pc.equal(x, y), pc.and_(pc.is_null(x), pc.is_null(y)))
        same &= np.asarray(pc.fill_null(equal, False).to_numpy(zero_copy_only=False), dtype=bool)
    return same


def _empty(changes: pa.Table, columns: list[str]) -> pa.Table:
    out = changes.select(columns).slice(0, 0).append_column(ACTION, pa.array([], pa.string()))
    return out.append_column("_transaction_id", pa.array([], pa.int64())).append_column("_file_offset", pa.array([], pa.int64()))


class ChangeScan:
    """Change rows committed after ``from_snapshot`` up to and including ``to_snapshot``.

    ``row_filter`` keeps the CDC rows whose image matches it (a ``-U`` and its ``+U`` are
    judged apart: an update out of the filter's range shows as its ``-U`` alone); its key-only
    conjuncts are pushed down to the files, value predicates apply to the derived rows.
    ``selected_fields`` projects the table's columns; the CDC columns always come.
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
        names = top_level_names(table.schema())
        unknown = [f for f in selected_fields if f != "*" and f not in names]
        if unknown:
            raise InvalidScanError(f"{table.name}: selected fields {unknown} are not columns; expected some of {names}")
        self.columns = names if tuple(selected_fields) == ("*",) else [n for n in names if n in selected_fields]
        meta = change.metadata
        self._start = meta.snapshot_by_id(from_snapshot) if from_snapshot else None
        self.from_sequence = self._sequence(self._start, from_snapshot, 0)
        end = meta.snapshot_by_id(to_snapshot) if to_snapshot else change.current_snapshot()
        self._end = end
        self.to_sequence = self._sequence(end, to_snapshot, 0)

    def _sequence(self, snapshot: Snapshot | None, wanted: int | None, default: int) -> int:
        if wanted is not None and snapshot is None:
            raise NoSuchSnapshotError(f"{self.table.name}: ChangeStore has no snapshot {wanted}")
        return int(getattr(snapshot, "sequence_number", default) or default)

    def to_arrow(self) -> pa.Table:
        """Table columns plus ``_change_action``, ``_transaction_id`` and ``_file_offset``."""
        table = self.table
        change = table.change_store
        assert change is not None
        schema = table.schema()
        keys = list(table.primary_key)
        refs = plan_change_files(
            change,
            live_files(change, self._end),
            PartitionIndex(),
            {},
            from_sequence=self.from_sequence,
            to_sequence=self.to_sequence,
        )
        columns = top_level_names(schema)
        history = change.metadata.schemas
        keyed = self.filter.keys
        inserts = read_change_rows(change.io, schema, [r for r in refs if not r.is_delete], columns, keyed, schemas=history)
        deletes = read_change_rows(change.io, schema, [r for r in refs if r.is_delete], columns, keyed, schemas=history)
        rows = pa.concat_tables([inserts, deletes.select(inserts.column_names)])
        is_data = np.concatenate([np.ones(inserts.num_rows, bool), np.zeros(deletes.num_rows, bool)])
        before = self._states_before(rows, keys) if rows.num_rows else table.arrow_schema().empty_table()
        derived = derive_actions(table.merge_config, rows, is_data, before, keys)
        if not isinstance(self.filter.full, AlwaysTrue) and derived.num_rows:
            bound = bind(schema, self.filter.full, case_sensitive=self.case_sensitive)
            match = ds.dataset(derived).to_table(columns={"m": expression_to_pyarrow(bound, schema)}).column("m")
            derived = derived.filter(pc.fill_null(match, False))
        return derived.select([*self.columns, ACTION, "_transaction_id", "_file_offset"])

    def _states_before(self, rows: pa.Table, keys: list[str]) -> pa.Table:
        """The merged state, as of the start of the range, of the keys ``rows`` touch."""
        row_filter: BooleanExpression = AlwaysTrue()
        if len(keys) == 1:
            touched = rows.column(keys[0]).unique()
            if len(touched) <= _PUSHED_KEYS:
                row_filter = In(Reference(keys[0]), touched.to_pylist())  # type: ignore[call-arg]
        scan = MixedScan.at(self.table, self._start, row_filter=row_filter, before_first=self._first_change())
        state = scan.to_arrow()
        touched = KeyIndex([rows.column(k) for k in keys]).lookup([state.column(k) for k in keys]) >= 0
        return state.filter(pa.array(touched))

    def _first_change(self) -> Snapshot | None:
        """The first ChangeStore snapshot of the range, when it starts at the beginning."""
        if self._start is not None:
            return None
        change = self.table.change_store
        assert change is not None
        snapshots = [s for s in change.metadata.snapshots if (s.sequence_number or 0) <= self.to_sequence]
        return min(snapshots, key=lambda s: s.sequence_number or 0) if snapshots else None
