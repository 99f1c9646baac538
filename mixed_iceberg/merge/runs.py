"""Run-length arrays: one value per run of consecutive rows. Pure.

A read of many files tags each row with a per-file value (its file's index, the LSN of its
file's transaction). Spelled out, that is an array the length of the read, built and gathered
on every read although a merge looks at the values of only the few rows whose key the change
tail holds. :class:`Runs` keeps one value per file and looks rows up by binary search.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Runs"]


@dataclass(frozen=True, slots=True)
class Runs:
    """``values[i]`` repeated over rows ``[ends[i-1], ends[i])`` (``ends`` ascending, the last one
    the row count). Runs may be empty."""

    values: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]

    def __post_init__(self) -> None:
        if len(self.values) != len(self.ends):
            raise ValueError(f"expected a value per run end, found {len(self.values)} values and {len(self.ends)} ends")

    @classmethod
    def empty(cls) -> Runs:
        return cls(np.empty(0, np.int64), np.empty(0, np.int64))

    @classmethod
    def of(cls, values: npt.ArrayLike, lengths: npt.ArrayLike) -> Runs:
        """Runs of ``values``, each repeated ``lengths`` times."""
        return cls(np.asarray(values, dtype=np.int64), np.cumsum(np.asarray(lengths, dtype=np.int64), dtype=np.int64))

    @classmethod
    def of_dense(cls, dense: npt.NDArray[np.int64]) -> Runs:
        """The runs of an array spelled out (a break wherever the value changes)."""
        if not len(dense):
            return cls.empty()
        starts = np.flatnonzero(np.diff(dense)) + 1
        ends = np.append(starts, len(dense)).astype(np.int64)
        return cls(np.asarray(dense[ends - 1], dtype=np.int64), ends)

    @classmethod
    def concat(cls, parts: Sequence[Runs]) -> Runs:
        if not parts:
            return cls.empty()
        offsets = np.cumsum([0, *(len(p) for p in parts[:-1])])
        return cls(
            np.concatenate([p.values for p in parts]),
            np.concatenate([p.ends + offset for p, offset in zip(parts, offsets, strict=True)]).astype(np.int64),
        )

    def __len__(self) -> int:
        return int(self.ends[-1]) if len(self.ends) else 0

    def map(self, table: npt.NDArray[np.int64]) -> Runs:
        """The runs with each value ``v`` replaced by ``table[v]``."""
        return Runs(np.asarray(table[self.values], dtype=np.int64), self.ends)

    def take(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The value of each of ``rows`` (indices in ``[0, len(self))``)."""
        taken: npt.NDArray[np.int64] = self.values[np.searchsorted(self.ends, rows, side="right")]
        return taken

    def dense(self) -> npt.NDArray[np.int64]:
        """The array spelled out, a value per row."""
        lengths = np.diff(self.ends, prepend=0)
        spelled: npt.NDArray[np.int64] = np.repeat(self.values, lengths)
        return spelled
