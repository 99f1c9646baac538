"""CDC rows between two states of a keyed table (one row per key each). Pure: no I/O.

A BaseStore event (a ``bulk_load(overwrite=True)``, another engine's write) changes the merged
view at once, without change rows to derive actions from; ``changes()`` emits it as the
difference of the views just before and after: ``-D`` for a key only before, ``+I`` for a key
only after, ``-U`` then ``+U`` for a key whose row changed, nothing for an unchanged row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from mixed_iceberg.merge.latest import KeyIndex

__all__ = ["ACTION", "diff_states", "with_actions"]

ACTION = "_change_action"

#: Whether two equally long tables hold equal rows, row by row.
RowsEqual = Callable[[pa.Table, pa.Table], npt.NDArray[np.bool_]]


def with_actions(rows: pa.Table, actions: Sequence[str] | npt.NDArray[np.str_], transaction_id: int) -> pa.Table:
    """``rows`` with the CDC columns: ``actions``, ``transaction_id`` for every row, and no file
    offset (the rows of a BaseStore event come from no change file)."""
    n = rows.num_rows
    rows = rows.append_column(ACTION, pa.array(np.asarray(actions, dtype=object) if n else [], pa.string()))
    rows = rows.append_column("_transaction_id", pa.array(np.full(n, transaction_id, np.int64)))
    return rows.append_column("_file_offset", pa.nulls(n, pa.int64()))


def diff_states(before: pa.Table, after: pa.Table, keys: Sequence[str], equal: RowsEqual, transaction_id: int) -> pa.Table:
    """The CDC rows that turn ``before`` into ``after`` (same columns, one row per key each):
    ``-D`` rows first, then each ``-U`` followed by its ``+U``, then ``+I`` rows."""
    after = after.select(before.column_names)
    if before.num_rows == 0 or after.num_rows == 0:
        gone, new = (before, after.slice(0, 0)) if after.num_rows == 0 else (before.slice(0, 0), after)
        return pa.concat_tables(
            [with_actions(gone, ["-D"] * gone.num_rows, transaction_id), with_actions(new, ["+I"] * new.num_rows, transaction_id)]
        )
    index = KeyIndex([before.column(k) for k in keys])
    row_of_code = np.empty(index.groups, np.int64)
    row_of_code[index.codes] = np.arange(before.num_rows, dtype=np.int64)
    found = index.lookup([after.column(k) for k in keys])
    matched = found >= 0
    before_rows = row_of_code[found[matched]]
    after_rows = np.flatnonzero(matched)
    kept = np.zeros(before.num_rows, dtype=bool)
    kept[before_rows] = True
    old, new = before.take(pa.array(before_rows)), after.take(pa.array(after_rows))
    changed = ~equal(old, new)
    pairs = pa.concat_tables([old.filter(pa.array(changed)), new.filter(pa.array(changed))])
    m = int(changed.sum())
    interleaved = pairs.take(pa.array(np.stack([np.arange(m), np.arange(m) + m], axis=1).reshape(-1)))
    parts = [
        with_actions(before.filter(pa.array(~kept)), ["-D"] * int((~kept).sum()), transaction_id),
        with_actions(interleaved, np.tile(np.array(["-U", "+U"], dtype=object), m), transaction_id),
        with_actions(after.filter(pa.array(~matched)), ["+I"] * int((~matched).sum()), transaction_id),
    ]
    return pa.concat_tables(parts)
