"""The one merge (``merge_group``): what scan, optimizing and bulk_load get for a merge group.

Its contract: a settled row either stays as it is (its mask) or is retired; a dead settled row
neither survives nor hides; non-emitting settled rows and competing change rows decide masks but
give no rows; under every engine, settled rows are simply the key's state so far (merging them
as the oldest inserts gives the same rows).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from mixed_iceberg.config.merge import MergeConfig, MergeEngine
from mixed_iceberg.merge.group import MergedGroup, Settled, Tail, delete_columns, merge_group, needs_whole_rows
from mixed_iceberg.merge.latest import LSN
from mixed_iceberg.merge.runs import Runs

KEYS = ["id"]
DEFAULT = MergeConfig()
CONFIGS = {
    "deduplicate": DEFAULT,
    "sequence-field": MergeConfig(sequence_field="v"),
    "ignore-delete": MergeConfig(ignore_delete=True),
    "partial-update": MergeConfig(engine=MergeEngine.PARTIAL_UPDATE),
    "first-row": MergeConfig(engine=MergeEngine.FIRST_ROW),
    "aggregation": MergeConfig(engine=MergeEngine.AGGREGATION, functions={"v": "sum"}),
}


def _rows(ids: list[int], values: list[int | None]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(values, pa.int64())})


def _tail(inserts: pa.Table, insert_lsn: list[int], deletes: pa.Table, delete_lsn: list[int]) -> Tail:
    return Tail(
        inserts.append_column(LSN, pa.array(insert_lsn, pa.int64())), deletes.append_column(LSN, pa.array(delete_lsn, pa.int64()))
    )


def _sorted(merged: MergedGroup) -> dict[str, list[object]]:
    table = merged.table()
    return table.take(pa.array(np.argsort(table.column("id").to_numpy(), kind="stable"))).to_pydict()


def test_latest_row_decides_and_untouched_settled_rows_stay() -> None:
    settled = Settled(_rows([1, 2, 3], [10, 20, 30]), np.array([5, 5, 5], np.int64))
    tail = _tail(_rows([1, 4], [11, 40]), [7, 8], _rows([2], [None]), [9])
    merged = merge_group(DEFAULT, KEYS, [settled], tail)
    assert merged.settled[0].tolist() == [False, False, True]  # 1 updated, 2 deleted, 3 untouched
    assert _sorted(merged) == {"id": [1, 3, 4], "v": [11, 30, 40]}
    assert [part.num_rows for part in merged.rows] == [1, 2]  # the settled input's rows, then the tail's


def test_a_newer_settled_row_hides_an_older_change_row() -> None:
    settled = Settled(_rows([1], [10]), np.array([9], np.int64))
    merged = merge_group(DEFAULT, KEYS, [settled], _tail(_rows([1], [11]), [7], _rows([], []), []))
    assert merged.settled[0].tolist() == [True]
    assert _sorted(merged) == {"id": [1], "v": [10]}


@pytest.mark.parametrize("config", list(CONFIGS.values()), ids=list(CONFIGS))
def test_dead_settled_rows_neither_survive_nor_hide(config: MergeConfig) -> None:
    settled = Settled(_rows([1, 2], [10, 20]), np.array([9, 9], np.int64), live=np.array([False, True]))
    merged = merge_group(config, KEYS, [settled], _tail(_rows([1], [11]), [7], _rows([], []), []))
    assert not merged.settled[0][0]
    assert _sorted(merged) == {"id": [1, 2], "v": [11, 20]}


@pytest.mark.parametrize("config", list(CONFIGS.values()), ids=list(CONFIGS))
def test_non_emitting_settled_rows_give_masks_not_rows(config: MergeConfig) -> None:
    """A segment an optimizing leaves in place: its retired rows become position deletes."""
    segment = Settled(_rows([1, 2], [10, 20]), np.array([3, 3], np.int64), emit=False)
    merged = merge_group(config, KEYS, [segment], _tail(_rows([1], [11]), [7], _rows([], []), []))
    assert merged.settled[0].tolist() == [False, True]
    assert 2 not in merged.table().column("id").to_pylist()


def test_competing_change_rows_hide_but_give_no_rows() -> None:
    competing = _tail(_rows([1], [None]).select(KEYS), [8], _rows([2], [None]).select(KEYS), [9])
    settled = Settled(_rows([2], [20]), np.array([3], np.int64))
    merged = merge_group(DEFAULT, KEYS, [settled], _tail(_rows([1], [11]), [7], _rows([], []), []), competing=competing)
    assert merged.settled[0].tolist() == [False]
    assert merged.table().num_rows == 0


def test_competing_change_rows_are_refused_under_a_merge_engine() -> None:
    competing = _tail(_rows([1], [None]).select(KEYS), [8], _rows([], []).select(KEYS), [])
    with pytest.raises(ValueError, match="competing"):
        merge_group(CONFIGS["partial-update"], KEYS, [], _tail(_rows([1], [11]), [7], _rows([], []), []), competing=competing)


@pytest.mark.parametrize("config", list(CONFIGS.values()), ids=list(CONFIGS))
def test_settled_rows_merge_as_the_oldest_inserts(config: MergeConfig) -> None:
    """Optimizing writes a key's merged row back as a settled row; merging it later with the
    rest of the tail gives what merging everything at once gives."""
    settled_rows = _rows([1, 2, 3], [10, 20, None])
    tail_inserts, tail_deletes = _rows([1, 3, 1, 4], [5, 7, None, 2]), _rows([2, 4], [20, 2])
    tail = _tail(tail_inserts, [11, 12, 13, 14], tail_deletes, [15, 16])
    as_settled = merge_group(config, KEYS, [Settled(settled_rows, Runs.of([3], [3]))], tail)
    as_inserts = merge_group(
        config, KEYS, [], _tail(pa.concat_tables([settled_rows, tail_inserts]), [1, 2, 3, 11, 12, 13, 14], tail_deletes, [15, 16])
    )
    assert _sorted(as_settled) == _sorted(as_inserts)


def test_delete_columns_are_the_key_unless_the_engine_takes_values_back() -> None:
    columns = ["id", "v", "w"]
    assert delete_columns(DEFAULT, KEYS, columns) == ["id"]
    assert delete_columns(CONFIGS["sequence-field"], KEYS, columns) == ["id", "v"]
    assert delete_columns(CONFIGS["aggregation"], KEYS, columns) == columns
    assert not needs_whole_rows(DEFAULT)
    assert needs_whole_rows(CONFIGS["partial-update"])


def test_settled_rows_carry_their_lsns_apart() -> None:
    with pytest.raises(ValueError, match="LSN"):
        Settled(_rows([1], [1]).append_column(LSN, pa.array([1], pa.int64())), np.array([1], np.int64))
    with pytest.raises(ValueError, match="LSN per settled row"):
        Settled(_rows([1], [1]), np.array([1, 2], np.int64))
