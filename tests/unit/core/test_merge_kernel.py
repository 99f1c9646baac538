"""The pure merge kernel: latest row per key by LSN, composite keys, ties, settled rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from mixed_iceberg.merge.latest import BASE_OFFSET, KeyedRows, key_codes, latest_by_key, latest_rows, pack_lsn
from mixed_iceberg.merge.runs import Runs


def _lsn(pairs: list[tuple[int, int]]) -> np.ndarray:
    tx = np.array([p[0] for p in pairs], np.int64)
    off = np.array([p[1] for p in pairs], np.int64)
    return pack_lsn(tx, off)


def _base(tx: int, n: int) -> np.ndarray:
    return np.full(n, (tx << 32) | BASE_OFFSET, np.int64)


def test_lsn_packing_orders_like_the_pairs() -> None:
    pairs = [(1, 5), (2, 0), (1, BASE_OFFSET - 1), (3, 1), (2, 7)]
    packed = _lsn(pairs).tolist()
    assert sorted(range(len(pairs)), key=lambda i: packed[i]) == sorted(range(len(pairs)), key=lambda i: pairs[i])


def test_key_codes_are_equal_exactly_for_equal_composite_keys() -> None:
    codes, count = key_codes([pa.array([1, 1, 2, 1]), pa.array(["x", "y", "x", "x"])])
    assert count == 3
    assert codes[0] == codes[3]
    assert len({codes[0], codes[1], codes[2]}) == 3
    assert codes.tolist()[:3] == [0, 1, 2], "numbered by first appearance"


def test_latest_row_wins_and_a_data_row_beats_a_delete_of_the_same_lsn() -> None:
    codes = np.array([0, 0, 1, 1, 2, 2])
    lsn = _lsn([(1, 1), (1, 2), (1, 3), (1, 3), (1, 5), (1, 4)])
    is_data = np.array([True, True, False, True, False, True])
    assert latest_rows(codes, 3, lsn, is_data).tolist() == [1, 3, 4]


def test_rows_equal_in_lsn_and_kind_resolve_to_the_later_one() -> None:
    assert latest_rows(np.array([0, 0, 0]), 1, _base(4, 3), np.ones(3, bool)).tolist() == [2]


def _tail(keys: list[int], pairs: list[tuple[int, int]], data: list[bool]) -> KeyedRows:
    return KeyedRows([pa.array(keys)], _lsn(pairs), np.array(data))


def test_insert_over_existing_key_replaces_it_without_any_delete() -> None:
    settled = KeyedRows.of([pa.array([7, 8])], _base(1, 2), True)
    (base_keep,), (tail_keep,) = latest_by_key([settled], [_tail([7, 7], [(2, 1), (2, 2)], [True, True])])
    assert base_keep.tolist() == [False, True]
    assert tail_keep.tolist() == [False, True], "the later of two inserts of one key wins"


def test_latest_delete_removes_the_key_and_lone_update_before_counts_as_delete() -> None:
    settled = KeyedRows.of([pa.array([1, 2])], _base(1, 2), True)
    tail = _tail([1, 2], [(2, 1), (2, 2)], [False, False])
    (base_keep,), (tail_keep,) = latest_by_key([settled], [tail])
    assert base_keep.tolist() == [False, False]
    assert tail_keep.tolist() == [False, False]


def test_base_rows_newer_than_the_tail_win() -> None:
    settled = KeyedRows.of([pa.array([1])], _base(5, 1), True)
    (base_keep,), (tail_keep,) = latest_by_key([settled], [_tail([1, 1], [(4, 9), (5, 1)], [True, False])])
    assert base_keep.tolist() == [True]
    assert tail_keep.tolist() == [False, False]


def test_settled_rows_of_keys_outside_the_tail_are_kept_untouched() -> None:
    settled = KeyedRows.of([pa.array([1, 2, 3])], _base(1, 3), True)
    (base_keep,), (tail_keep,) = latest_by_key([settled], [_tail([9], [(2, 1)], [True])])
    assert base_keep.tolist() == [True, True, True]
    assert tail_keep.tolist() == [True]


def test_composite_key_change_touches_only_its_exact_key() -> None:
    settled = KeyedRows.of([pa.array([1, 1, 2]), pa.array(["x", "y", "x"])], _base(1, 3), True)
    tail = KeyedRows([pa.array([1]), pa.array(["x"])], _lsn([(2, 1)]), np.array([False]))
    (base_keep,), _ = latest_by_key([settled], [tail])
    assert base_keep.tolist() == [False, True, True]


def test_empty_tail_keeps_everything() -> None:
    settled = KeyedRows.of([pa.array([1, 1])], _base(1, 2), True)
    (base_keep,), (tail_keep,) = latest_by_key([settled], [_tail([], [], [])])
    assert base_keep.tolist() == [True, True]
    assert tail_keep.tolist() == []


def test_a_dead_settled_row_neither_survives_nor_hides_the_tail() -> None:
    """Rows a position delete removed come with live=False: a newer dead base row of a tail key
    must not win over the tail, and a dead row outside the tail is not kept."""
    live = np.array([False, True, False])
    settled = KeyedRows.of([pa.array([1, 2, 3])], _base(5, 3), True, live=live)
    (base_keep,), (tail_keep,) = latest_by_key([settled], [_tail([1], [(4, 1)], [True])])
    assert base_keep.tolist() == [False, True, False]
    assert tail_keep.tolist() == [True]
    (base_keep,), _ = latest_by_key([settled], [_tail([], [], [])])
    assert base_keep.tolist() == live.tolist()


def test_a_large_integer_probe_finds_exactly_the_tail_keys() -> None:
    """Many integer keys probed against few take the bitmap prefilter: its result must be the
    hash lookup's, for sequential, random and negative keys of either width, hits and misses."""
    rng = np.random.default_rng(7)
    probes = {
        "sequential": np.arange(-50_000, 150_000, dtype=np.int64),
        "random": rng.integers(-(2**62), 2**62, 200_000, dtype=np.int64),
    }
    for name, probe in probes.items():
        for arrow_type in (pa.int64(), pa.int32()):
            values = probe.astype(np.int32) if arrow_type == pa.int32() else probe
            tail_values = np.concatenate([rng.choice(values, 2_000), np.array([0, 1, -1], dtype=values.dtype)])
            settled = KeyedRows.of([pa.array(values, type=arrow_type)], _base(1, len(values)), True)
            tail = KeyedRows.of([pa.array(tail_values, type=arrow_type)], _lsn([(2, i) for i in range(len(tail_values))]), True)
            (base_keep,), _ = latest_by_key([settled], [tail])
            expected = ~np.isin(values, tail_values)
            assert np.array_equal(base_keep, expected), f"{name} {arrow_type}"


