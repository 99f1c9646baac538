"""Change rows grouped in one pass: the same groups as split_rows, all files in one writer batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from mixed_iceberg.changestore import writer as change_writer
from mixed_iceberg.format import tree_node_ids
from mixed_iceberg.store.write.layout import split_rows, split_sized
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_pass_groups_equal_split_rows(tmp_path: Path, seed: int) -> None:
    table = local_catalog(tmp_path).create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    store = table.change_store
    assert store is not None
    rng = np.random.default_rng(seed)
    n = 500
    rows = pa.table({"id": pa.array(rng.integers(0, 10_000, n), pa.int64()), "pos": pa.array(np.arange(n), pa.int64())})
    nodes = np.asarray(tree_node_ids([rows.column("id")], 3), dtype=np.int64)
    mask = rng.random(n) < 0.6
    ours = change_writer._node_groups(rows, nodes, np.flatnonzero(mask))
    theirs = split_rows(store, rows.filter(pa.array(mask)), ["id"], 4)
    assert [(g.node, g.partition_path, g.rows.to_pydict()) for g in ours] == [
        (g.node, g.partition_path, g.rows.to_pydict()) for g in theirs
    ]
    assert change_writer._node_groups(rows, nodes, np.flatnonzero(np.zeros(n, bool))) == []


def test_insert_and_delete_files_go_to_the_writers_in_one_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = local_catalog(tmp_path).create_table("db.t", ORDERS_SCHEMA, primary_key=["id"])
    batches: list[int] = []
    real = change_writer.write_groups

    def counting(store: Any, groups: Any, file_schema: Any, name: Any) -> Any:
        batches.append(len(groups))
        return real(store, groups, file_schema, name)

    monkeypatch.setattr(change_writer, "write_groups", counting)
    with table.new_transaction(("w", 1)) as txn:
        txn.write(changes([("+I", i, "a", i, float(i)) for i in range(20)]))
    with table.new_transaction(("w", 2)) as txn:
        txn.write(changes([("-U", 1, "a", 1, 1.0), ("+U", 1, "b", 2, 2.0), ("-D", 2, "a", 2, 2.0)]))
    assert batches[0] == 4  # +I rows: one insert file per tree node
    assert len(batches) == 2  # the second commit's insert and delete files: one batch


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_split_of_parts_equals_split_of_their_concatenation(tmp_path: Path, seed: int, partitioned: bool) -> None:
    """The optimizer hands the layout a rewritten segment and the change's inserts apart: the files
    must hold the same rows in the same order as if it had concatenated them."""
    table = local_catalog(tmp_path).create_table(
        "db.t", ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"] if partitioned else None
    )
    rng = np.random.default_rng(seed)

    def part(n: int) -> pa.Table:
        return pa.table(
            {
                "id": pa.array(rng.integers(0, 10_000, n), pa.int64()),
                "cat": pa.array(rng.choice(["a", "b", "c"], n)),
                "qty": pa.array(np.arange(n), pa.int32()),
                "price": pa.array(rng.random(n)),
            },
            schema=ORDERS_SCHEMA,
        )

    parts = [part(700), part(0), part(90)]
    theirs = split_sized(table.base_store, pa.concat_tables(parts), ["id"], 4, 4096, 40.0)
    ours = split_sized(table.base_store, parts, ["id"], 4, 4096, 40.0)
    assert len(ours) > 4  # several pieces per node: the cut by size is exercised too
    assert [(g.node, g.partition_path, g.rows.to_pydict()) for g in ours] == [
        (g.node, g.partition_path, g.rows.to_pydict()) for g in theirs
    ]
