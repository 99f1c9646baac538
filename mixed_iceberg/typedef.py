"""Enums and small value types shared by every layer.

Kinds are enums, never strings or magic numbers; absent values are ``None``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from mixed_iceberg.format.kinds import DataFileType, TableStore

__all__ = [
    "ACTION_NAMES",
    "ChangeAction",
    "Clock",
    "CommitId",
    "DataFileType",
    "TableFormat",
    "TableStore",
    "action_codes",
    "action_names",
]


#: Returns the current time in epoch seconds (``time.time``); injected by tests.
Clock = Callable[[], float]


class ChangeAction(enum.Enum):
    """The kind of one change row, with Amoro's byte ids (``ChangeAction.java``)."""

    INSERT = "+I"
    UPDATE_BEFORE = "-U"
    UPDATE_AFTER = "+U"
    DELETE = "-D"

    @property
    def byte_id(self) -> int:
        """Amoro's wire id: INSERT=0, UPDATE_BEFORE=1, UPDATE_AFTER=2, DELETE=3."""
        return _ACTION_BYTE[self]

    @property
    def is_delete(self) -> bool:
        """-U and -D rows go to ``ED`` files; +I and +U rows to ``I`` files."""
        return self in (ChangeAction.UPDATE_BEFORE, ChangeAction.DELETE)

    @classmethod
    def from_byte(cls, value: int) -> ChangeAction:
        """The action for an Amoro byte id."""
        for action, byte in _ACTION_BYTE.items():
            if byte == value:
                return action
        raise ValueError(f"change action byte must be 0..3, found {value}")


_ACTION_BYTE = {
    ChangeAction.INSERT: 0,
    ChangeAction.UPDATE_BEFORE: 1,
    ChangeAction.UPDATE_AFTER: 2,
    ChangeAction.DELETE: 3,
}

#: The action strings by Amoro's byte id (``ACTION_NAMES[code]``): the change writer, the reader,
#: the CDC parser and the LogStore format all take names and codes from here.
ACTION_NAMES: tuple[str, ...] = tuple(a.value for a in sorted(ChangeAction, key=lambda a: _ACTION_BYTE[a]))
_NAME_ARRAY = pa.array(ACTION_NAMES, pa.string())


def action_codes(names: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.int8]:
    """Each name's byte id, -1 where ``names`` holds something else (or null). Vectorized."""
    value_set = _NAME_ARRAY if names.type == pa.string() else _NAME_ARRAY.cast(names.type)
    index = pc.fill_null(pc.index_in(names, value_set=value_set), -1)
    return np.asarray(index.to_numpy(zero_copy_only=False), dtype=np.int8)


def action_names(codes: npt.NDArray[np.integer[Any]]) -> pa.Array:
    """The names of byte ids ``codes`` (0..3), as a string array."""
    taken: pa.Array = pc.take(_NAME_ARRAY, pa.array(np.asarray(codes, np.int32)))
    return taken


class TableFormat(enum.Enum):
    """What a catalog entry is: a Mixed-Iceberg table or a plain Iceberg table."""

    MIXED_ICEBERG = "MIXED_ICEBERG"
    ICEBERG = "ICEBERG"


@dataclass(frozen=True, slots=True)
class CommitId:
    """Idempotency id of a commit: a writer id and a sequence that grows per writer.

    A commit whose sequence is at or below the last one recorded for the same writer
    is a no-op (a Flink checkpoint id is a natural sequence).
    """

    writer: str
    sequence: int

    def __post_init__(self) -> None:
        if not self.writer or ":" in self.writer:
            raise ValueError(f"commit writer id must be non-empty without ':', found {self.writer!r}")
        if self.sequence < 0:
            raise ValueError(f"commit sequence must be >= 0, found {self.sequence}")

    def __str__(self) -> str:
        return f"{self.writer}:{self.sequence}"