def test_few_live_settled_rows_are_probed_alone_with_the_same_answer() -> None:
    """A filtered read marks the few rows it wants live: those alone are probed against the
    tail (taken out first), with the answer of probing all of them."""
    keys = np.arange(10_000, dtype=np.int64)
    live = np.zeros(len(keys), dtype=bool)
    live[[3, 500, 501, 9_999]] = True
    tail = _tail([500, 9_999, 7], [(2, 1), (2, 2), (2, 3)], [True, False, True])
    (sparse,), (sparse_tail,) = latest_by_key([KeyedRows.of([pa.array(keys)], _base(1, len(keys)), True, live=live)], [tail])
    assert np.flatnonzero(sparse).tolist() == [3, 501]
    assert sparse_tail.tolist() == [True, False, True]
    dense_live = live | (np.arange(len(keys)) % 2 == 0)
    (dense,), _ = latest_by_key([KeyedRows.of([pa.array(keys)], _base(1, len(keys)), True, live=dense_live)], [tail])
    assert dense[[3, 501]].all()
    assert not dense[[500, 9_999]].any()


def test_picked_rows_are_gathered_across_parts_as_from_their_concatenation() -> None:
    from mixed_iceberg.merge.latest import _gather

    rng = np.random.default_rng(3)
    for _ in range(200):
        parts = [rng.integers(0, 100, rng.integers(0, 20)) for _ in range(rng.integers(1, 4))]
        picked = np.flatnonzero(rng.random(sum(len(p) for p in parts)) < 0.3)
        assert np.array_equal(_gather(parts, picked, np.int64), np.concatenate(parts)[picked])


def test_runs_spell_out_take_and_concat_like_the_dense_array() -> None:
    """Per-file values of a read (its files' LSNs) kept as runs: every operation the merge uses
    gives what the array spelled out gives, empty runs and empty reads included."""
    values, lengths = np.array([7, 3, 9, 3], np.int64), np.array([2, 0, 3, 1], np.int64)
    runs = Runs.of(values, lengths)
    dense = np.repeat(values, lengths)
    assert len(runs) == len(dense) == 6
    assert runs.dense().tolist() == dense.tolist()
    rows = np.array([0, 1, 2, 4, 5], np.int64)
    assert runs.take(rows).tolist() == dense[rows].tolist()
    assert Runs.of_dense(dense).dense().tolist() == dense.tolist()
    assert Runs.concat([runs, Runs.of([], []), runs]).dense().tolist() == np.concatenate([dense, dense]).tolist()
    assert runs.map(np.arange(10, 20, dtype=np.int64)).dense().tolist() == (dense + 10).tolist()
    assert len(Runs.of_dense(np.empty(0, np.int64))) == 0


def test_settled_lsns_as_runs_give_the_dense_answer() -> None:
    """A BaseStore read gives its LSNs as a run per file: the merge must decide exactly as with
    a value per row, including base rows newer than the tail's rows of their key."""
    keys = pa.array(np.arange(12, dtype=np.int64))
    tx_per_file, rows_per_file = np.array([1, 9, 2], np.int64), np.array([4, 4, 4], np.int64)
    runs = Runs.of((tx_per_file << 32) | BASE_OFFSET, rows_per_file)
    live = np.ones(12, dtype=bool)
    live[[2, 6]] = False
    tail = _tail([1, 5, 6, 9, 20], [(5, 1), (5, 2), (5, 3), (5, 4), (5, 5)], [True, False, True, True, True])
    dense = latest_by_key([KeyedRows.of([keys], runs.dense(), True, live=live)], [tail])
    as_runs = latest_by_key([KeyedRows.of([keys], runs, True, live=live)], [tail])
    assert [m.tolist() for m in as_runs[0]] == [m.tolist() for m in dense[0]]
    assert [m.tolist() for m in as_runs[1]] == [m.tolist() for m in dense[1]]
    # Key 5 sits in the file of transaction 9, newer than the tail's 5: the base row wins.
    assert as_runs[0][0][5]
    assert not as_runs[1][0][1]
