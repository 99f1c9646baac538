"""stable_order is exactly NumPy's stable argsort (ties in position order) for every width it
takes a shortcut for, and for the widths it does not."""

from __future__ import annotations

import numpy as np
import pytest

from mixed_iceberg.sorting import stable_order


@pytest.mark.parametrize(
    ("low", "high", "dtype"),
    [
        (4, 8, np.int64),  # tree-node ids: the int16 radix sort
        (-(2**15), 2**15, np.int64),
        (-(2**31), 2**31, np.int32),  # key hashes: the pair sort
        (-(2**31), 2**31, np.int64),
        (-(2**40), 2**40, np.int64),  # too wide: NumPy's stable sort
    ],
)
def test_stable_order_is_the_stable_argsort(low: int, high: int, dtype: type) -> None:
    rng = np.random.default_rng(7)
    for n in (1, 2, 17, 5000):
        values = rng.integers(low, high, n, dtype=np.int64).astype(dtype)
        values[: n // 3] = values[n // 2] if n > 2 else values[0]  # many ties
        rng.shuffle(values)
        expected = np.argsort(values, kind="stable")
        got = stable_order(values)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, expected)


def test_extremes_and_empty() -> None:
    values = np.array([2**31 - 1, -(2**31), 0, -(2**31), 2**31 - 1], dtype=np.int32)
    np.testing.assert_array_equal(stable_order(values), [1, 3, 2, 0, 4])
    assert stable_order(np.empty(0, np.int32)).tolist() == []
