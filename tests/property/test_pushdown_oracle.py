"""Predicate pushdown never changes results: a filtered scan equals a full scan then filter.

Guards the rule that value predicates must not filter delete rows (an old version of a
row must never resurface because its delete was filtered away).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from hypothesis import HealthCheck, given, settings

from tests.property.test_merge_oracle import cdc_histories
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

_names = itertools.count()

FILTERS = [
    ("id < 6", ds.field("id") < 6),
    ("id = 3", ds.field("id") == 3),
    ("id in (1, 4, 7)", ds.field("id").isin([1, 4, 7])),
    ("qty > 50", ds.field("qty") > 50),
    ("qty <= 3", ds.field("qty") <= 3),
    ("cat = 'a'", ds.field("cat") == "a"),
    ("id >= 4 and qty > 20", (ds.field("id") >= 4) & (ds.field("qty") > 20)),
    ("id < 5 or cat = 'b'", (ds.field("id") < 5) | (ds.field("cat") == "b")),
    ("price >= 5.0 and cat = 'c'", (ds.field("price") >= 5.0) & (ds.field("cat") == "c")),
]


@pytest.mark.parametrize("partition_by", [None, ["cat"]], ids=["unpartitioned", "partitioned"])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(history=cdc_histories())
def test_filtered_scan_equals_scan_then_filter(tmp_path: Path, partition_by: list[str] | None, history: tuple) -> None:  # type: ignore[type-arg]
    initial, txns = history
    table = local_catalog(tmp_path / "c").create_table(
        f"db.p{next(_names)}", ORDERS_SCHEMA, primary_key=["id"], partition_by=partition_by
    )
    if initial:
        table.bulk_load(changes(initial).drop_columns(["_change_action"]))
    for ops in txns:
        if ops:
            with table.new_transaction() as txn:
                txn.write(changes(ops))
    full = table.scan().to_arrow()
    for text, expr in FILTERS:
        expected = rows_of(full.filter(expr))
        assert rows_of(table.scan(row_filter=text).to_arrow()) == expected, text
        projected = table.scan(row_filter=text, selected_fields=("id", "qty")).to_arrow()
        assert rows_of(projected) == rows_of(full.filter(expr).select(["id", "qty"])), text


def test_value_filter_never_resurrects_old_version(tmp_path: Path) -> None:
    table = local_catalog(tmp_path / "c").create_table("db.r", ORDERS_SCHEMA, primary_key=["id"])
    table.bulk_load(changes([("+I", 1, "a", 5, 1.0)]).drop_columns(["_change_action"]))
    with table.new_transaction() as txn:
        txn.write(changes([("-U", 1, "a", 5, 1.0), ("+U", 1, "a", 7, 1.0)]))
    assert table.scan(row_filter="qty = 5").to_arrow().num_rows == 0
    assert pc.sum(table.scan(row_filter="qty = 7").to_arrow().column("qty")).as_py() == 7
