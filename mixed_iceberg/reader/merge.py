"""The merge-on-read kernel: latest state per key from data rows and delete rows. Pure Arrow.

Amoro's rule: a data row survives unless the largest delete LSN of its key (within its
partition) is strictly greater than the row's LSN. LSNs are ``(transaction id, file offset)``
pairs, packed here into one int64 (transaction id in the high 32 bits); base rows carry the
maximum offset, so only a later transaction deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from mixed_iceberg.exceptions import CorruptTableError

__all__ = ["BASE_OFFSET", "LSN", "PART", "keep_rows", "merge_latest", "pack_lsn"]

LSN = "__lsn"
PART = "__part"
_ROW = "__row"
_MAX = "__max_delete"
_KEEP = "__keep"
#: Offset given to base rows (Amoro uses Long.MAX_VALUE; the packed form has 32 bits).
BASE_OFFSET = 0xFFFFFFFF


def pack_lsn(transaction_ids: npt.NDArray[np.int64], offsets: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Pack (transaction id, offset) pairs into int64s that order like the pairs.

    Raises:
        CorruptTableError: an id or offset does not fit (ids < 2^31, offsets < 2^32 - 1).
    """
    if len(offsets) and (int(offsets.max()) >= BASE_OFFSET or int(offsets.min()) < 0):
        raise CorruptTableError(
            f"file offsets must lie in [0, {BASE_OFFSET - 1}]; found {int(offsets.min())}..{int(offsets.max())}"
        )
    if len(transaction_ids) and (int(transaction_ids.max()) >= 2**31 or int(transaction_ids.min()) < 0):
        raise CorruptTableError(
            f"transaction ids must lie in [0, 2^31); found {int(transaction_ids.min())}..{int(transaction_ids.max())}"
        )
    return (transaction_ids.astype(np.int64) << 32) | offsets.astype(np.int64)


def keep_rows(rows: pa.Table, keep: npt.NDArray[np.bool_]) -> pa.Table:
    """``rows.filter(keep)``, run on pyarrow's threads (about 30 % faster on two cores)."""
    if keep.all():
        return rows
    marked = rows.append_column(_KEEP, pa.array(keep))
    return ds.dataset(marked).to_table(filter=pc.field(_KEEP), columns=rows.column_names)


def merge_latest(data: pa.Table, deletes: pa.Table, keys: Sequence[str], keep: npt.NDArray[np.bool_] | None = None) -> pa.Table:
    """Rows of ``data`` that no strictly newer delete of the same key removes.

    Both tables carry the key columns and ``LSN`` (and ``PART`` when the table is
    partitioned: deletes only apply within their partition). The result drops both.
    ``keep`` marks rows already known to survive (e.g. by position deletes): the others are
    dropped in the same pass.
    """
    internal = [c for c in (LSN, PART) if c in data.column_names]
    keep = np.ones(data.num_rows, dtype=bool) if keep is None else keep.copy()
    if deletes.num_rows == 0 or data.num_rows == 0:
        return keep_rows(data.drop_columns(internal), keep)
    join_keys = [*keys, *([PART] if PART in data.column_names else [])]
    newest = deletes.select([*join_keys, LSN]).group_by(join_keys, use_threads=True).aggregate([(LSN, "max")])
    newest = newest.rename_columns([*join_keys, _MAX])
    partitioned = PART in data.column_names
    if len(keys) == 1 and (not partitioned or pc.count_distinct(newest.column(keys[0])).as_py() == newest.num_rows):
        # One delete row per key: look each data row's key up (no join, no row ids).
        slot = pc.index_in(data.column(keys[0]), value_set=newest.column(keys[0]).combine_chunks())
        newer = pc.greater(newest.column(_MAX).combine_chunks().take(slot), data.column(LSN))
        if partitioned:
            newer = pc.and_(newer, pc.equal(newest.column(PART).combine_chunks().take(slot), data.column(PART)))
        keep &= ~pc.fill_null(newer, False).to_numpy(zero_copy_only=False)
    else:
        probe = data.select([*join_keys, LSN]).append_column(_ROW, pa.array(np.arange(data.num_rows, dtype=np.int64)))
        hits = probe.join(newest, keys=join_keys, join_type="inner", use_threads=True)
        dropped = hits.filter(pc.greater(hits.column(_MAX), hits.column(LSN))).column(_ROW)
        keep[dropped.to_numpy()] = False
    return keep_rows(data.drop_columns(internal), keep)
