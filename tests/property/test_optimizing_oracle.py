"""Optimizing never changes what scan() returns (DESIGN.md invariant 5).

Random CDC is interleaved with random minor/major/full runs; after every step the merged read
must equal a plain replay of the changes, and pyiceberg must still read the BaseStore.
"""

from __future__ import annotations

import itertools
import time
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.manifest import DataFileContent

from mixed_iceberg import MixedTable
from mixed_iceberg.optimizing import key_index_store
from mixed_iceberg.optimizing.key_index_store import CACHE, INDEX_FOLDER
from mixed_iceberg.optimizing.maintenance.facade import TableMaintenance
from mixed_iceberg.store.manifests.live_files import live_files
from tests.property.test_merge_oracle import Row, cdc_histories, replay, upsert_histories
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

_names = itertools.count()


@pytest.mark.parametrize(
    ("partition_by", "target_size", "max_task"),
    [(None, None, None), (None, "1024", None), (["cat"], "1024", None), (None, "1024", "1")],
    ids=["fragments-rewritten", "segments-get-position-deletes", "partitioned-segments", "tasks-split-by-node"],
)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    history=cdc_histories(),
    runs=st.lists(st.sampled_from([None, "minor", "major", "full", "maintenance"]), min_size=1, max_size=6),
)
def test_merged_read_equals_replay_across_optimizing(
    tmp_path: Path,
    partition_by: list[str] | None,
    target_size: str | None,
    max_task: str | None,
    history: tuple[list[Row], list[list[Row]]],
    runs: list[str | None],
) -> None:
    _check_across_optimizing(tmp_path, partition_by, target_size, history, runs, max_task=max_task)


@pytest.mark.parametrize(
    ("partition_by", "target_size", "max_task"),
    [(None, None, None), (None, "1024", None), (["id"], "1024", None), (["cat"], "1024", None), (None, None, "1")],
    ids=[
        "fragments-rewritten",
        "segments-get-position-deletes",
        "partitioned-by-key",
        "keys-move-between-partitions",
        "tasks-split-by-node",
    ],
)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    history=upsert_histories(),
    runs=st.lists(st.sampled_from([None, "minor", "major", "full", "maintenance"]), min_size=1, max_size=6),
)
def test_upsert_streams_stay_latest_by_key_across_optimizing(
    tmp_path: Path,
    partition_by: list[str] | None,
    target_size: str | None,
    max_task: str | None,
    history: tuple[list[Row], list[list[Row]]],
    runs: list[str | None],
) -> None:
    """+I over existing keys, +U without -U, deletes of absent keys: after every optimizing the
    merged read is still latest-by-key, and the BaseStore itself holds one live row per key."""
    _check_across_optimizing(tmp_path, partition_by, target_size, history, runs, base_unique=True, max_task=max_task)


@pytest.mark.parametrize("index", ["present", "absent", "stale", "corrupted", "off"])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    history=upsert_histories(),
    runs=st.lists(st.sampled_from([None, "minor", "major", "minor", "maintenance"]), min_size=1, max_size=6),
)
def test_the_merged_read_is_the_same_whatever_state_the_key_indexes_are_in(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    index: str,
    history: tuple[list[Row], list[list[Row]]],
    runs: list[str | None],
) -> None:
    """Segment key indexes are a cache: before every optimizing the indexes are left alone
    (present), deleted (absent), swapped between files (stale), damaged (corrupted), or the
    table does not use them (off); the merged read equals the replay in every case."""
    monkeypatch.setattr(key_index_store, "PERSIST_MIN_ROWS", 0)  # every index gets its file
    _check_across_optimizing(tmp_path, None, "1024", history, runs, base_unique=True, index=index)
    _check_across_optimizing(tmp_path, ["cat"], "1024", history, runs, base_unique=True, index=index)


def _tamper_with_key_indexes(table: MixedTable, how: str) -> None:
    """Put the table's key indexes in state ``how`` (see the test above); the process cache is emptied."""
    CACHE.clear()
    folder = Path(table.base_store.metadata.location.removeprefix("file://")) / INDEX_FOLDER
    files = sorted(folder.rglob("*.keys")) if folder.exists() else []
    if how == "absent":
        for file in files:
            file.unlink()
    elif how == "stale":  # each file holds another file's index
        contents = [f.read_bytes() for f in files]
        for file, data in zip(files, contents[1:] + contents[:1], strict=True):
            file.write_bytes(data)
    elif how == "corrupted":  # a byte flipped in the body, or the file cut short
        for number, file in enumerate(files):
            data = bytearray(file.read_bytes())
            if number % 2:
                data[len(data) // 2 + 1] ^= 0xFF
            else:
                del data[len(data) // 3 :]
            file.write_bytes(bytes(data))


def _check_across_optimizing(
    tmp_path: Path,
    partition_by: list[str] | None,
    target_size: str | None,
    history: tuple[list[Row], list[list[Row]]],
    runs: list[str | None],
    *,
    base_unique: bool = False,
    max_task: str | None = None,
    index: str = "present",
) -> None:
    initial, txns = history
    properties = {"self-optimizing.target-size": target_size} if target_size else {}
    if index == "off":
        properties["self-optimizing.key-index.enabled"] = "false"
    if max_task:  # every task split as far as its files' tree nodes allow
        properties["self-optimizing.max-task-size-bytes"] = max_task
    table = local_catalog(tmp_path / "c").create_table(
        f"db.o{next(_names)}", ORDERS_SCHEMA, primary_key=["id"], partition_by=partition_by, properties=properties
    )
    if initial:
        table.bulk_load(changes(initial).drop_columns(["_change_action"]))
    done: list[list[Row]] = []
    for step, ops in enumerate(txns):
        if ops:
            with table.new_transaction(("oracle", step)) as txn:
                txn.write(changes(ops))
        done.append(ops)
        kind = runs[step % len(runs)]
        if kind == "maintenance":
            # expire everything old, drop merged change files, clean orphans with no safety window
            maintenance = TableMaintenance(table.refreshed, clock=lambda: time.time() + 10**7)
            maintenance.expire_snapshots()
            maintenance.expire_change_data()
            maintenance.rewrite_manifests()
            maintenance.clean_orphan_files(older_than=timedelta(0))
        else:
            if index != "present":
                _tamper_with_key_indexes(table, index)
            table.optimizing.run(kind or "minor")
        expected = replay(initial, done)
        assert rows_of(table.scan().to_arrow()) == expected, f"after {kind} optimizing at step {step}"
        base_keys = table.refresh().base_store.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()
        assert len(base_keys) == len(set(base_keys)), "pyiceberg reads the BaseStore: at most one live row per key"
    table.optimizing.run("full")
    assert rows_of(table.scan().to_arrow()) == replay(initial, done)
    if base_unique:
        assert rows_of(table.refresh().base_store.scan().to_arrow()) == replay(initial, done), "Java readers agree after full"
    base = table.refresh().base_store
    contents = {f.data_file.content for f in live_files(base, base.current_snapshot())}
    assert contents <= {DataFileContent.DATA}, "full optimizing leaves no delete files"
    assert table.optimizing.plan("minor") == [], "after full optimizing nothing is left to merge"
