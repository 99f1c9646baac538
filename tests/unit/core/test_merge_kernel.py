"""The pure merge kernel, including composite keys and partition-scoped deletes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from mixed_iceberg.reader.merge import BASE_OFFSET, LSN, PART, merge_latest, pack_lsn


def _lsn(pairs: list[tuple[int, int]]) -> pa.Array:
    tx = np.array([p[0] for p in pairs], np.int64)
    off = np.array([p[1] for p in pairs], np.int64)
    return pa.array(pack_lsn(tx, off))


def test_lsn_packing_orders_like_the_pairs() -> None:
    pairs = [(1, 5), (2, 0), (1, BASE_OFFSET - 1), (3, 1), (2, 7)]
    packed = _lsn(pairs).to_pylist()
    assert sorted(range(len(pairs)), key=lambda i: packed[i]) == sorted(range(len(pairs)), key=lambda i: pairs[i])


def test_composite_key_delete_removes_only_its_exact_key() -> None:
    data = pa.table({"a": [1, 1, 2], "b": ["x", "y", "x"], "v": [10, 11, 12], LSN: _lsn([(1, 1), (1, 2), (1, 3)])})
    deletes = pa.table({"a": [1], "b": ["x"], LSN: _lsn([(2, 1)])})
    out = merge_latest(data, deletes, ["a", "b"])
    assert sorted(out.column("v").to_pylist()) == [11, 12]
    assert out.column_names == ["a", "b", "v"]


def test_equal_lsn_keeps_the_row_and_strictly_newer_delete_removes_it() -> None:
    data = pa.table({"k": [1, 2], LSN: _lsn([(5, 3), (5, 3)])})
    deletes = pa.table({"k": [1, 2], LSN: _lsn([(5, 3), (5, 4)])})
    assert merge_latest(data, deletes, ["k"]).column("k").to_pylist() == [1]


def test_deletes_apply_only_within_their_partition() -> None:
    data = pa.table({"k": [1, 1], LSN: _lsn([(1, 1), (1, 1)]), PART: pa.array([0, 1], pa.int32())})
    deletes = pa.table({"k": [1], LSN: _lsn([(2, 1)]), PART: pa.array([1], pa.int32())})
    out = merge_latest(data, deletes, ["k"])
    assert out.num_rows == 1
    assert out.column_names == ["k"]


def test_base_rows_survive_deletes_of_older_transactions() -> None:
    base_lsn = pa.array(pack_lsn(np.array([4], np.int64), np.array([0], np.int64)) | BASE_OFFSET)
    data = pa.table({"k": [1], LSN: base_lsn})
    assert merge_latest(data, pa.table({"k": [1], LSN: _lsn([(4, 9)])}), ["k"]).num_rows == 1
    assert merge_latest(data, pa.table({"k": [1], LSN: _lsn([(5, 1)])}), ["k"]).num_rows == 0


def test_rows_marked_not_kept_are_dropped_in_the_same_pass_as_deleted_keys() -> None:
    data = pa.table({"k": [1, 2, 3, 4], "v": [10, 20, 30, 40], LSN: _lsn([(1, 1), (1, 2), (1, 3), (1, 4)])})
    position_deleted = np.array([True, False, True, True])  # row 2 is gone by position
    deletes = pa.table({"k": [3], LSN: _lsn([(2, 1)])})
    out = merge_latest(data, deletes, ["k"], position_deleted)
    assert out.column("v").to_pylist() == [10, 40]
    assert position_deleted.tolist() == [True, False, True, True]  # the caller's mask is not changed
    no_deletes = merge_latest(data, deletes.slice(0, 0), ["k"], position_deleted)
    assert no_deletes.column("v").to_pylist() == [10, 30, 40]


def test_a_key_deleted_in_two_partitions_is_judged_per_partition() -> None:
    # key 1 lives in partitions 0 and 1; its delete in 0 is newer than the row, in 1 older
    data = pa.table(
        {"k": [1, 1, 2], "v": [10, 11, 20], LSN: _lsn([(3, 1), (3, 2), (3, 3)]), PART: pa.array([0, 1, 0], pa.int32())}
    )
    deletes = pa.table({"k": [1, 1], LSN: _lsn([(4, 1), (2, 1)]), PART: pa.array([0, 1], pa.int32())})
    assert merge_latest(data, deletes, ["k"]).column("v").to_pylist() == [11, 20]
