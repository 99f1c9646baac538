"""Streaming reads and merge tasks return what ``to_arrow()`` returns: random upsert streams
over tables whose files sit in several tree nodes (base and change buckets differ), with and
without optimizing between commits, partitioned by key, by a column a key moves across, or not.

Protects the grouping of :mod:`mixed_iceberg.reader.groups`: a group that missed a file of one
of its keys would return an old row of the key, or a deleted one, next to its latest.
"""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixed_iceberg.reader.tasks import execute_task
from tests.property.test_merge_oracle import Row, replay, upsert_histories
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

_names = itertools.count()


@pytest.mark.parametrize(
    "partition_by", [None, ["id"], ["cat"]], ids=["unpartitioned", "partitioned-by-key", "partitioned-by-moving-cat"]
)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    history=upsert_histories(),
    buckets=st.sampled_from([(1, 4), (4, 2), (2, 8)]),
    optimize_after=st.sets(st.integers(0, 4), max_size=2),
)
def test_batch_reader_and_tasks_equal_replay(
    tmp_path: Path,
    partition_by: list[str] | None,
    history: tuple[list[Row], list[list[Row]]],
    buckets: tuple[int, int],
    optimize_after: set[int],
) -> None:
    initial, txns = history
    base_buckets, change_buckets = buckets
    table = local_catalog(tmp_path / "cat").create_table(
        f"db.s{next(_names)}",
        ORDERS_SCHEMA,
        primary_key=["id"],
        partition_by=partition_by,
        properties={
            "base.file-index.hash-bucket": str(base_buckets),
            "change.file-index.hash-bucket": str(change_buckets),
        },
    )
    if initial:
        table.bulk_load(changes(initial).drop_columns(["_change_action"]))
    for number, ops in enumerate(txns):
        if ops:
            with table.new_transaction(("oracle", number)) as txn:
                txn.write(changes(ops))
        if number in optimize_after:
            table.optimizing.run("minor" if number % 2 else "major")
    expected = replay(initial, txns)
    scan = table.scan()
    assert rows_of(scan.to_arrow_batch_reader().read_all()) == expected
    assert scan.count() == len(expected)
    tasks = [pickle.loads(pickle.dumps(task)) for task in scan.plan_tasks()]
    assert sorted(itertools.chain.from_iterable(rows_of(execute_task(task)) for task in tasks)) == expected
    filtered = table.scan(row_filter="qty >= 50", selected_fields=("id", "qty"))
    wanted = sorted((r[0], r[2]) for r in expected if (r[2] or 0) >= 50)
    assert rows_of(filtered.to_arrow_batch_reader().read_all()) == wanted
    assert filtered.count() == len(wanted)
