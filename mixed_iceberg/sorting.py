"""Stable orderings of integer arrays, faster than NumPy's stable argsort. Pure.

``np.argsort(kind="stable")`` is a radix sort only for types of 16 bits or fewer; for wider
integers it is a merge sort, while the default sort of 64-bit integers is vectorized: the key
hashes of a file (int32) sort faster through one sort of ``value << 32 | position``, and
tree-node ids (int64) several times faster as int16 (claims ``sort_hashes`` and ``sort_nodes`` of
``bench/results/design_choices-2026-12-06-e9ea149.json``, ``nice -n 5 .venv/bin/python -m bench.design_choices``; the write path that uses it: ``.venv/bin/python -m bench.format_core``).
Both give exactly the stable order: ties stay in position order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["stable_order"]

_INT16 = np.iinfo(np.int16)
_INT32 = np.iinfo(np.int32)
_LOW = np.int64(0xFFFFFFFF)


def stable_order(values: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int64]:
    """``np.argsort(values, kind="stable")`` of a 1-d integer array, as int64 positions."""
    n = len(values)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    low, high = int(values.min()), int(values.max())
    if _INT16.min <= low and high <= _INT16.max:
        return np.argsort(values.astype(np.int16, copy=False), kind="stable").astype(np.int64, copy=False)
    if _INT32.min <= low and high <= _INT32.max and n <= _LOW:
        # Position in the low 32 bits: an unstable sort of the pairs is the stable order.
        pairs = (values.astype(np.int64) << np.int64(32)) | np.arange(n, dtype=np.int64)
        pairs.sort()
        return pairs & _LOW
    return np.argsort(values, kind="stable").astype(np.int64, copy=False)
