"""File offsets and file routing of change rows (Amoro's ``ChangeTaskWriter``). Pure.

Every +I, -U and -D takes the next offset; a +U reuses the current one, so a ``-U``/``+U``
pair shares one LSN and the merge keeps the new row (a delete wins only when strictly newer).
Under ``write.upsert.enabled`` every +I is also written as a delete with its own offset, so
it replaces whatever the key held before.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["DELETE", "INSERT", "UPDATE_AFTER", "UPDATE_BEFORE", "assign_offsets", "route_rows"]

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3


def assign_offsets(actions: npt.NDArray[np.int8], start: int) -> npt.NDArray[np.int64]:
    """Offsets for ``actions`` continuing after ``start`` (the writer's last offset)."""
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
