"""A filter that pins the whole primary key reads only the tree nodes that hold those keys.

Rows are placed by the hash of their key (``base.file-index.hash-bucket``,
``change.file-index.hash-bucket``), so a point lookup or a short ``IN`` list need not open the
other nodes' files, in either store (``mixed_iceberg/reader/key_nodes.py``). What it returns must
be what the full merged read holds for those keys: the types oracle
(``tests/property/test_types_oracle.py``) checks that for every drawn key type across
optimizing; these tests check that files are pruned at all, and when they must not be.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import And, EqualTo, GreaterThan, In
from pyiceberg.types import LongType

from mixed_iceberg import MixedTable
from mixed_iceberg.format.javahash import key_hash
from mixed_iceberg.reader.key_nodes import MOST_KEYS, pinned_key_hashes
from mixed_iceberg.schema import arrow_schema
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

BUCKETS = {"base.file-index.hash-bucket": "8", "change.file-index.hash-bucket": "8"}


def _table(tmp_path: Path) -> MixedTable:
    table = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"], properties=BUCKETS)
    table.bulk_load(changes([("+I", k, "base", k, 1.0) for k in range(200)]).drop_columns(["_change_action"]))
    with table.new_transaction(("w", 1)) as txn:
        txn.write(
            changes([("+U", k, "new", k, 2.0) for k in range(0, 200, 3)] + [("-D", k, "x", 0, 0.0) for k in range(1, 200, 7)])
        )
    return table


def _files(table: MixedTable, row_filter: object) -> int:
    return sum(len(t.base_files) + len(t.change_files) for t in table.scan(row_filter=row_filter).plan_tasks())


def test_a_point_lookup_opens_one_node_and_answers_as_the_full_read(tmp_path: Path) -> None:
    table = _table(tmp_path)
    everything = {row[0]: row for row in rows_of(table.scan().to_arrow())}
    all_files = _files(table, None)
    for key in (0, 1, 3, 42, 199, 500):  # updated, deleted, updated, plain, plain, never written
        found = rows_of(table.scan(row_filter=EqualTo("id", key)).to_arrow())
        assert found == ([everything[key]] if key in everything else [])
        assert _files(table, EqualTo("id", key)) <= all_files // 8 + 2, key
    keys = {3, 42, 199}
    assert rows_of(table.scan(row_filter=In("id", keys)).to_arrow()) == [everything[k] for k in sorted(keys)]
    assert table.scan(row_filter=f"id = 42 and qty > {everything[42][2] - 1}").to_arrow().num_rows == 1


def test_a_range_or_a_value_filter_prunes_no_node(tmp_path: Path) -> None:
    table = _table(tmp_path)
    all_files = _files(table, None)
    assert _files(table, GreaterThan("id", 100)) == all_files
    assert _files(table, EqualTo("qty", 5)) == all_files


def test_the_pinned_hashes_are_the_writers_key_hashes(tmp_path: Path) -> None:
    iceberg = local_catalog(tmp_path).create_table("db.orders", ORDERS_SCHEMA, primary_key=["id"]).schema()
    arrow = arrow_schema(iceberg)
    found = pinned_key_hashes(In("id", {5, 7}), iceberg, ["id"], arrow)
    assert found is not None
    assert sorted(found.tolist()) == sorted(key_hash([pa.array([5, 7], arrow.field("id").type)]).astype(np.int64).tolist())
    assert pinned_key_hashes(GreaterThan("id", 5), iceberg, ["id"], arrow) is None
    contradiction = pinned_key_hashes(And(EqualTo("id", 5), EqualTo("id", 6)), iceberg, ["id"], arrow)
    assert contradiction is not None
    assert contradiction.size == 0
    assert pinned_key_hashes(In("id", set(range(MOST_KEYS + 1))), iceberg, ["id"], arrow) is None


def test_a_key_whose_type_another_engine_widened_is_not_pruned_by_node(tmp_path: Path) -> None:
    """Files written before an int -> long widening of the key (by an engine that allows it; ours
    refuses) were placed by the int's hash, which differs from the long's for negative keys: no
    pruning then, and the row is found."""
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.string())])
    table = local_catalog(tmp_path).create_table("db.widened", schema, primary_key=["id"], properties=BUCKETS)
    with table.new_transaction(("w", 1)) as txn:
        txn.write(pa.table({"id": pa.array(range(-50, 50), pa.int32()), "v": ["a"] * 100, "_change_action": ["+I"] * 100}))
    assert table.scan(row_filter=EqualTo("id", -7)).key_hashes is not None
    for store in (table.base_store, table.change_store):
        assert store is not None
        with store.update_schema() as update:
            update.update_column("id", field_type=LongType())
    table = table.refresh()
    scan = table.scan(row_filter=EqualTo("id", -7))
    assert scan.key_hashes is None
    assert rows_of(scan.to_arrow()) == [(-7, "a")]
