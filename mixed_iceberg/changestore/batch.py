"""Validate a batch of change rows and turn it into typed columns. Pure: no I/O.

A change batch is an Arrow table with the table's columns plus ``_change_action``
(``+I``, ``-U``, ``+U``, ``-D``). Validation happens before anything is written, so a
bad batch leaves the table untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from mixed_iceberg.exceptions import InvalidChangeActionError, MissingKeyError, SchemaMismatchError
from mixed_iceberg.schema import conform
from mixed_iceberg.typedef import ACTION_NAMES, action_codes

__all__ = ["ACTION_COLUMN", "ChangeRows", "normalize_changes"]

ACTION_COLUMN = "_change_action"


@dataclass(frozen=True, slots=True)
class ChangeRows:
    """Validated change rows: ``data`` in the table's Arrow schema and one action code per row."""

    data: pa.Table
    actions: npt.NDArray[np.int8]

    def __post_init__(self) -> None:
        if len(self.actions) != self.data.num_rows:
            raise ValueError(f"expected one action per row ({self.data.num_rows}), found {len(self.actions)}")

    @property
    def num_rows(self) -> int:
        return int(self.data.num_rows)


def _action_codes(column: pa.ChunkedArray, table_name: str) -> npt.NDArray[np.int8]:
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        raise InvalidChangeActionError(f"{table_name}: column {ACTION_COLUMN!r} must be a string column, found {column.type}")
    codes = action_codes(column)
    bad = codes < 0
    if bad.any():
        bad_mask = pa.array(bad)
        first_row = int(np.flatnonzero(bad)[0])
        bad_values = pc.unique(pc.filter(column, bad_mask)).to_pylist()[:5]
        raise InvalidChangeActionError(
            f"{table_name}: {ACTION_COLUMN} expected one of {list(ACTION_NAMES)}, found {bad_values} "
            f"in {int(bad.sum())} row(s), first at row {first_row}"
        )
    return codes


def normalize_changes(
    changes: pa.Table | pa.RecordBatch,
    target: pa.Schema,
    primary_key: Sequence[str],
    *,
    table_name: str,
) -> ChangeRows:
    """Check actions, keys and columns of ``changes``; cast them to ``target``.

    Raises:
        InvalidChangeActionError: the action column is missing or holds unknown values.
        MissingKeyError: a key column is missing or null.
        SchemaMismatchError: other columns are missing, extra, or of an incompatible type.
    """
    if isinstance(changes, pa.RecordBatch):
        changes = pa.Table.from_batches([changes])
    if not isinstance(changes, pa.Table):
        raise SchemaMismatchError(
            f"{table_name}: expected a pyarrow Table or RecordBatch of changes, found {type(changes).__name__}"
        )
    if ACTION_COLUMN not in changes.column_names:
        raise InvalidChangeActionError(
            f"{table_name}: expected a {ACTION_COLUMN!r} column with +I/-U/+U/-D, found columns {changes.column_names}"
        )
    actions = _action_codes(changes.column(ACTION_COLUMN), table_name)
    data = changes.drop_columns([ACTION_COLUMN])
    for key in primary_key:
        if key not in data.column_names:
            raise MissingKeyError(f"{table_name}: primary key column {key!r} is missing; found columns {data.column_names}")
        nulls = data.column(key).null_count
        if nulls:
            first_row = int(pc.index(pc.is_null(data.column(key)), True).as_py())
            raise MissingKeyError(
                f"{table_name}: primary key column {key!r} expected non-null, found {nulls} null(s), first at row {first_row}"
            )
    return ChangeRows(conform(data, target, table_name=table_name), actions)
