"""The one merge: a merge group's rows from its settled rows, its change tail and the table's
merge configuration. Pure Arrow and NumPy; every reader and writer calls it.

A merge group is a set of files whose keys no file outside it holds (a partition's tree node,
or a whole table). Its *settled* rows are the BaseStore's (at most one live row per key), its
*tail* the ChangeStore's unmerged rows: inserts (``+I``/``+U``) and deletes (``-D``/``-U``), each
tagged with its LSN. Under ``deduplicate`` a key's latest row decides it
(:func:`mixed_iceberg.merge.latest.latest_by_key`); under another merge engine every row of a key
the tail touches is folded in order (:func:`mixed_iceberg.merge.engines.scan_states`). Either way
a settled row either stays as it is or is retired, and the tail gives the rows of the keys it
decides. ``scan()``, optimizing, ``bulk_load`` and ``changes()`` (through its views) get their
rows here, so optimizing cannot change what a scan returns by merging differently.

Reading is the callers' part: which columns (:func:`delete_columns`, :func:`needs_whole_rows`),
which files and which filters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from mixed_iceberg.config.merge import MergeConfig
from mixed_iceberg.merge.engines import scan_states
from mixed_iceberg.merge.latest import LSN, KeyedRows, KeyIndex, keep_rows, latest_by_key
from mixed_iceberg.merge.runs import Runs

__all__ = ["DEDUPLICATE", "MergedGroup", "Settled", "Tail", "delete_columns", "merge_group", "needs_whole_rows"]

#: The default merge configuration: a key's latest row decides it.
DEDUPLICATE = MergeConfig()


@dataclass(frozen=True, slots=True)
class Settled:
    """Settled rows of a merge group: BaseStore rows, at most one live row per key.

    ``rows`` holds the columns read (the key columns at least), without an LSN column; ``lsn``
    the LSN of each row, or as :class:`Runs` (a value per file read). ``live`` marks the rows
    that exist (None: all): the others (position-deleted, or filtered out by the caller's read)
    never survive and never hide another row. ``emit`` says whether the surviving rows are part of
    the group's rows; rows that only compete for their keys (segments an optimizing leaves in
    place, a newer BaseStore file's keys) are not: their callers use the mask only.
    """

    rows: pa.Table
    lsn: npt.NDArray[np.int64] | Runs
    live: npt.NDArray[np.bool_] | None = None
    emit: bool = True

    def __post_init__(self) -> None:
        if len(self.lsn) != self.rows.num_rows:
            raise ValueError(f"expected an LSN per settled row ({self.rows.num_rows}), found {len(self.lsn)}")
        if LSN in self.rows.column_names:
            raise ValueError(f"expected settled rows without an {LSN} column (their LSNs are given apart)")

    def keyed(self, keys: Sequence[str]) -> KeyedRows:
        return KeyedRows.of([self.rows.column(k) for k in keys], self.lsn, True, live=self.live)

    def alive(self) -> npt.NDArray[np.bool_]:
        return np.ones(self.rows.num_rows, dtype=bool) if self.live is None else self.live


@dataclass(frozen=True, slots=True)
class Tail:
    """Change rows of a merge group: ``inserts`` (``+I``/``+U`` rows) and ``deletes`` (``-D``/``-U``
    rows), each with an ``LSN`` column. Deletes may carry only the columns :func:`delete_columns`
    names."""

    inserts: pa.Table
    deletes: pa.Table

    def __post_init__(self) -> None:
        if LSN not in self.inserts.column_names or LSN not in self.deletes.column_names:
            raise ValueError(f"expected inserts and deletes with an {LSN} column")

    def keyed(self, keys: Sequence[str]) -> list[KeyedRows]:
        return [
            KeyedRows.of([rows.column(k) for k in keys], rows.column(LSN).to_numpy(), is_data)
            for rows, is_data in ((self.inserts, True), (self.deletes, False))
        ]

    def __len__(self) -> int:
        return int(self.inserts.num_rows + self.deletes.num_rows)


@dataclass(frozen=True, slots=True)
class MergedGroup:
    """What a merge group gives: per settled input, the rows that stay as they are (the others
    are retired: an optimizing deletes them by position), and the group's rows.

    ``rows`` holds the staying rows of each emitting settled input, in input order, then the
    rows the tail decides (its columns without LSN): kept apart, so that a writer can lay each
    out without copying them together first. :meth:`table` concatenates them.
    """

    settled: list[npt.NDArray[np.bool_]]
    rows: list[pa.Table]

    def table(self) -> pa.Table:
        return pa.concat_tables(self.rows, promote_options="permissive")


def needs_whole_rows(config: MergeConfig) -> bool:
    """Whether a key's merged row depends on the values of all its rows (a merge engine), not
    only on which row is the latest: then settled rows of the tail's keys take part with every
    column, and value filters apply to the merged rows only (not to what is read)."""
    return not config.is_default


def delete_columns(config: MergeConfig, keys: Sequence[str], columns: Sequence[str]) -> list[str]:
    """The columns to read of delete rows, out of ``columns`` (those read of inserts): all of
    them where the engine takes values back (aggregation), else the key and the
    ``sequence.field`` that orders the deletes."""
    if config.needs_delete_values:
        return list(columns)
    return list(dict.fromkeys([*keys, *([config.sequence_field] if config.sequence_field else [])]))


def merge_group(
    config: MergeConfig, keys: Sequence[str], settled: Sequence[Settled], tail: Tail, *, competing: Tail | None = None
) -> MergedGroup:
    """The rows of one merge group under ``config``. Pure.

    Under a merge engine the settled rows need the columns of the tail's inserts
    (:func:`needs_whole_rows`). ``competing`` (deduplication only): change rows (keys and LSNs)
    that are not the group's to merge but still compete for their keys: a newer one hides a row.

    Raises:
        ValueError: ``competing`` rows under a merge engine (their values would be folded in).

    >>> import pyarrow as pa
    >>> inserts = pa.table({"id": [1, 2, 1], "v": ["a", "b", "c"], LSN: [1, 2, 3]})
    >>> deletes = pa.table({"id": [2], LSN: [4]})
    >>> merge_group(MergeConfig(), ["id"], [], Tail(inserts, deletes)).table().to_pydict()
    {'id': [1], 'v': ['c']}
    """
    if needs_whole_rows(config):
        if competing is not None and len(competing):
            raise ValueError(f"expected no competing change rows under merge-engine={config.engine.value}")
        return _by_engine(config, keys, settled, tail.inserts, tail.deletes)
    settled_keep, (insert_keep, *_) = latest_by_key(
        [s.keyed(keys) for s in settled], [*tail.keyed(keys), *(competing.keyed(keys) if competing is not None else [])]
    )
    rows = [keep_rows(s.rows, keep) for s, keep in zip(settled, settled_keep, strict=True) if s.emit]
    return MergedGroup(settled_keep, [*rows, keep_rows(tail.inserts.drop_columns([LSN]), insert_keep)])


def _by_engine(
    config: MergeConfig, keys: Sequence[str], settled: Sequence[Settled], inserts: pa.Table, deletes: pa.Table
) -> MergedGroup:
    """Under a merge engine: every live settled row of a tail key is retired, and the key's
    merged row (the state after its last row, where the key exists) is the tail's."""
    columns = [c for c in inserts.column_names if c != LSN]
    tail = pa.concat_tables([inserts.select(columns), _padded(deletes, inserts.select(columns).schema)])
    if tail.num_rows == 0:
        return MergedGroup(
            [s.alive().copy() for s in settled], [*(keep_rows(s.rows, s.alive()) for s in settled if s.emit), tail]
        )
    index = KeyIndex([tail.column(k) for k in keys])
    masks, picked, picked_codes = [], [], []
    for part in settled:
        own = index.lookup([part.rows.column(k) for k in keys]) if part.rows.num_rows else np.empty(0, np.int64)
        alive = part.alive()
        touched = (own >= 0) & alive
        masks.append(alive & ~touched)
        picked.append(np.flatnonzero(touched))
        picked_codes.append(own[touched])
    touched_rows = [part.rows.take(pa.array(p)).select(columns) for part, p in zip(settled, picked, strict=True)]
    n_base = sum(len(p) for p in picked)
    scanned = scan_states(
        config,
        pa.concat_tables([*touched_rows, tail]),
        keys,
        np.concatenate([*picked_codes, index.codes]),
        np.concatenate(
            [
                *(
                    part.lsn.take(p) if isinstance(part.lsn, Runs) else part.lsn[p]
                    for part, p in zip(settled, picked, strict=True)
                ),
                inserts.column(LSN).to_numpy(),
                deletes.column(LSN).to_numpy(),
            ]
        ),
        np.concatenate([np.ones(n_base + inserts.num_rows, bool), np.zeros(deletes.num_rows, bool)]),
        np.concatenate([np.ones(n_base, bool), np.zeros(tail.num_rows, bool)]),
    )
    merged = scanned.states.filter(pa.array(scanned.last & scanned.exists))
    kept = [keep_rows(part.rows, mask) for part, mask in zip(settled, masks, strict=True) if part.emit]
    return MergedGroup(masks, [*kept, merged])


def _padded(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` with the columns of ``schema`` they lack, as nulls (a delete read by key only)."""
    arrays = [rows.column(f.name) if f.name in rows.column_names else pa.nulls(rows.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)
