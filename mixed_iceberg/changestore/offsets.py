"""File offsets and file routing of change rows (Amoro's ``ChangeTaskWriter``). Pure.

Every +I, -U and -D takes the next offset; a +U reuses the current one, so a ``-U``/``+U``
pair shares one LSN and the merge keeps the new row (at equal LSN a data row wins). A +U is
half of a pair only right after a -U of the same key; any other +U is an insert (Amoro's Flink
writer turns it into +I too), so it takes an offset of its own and is newer than what came
before it. Under ``write.upsert.enabled`` every insert is also written as a delete with its own
offset, so that Amoro's Java reader, which only drops rows a newer delete removes, replaces
whatever the key held before too.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["DELETE", "INSERT", "UPDATE_AFTER", "UPDATE_BEFORE", "assign_offsets", "last_row", "pair_updates", "route_rows"]

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3


def pair_updates(
    actions: npt.NDArray[np.int8], keys: pa.Table, previous: tuple[int, pa.Table] | None = None
) -> npt.NDArray[np.int8]:
    """``actions`` with every +U that does not directly follow a -U of its key turned into +I.

    ``keys`` holds the rows' key columns; ``previous`` is the action and key row (one-row
    table) that came right before the first row (the transaction's previous batch), if any.
    """
    if len(actions) == 0:
        return actions
    after = np.flatnonzero(actions == UPDATE_AFTER)
    if len(after) == 0:
        return actions
    before_action = np.concatenate([[previous[0] if previous else -1], actions[:-1]]).astype(np.int8)
    same_key = np.ones(len(actions), dtype=bool)
    for name in keys.column_names:
        column = keys.column(name)
        if previous is not None:
            column = pa.chunked_array([*previous[1].column(name).cast(column.type).chunks, *column.chunks], type=column.type)
            shifted = column.slice(0, len(actions))
            current = column.slice(1)
        else:
            shifted = column.slice(0, len(actions) - 1)
            current = column.slice(1)
        equal = pc.fill_null(pc.equal(current, shifted), False).to_numpy(zero_copy_only=False)
        same_key &= equal if previous is not None else np.concatenate([[False], equal])
    unpaired = after[~((before_action[after] == UPDATE_BEFORE) & same_key[after])]
    if len(unpaired) == 0:
        return actions
    normalized = actions.copy()
    normalized[unpaired] = INSERT
    return normalized


def assign_offsets(actions: npt.NDArray[np.int8], start: int) -> npt.NDArray[np.int64]:
    """Offsets for ``actions`` (paired by :func:`pair_updates`) continuing after ``start``."""
    steps = (actions != UPDATE_AFTER).astype(np.int64)
    offsets: npt.NDArray[np.int64] = start + np.cumsum(steps)
    return offsets


def route_rows(actions: npt.NDArray[np.int8], *, upsert: bool) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Masks of the rows that go to ``I`` files and to ``ED`` files (a row may go to both)."""
    is_insert = (actions == INSERT) | (actions == UPDATE_AFTER)
    is_delete = (actions == UPDATE_BEFORE) | (actions == DELETE)
    if upsert:
        is_delete = is_delete | (actions == INSERT)
    return is_insert, is_delete


def last_row(actions: npt.NDArray[np.int8], keys: pa.Table) -> tuple[int, pa.Table]:
    """The ``previous`` argument of :func:`pair_updates` for the batch after this one."""
    return int(actions[-1]), keys.slice(keys.num_rows - 1, 1)
