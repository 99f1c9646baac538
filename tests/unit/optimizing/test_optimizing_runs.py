"""Optimizing runs on real tables: what each type leaves behind, and commit races."""

from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.manifest import DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record

from mixed_iceberg import MixedTable, TableFormat
from mixed_iceberg.basestore.optimized_sequence import read_optimized_sequence
from mixed_iceberg.exceptions import CommitConflictError
from mixed_iceberg.format import parse_base
from mixed_iceberg.optimizing.collect import collect
from mixed_iceberg.optimizing.engine import TableOptimizing
from mixed_iceberg.optimizing.model import OptimizingType
from mixed_iceberg.store.commit import commit_files
from mixed_iceberg.store.manifests.live_files import live_files
from mixed_iceberg.store.rewrite import stage_rewrite
from mixed_iceberg.store.write.data_file import write_data_file
from mixed_iceberg.store.write.position_deletes import write_position_deletes
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of


def _keyed(tmp_path: Path, **props: str) -> MixedTable:
    table = local_catalog(tmp_path).create_table("db.t", ORDERS_SCHEMA, primary_key=["id"], properties=props)
    table.bulk_load(changes([("+I", k, "a", k, 1.0) for k in range(100)]).drop_columns(["_change_action"]))
    return table


def _churn(table: MixedTable, commits: int, start: int = 0) -> None:
    for i in range(start, start + commits):
        with table.new_transaction() as txn:
            txn.write(changes([("-U", i, "a", i, 1.0), ("+U", i, "b", i + 1000, 2.0), ("+I", 1000 + i, "c", 1, 1.0)]))


def _content(table: MixedTable) -> list[int]:
    return table.refresh().base_store.inspect.files().column("content").to_pylist()


def test_minor_merges_change_files_and_advances_the_optimized_sequence(tmp_path: Path) -> None:
    table = _keyed(tmp_path)
    _churn(table, 5)
    before = rows_of(table.scan().to_arrow())
    result = table.optimizing.run("minor")
    assert result.committed
    assert result.type is OptimizingType.MINOR
    assert rows_of(table.scan().to_arrow()) == before
    assert read_optimized_sequence(table.base_store, table.base_store.current_snapshot()) == {"": 5}
    assert table.optimizing.plan("minor") == []


def test_minor_turns_change_deletes_into_position_deletes_on_segments(tmp_path: Path) -> None:
    table = _keyed(tmp_path, **{"self-optimizing.target-size": "1024"})  # every base file is a segment
    _churn(table, 3)
    before = rows_of(table.scan().to_arrow())
    table.optimizing.run("minor")
    assert rows_of(table.scan().to_arrow()) == before
    assert 1 in _content(table), "expected position-delete files on the segments"
    table.optimizing.run("full")
    assert rows_of(table.scan().to_arrow()) == before
    assert set(_content(table)) == {0}, "full optimizing leaves no delete files"


def test_position_deletes_from_a_composite_key_hit_only_rows_with_the_whole_key(tmp_path: Path) -> None:
    props = {"self-optimizing.target-size": "1024"}  # every base file is a segment
    table = local_catalog(tmp_path).create_table("db.c", ORDERS_SCHEMA, primary_key=["id", "cat"], properties=props)
    table.bulk_load(
        changes([("+I", k % 50, "a" if k < 50 else "b", k, 1.0) for k in range(100)]).drop_columns(["_change_action"])
    )
    for i in range(3):  # (i, "a") is updated; (i, "b") shares the id and must survive untouched
        with table.new_transaction() as txn:
            txn.write(changes([("-U", i, "a", i, 1.0), ("+U", i, "a", i + 1000, 2.0), ("-D", 40 + i, "b", 90 + i, 1.0)]))
    before = rows_of(table.scan().to_arrow())
    assert len(before) == 97
    table.optimizing.run("minor")
    assert 1 in _content(table), "expected position-delete files on the segments"
    assert rows_of(table.scan().to_arrow()) == before


def test_evaluation_is_idle_on_a_fresh_table_and_pending_after_enough_commits(tmp_path: Path) -> None:
    table = _keyed(tmp_path)
    clock = TableOptimizing(table.refreshed, clock=lambda: 0.0)
    assert clock.evaluate().type is None
    _churn(table, 6)  # 6 commits x (1 I + 1 ED file per touched node) >= 12 small files
    assert TableOptimizing(table.refreshed, clock=lambda: 0.0).evaluate().type is OptimizingType.MINOR


def test_concurrent_change_commits_are_kept_not_merged_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _keyed(tmp_path)
    _churn(table, 2)
    import mixed_iceberg.optimizing.engine as engine

    real_commit = engine.commit_outputs

    def commit_after_a_concurrent_write(*args, **kwargs):  # type: ignore[no-untyped-def]
        _churn(table, 1, start=50)  # lands between planning and the optimizer's commit
        return real_commit(*args, **kwargs)

    monkeypatch.setattr(engine, "commit_outputs", commit_after_a_concurrent_write)
    table.optimizing.run("minor")
    monkeypatch.undo()
    assert read_optimized_sequence(table.base_store, table.base_store.current_snapshot()) == {"": 2}
    rows = {r[0]: r for r in rows_of(table.scan().to_arrow())}
    assert rows[50] == (50, "b", 1050, 2.0)
    assert 1050 in rows
    assert len(rows) == 103
    table.optimizing.run("minor")
    assert len(rows_of(table.scan().to_arrow())) == 103


def test_two_optimizers_one_wins_the_other_replans_cleanly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _keyed(tmp_path)
    _churn(table, 3)
    before = rows_of(table.scan().to_arrow())
    import mixed_iceberg.optimizing.engine as engine

    real_commit = engine.commit_outputs
    calls = {"n": 0}

    def other_optimizer_first(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 1:
            monkeypatch.setattr(engine, "commit_outputs", real_commit)
            other = local_catalog(tmp_path).load_table("db.t")
            assert other.optimizing.run("minor").committed
            monkeypatch.setattr(engine, "commit_outputs", other_optimizer_first)
        return real_commit(*args, **kwargs)

    monkeypatch.setattr(engine, "commit_outputs", other_optimizer_first)
    result = table.optimizing.run("minor")
    monkeypatch.undo()
    assert rows_of(table.scan().to_arrow()) == before
    # It lost the race, re-planned on the winner's snapshot and found nothing left to merge.
    assert (result.committed, result.tasks, result.snapshot_id) == (False, 0, None), result
    assert read_optimized_sequence(table.base_store, table.base_store.current_snapshot()) == {"": 3}


def test_a_run_refreshes_the_table_once_and_retries_as_the_refreshed_properties_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An idle run reloads the table once (a run used to reload it for its retry budget, then
    again to plan); a run that keeps losing its commit tries ``execute.num-retries`` + 1 times,
    the budget read from the refreshed table, and then raises."""
    import mixed_iceberg.optimizing.engine as engine

    table = _keyed(tmp_path)
    refreshes = Counter[str]()

    def counting() -> object:
        refreshes["n"] += 1
        return table.refreshed()

    assert TableOptimizing(counting).run().committed is False  # nothing due yet
    assert refreshes["n"] == 1
    with table.base_store.transaction() as txn:
        txn.set_properties({"self-optimizing.execute.num-retries": "2"})
    _churn(table, 6)
    tries = Counter[str]()

    def losing(*args: object, **kwargs: object) -> object:
        tries["n"] += 1
        raise CommitConflictError("lost the race")

    monkeypatch.setattr(engine, "commit_outputs", losing)
    with pytest.raises(CommitConflictError, match="lost the race"):
        TableOptimizing(table.refreshed).run()
    assert tries["n"] == 3


def test_losing_optimizer_deletes_what_it_wrote(tmp_path: Path) -> None:
    from mixed_iceberg.optimizing.collect import collect
    from mixed_iceberg.optimizing.commit import commit_outputs
    from mixed_iceberg.optimizing.evaluate import evaluate_table
    from mixed_iceberg.optimizing.execute import execute_task
    from mixed_iceberg.optimizing.plan import plan_tasks

    table = _keyed(tmp_path)
    _churn(table, 2)
    collected = collect(table.handle)
    cfg = table.optimizing.config
    evaluation = evaluate_table(table.name, collected.partitions, cfg, keyed=True, now_ms=0, last_full_ms=0)
    tasks = plan_tasks(collected.partitions, evaluation, cfg, keyed=True, requested=OptimizingType.MINOR)
    outputs = [execute_task(table.handle, collected, t, table.writer_identity()) for t in tasks]
    local_catalog(tmp_path).load_table("db.t").optimizing.run("minor")  # the winner
    with pytest.raises(CommitConflictError, match="optimiz"):
        commit_outputs(table.handle, OptimizingType.MINOR, outputs, 0)
    written = [f.file_path.removeprefix("file://") for o in outputs for f in o.added_data]
    assert written
    assert not any(Path(p).exists() for p in written)


def _plain_with_deletes(tmp_path: Path) -> MixedTable:
    """200 one-row appends, then position deletes on 20 files and an equality delete (as Flink writes)."""
    table = local_catalog(tmp_path).create_table("db.plain", ORDERS_SCHEMA, table_format=TableFormat.ICEBERG)
    store = table.base_store
    for i in range(200):  # one commit per row, as a trickle of tiny appends
        row = pa.table({"id": pa.array([i], pa.int64()), "cat": ["x"], "qty": pa.array([i], pa.int32()), "price": [1.0]})
        path = f"{store.location()}/data/tiny-{i:03d}.parquet"
        tiny = write_data_file(store.io, path, row, store.schema(), spec_id=0, partition=Record(), properties=store.properties)
        commit_files(store, added=[tiny])  # a plain fast append (pyiceberg's own append is ~10x slower)
    files = store.inspect.files().to_pylist()
    live = {f.data_file.file_path: f.data_file for f in live_files(store, store.current_snapshot())}
    id_of = {path: struct.unpack("<q", f.lower_bounds[1])[0] for path, f in live.items()}
    targets = sorted(path for path, key in id_of.items() if key < 20)  # the files of ids 0..19
    pos = write_position_deletes(
        store.io,
        f"{store.location()}/data/pos-1.parquet",
        pa.array(targets),
        pa.array([0] * len(targets), pa.int64()),
        spec_id=0,
        partition=Record(),
        properties=store.properties,
    )
    key_schema = Schema(store.schema().find_field("id"))
    eq = write_data_file(
        store.io,
        f"{store.location()}/data/eq-1.parquet",
        pa.table({"id": pa.array([150, 151, 999], pa.int64())}),
        key_schema,
        spec_id=0,
        partition=Record(),
        properties=store.properties,
        content=DataFileContent.EQUALITY_DELETES,
        equality_ids=[store.schema().find_field("id").field_id],
    )
    with store.transaction() as txn:
        stage_rewrite(txn, add_deletes=[pos, eq])
    assert len(files) == 200
    return table


def test_plain_iceberg_table_with_tiny_appends_and_deletes_compacts_to_one_clean_file(tmp_path: Path) -> None:
    table = _plain_with_deletes(tmp_path)
    before = rows_of(table.scan().to_arrow())
    assert len(before) == 200 - 20 - 2
    assert {r[0] for r in before}.isdisjoint({150, 151})
    result = table.optimizing.run()
    assert result.committed
    assert _content(table) == [0], "one data file, no delete file left"
    assert rows_of(table.scan().to_arrow()) == before
    assert rows_of(table.base_store.scan().to_arrow()) == before  # pyiceberg itself reads it again


def test_plain_iceberg_table_of_tiny_appends_compacts(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    table = catalog.create_table("db.plain", ORDERS_SCHEMA, table_format=TableFormat.ICEBERG)
    for i in range(30):
        table.base_store.append(
            pa.table(
                {"id": pa.array([i], pa.int64()), "cat": ["x"], "qty": pa.array([i], pa.int32()), "price": [1.0]},
                schema=table.arrow_schema(),
            )
        )
    before = rows_of(table.scan().to_arrow())
    result = table.optimizing.run()
    assert result.type is OptimizingType.MINOR
    assert len(_content(table)) == 1
    assert rows_of(table.scan().to_arrow()) == before


def test_filter_property_limits_optimizing_to_matching_partitions(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table(
        "db.p", ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"], properties={"self-optimizing.filter": "cat = 'a'"}
    )
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "a", 1, 1.0), ("+I", 2, "b", 2, 2.0)]))
    tasks = table.optimizing.plan("minor")
    assert [t.partition for t in tasks] == ["cat=a"]
    table.optimizing.run("minor")
    assert read_optimized_sequence(table.base_store, table.base_store.current_snapshot()) == {"cat=a": 1}
    assert rows_of(table.scan().to_arrow()) == [(1, "a", 1, 1.0), (2, "b", 2, 2.0)]


def test_bad_filter_property_is_a_property_error(tmp_path: Path) -> None:
    from mixed_iceberg.exceptions import PropertyError

    with pytest.raises(PropertyError, match=r"self-optimizing\.filter"):  # refused at create (see core/test_validation.py)
        local_catalog(tmp_path).create_table(
            "db.p", ORDERS_SCHEMA, primary_key=["id"], properties={"self-optimizing.filter": "cat = = 'a'"}
        )


def test_min_plan_interval_holds_automatic_runs_but_not_forced_ones(tmp_path: Path) -> None:
    table = _keyed(tmp_path, **{"self-optimizing.min-plan-interval": "3600000"})
    _churn(table, 13)
    assert table.optimizing.run().committed  # never optimized: not held
    _churn(table, 13, start=20)
    assert table.optimizing.evaluate().type is OptimizingType.MINOR
    assert not table.optimizing.run().committed  # within the hour: held
    assert table.optimizing.run("minor").committed  # forced: runs


def test_repeated_minor_runs_do_not_pile_up_manifests(tmp_path: Path) -> None:
    # Minor runs append fragments and position-delete files; their commits merge small
    # manifests once a (content, spec) group reaches commit.manifest.min-count-to-merge, and
    # never carry forward manifests whose entries are all DELETED.
    table = _keyed(tmp_path, **{"commit.manifest.min-count-to-merge": "4"})
    for round_no in range(8):
        _churn(table, 2, start=round_no * 2)
        before = rows_of(table.scan().to_arrow())
        table.optimizing.run("minor")
        assert rows_of(table.scan().to_arrow()) == before
    base = table.refresh().base_store
    manifests = base.current_snapshot().manifests(base.io)  # type: ignore[union-attr]
    by_content = Counter(m.content for m in manifests)
    assert max(by_content.values()) < 4, f"{by_content} manifests for {len(_content(table))} live files"
    assert all(m.has_added_files() or m.has_existing_files() for m in manifests)


def test_full_optimizing_retires_a_position_delete_a_key_move_left_in_a_partition_without_change(tmp_path: Path) -> None:
    """A key moving from partition b to a: the minor that merges it leaves a position delete on
    b's file, whose transaction id (the cut of an earlier run) is newer than b's own optimized
    sequence (b never had change). Full optimizing used to skip the file for that reason and
    left the delete file behind for good (found by the optimizing oracle)."""
    table = local_catalog(tmp_path).create_table(
        "db.moves", ORDERS_SCHEMA, primary_key=["id"], partition_by=["cat"], properties={"self-optimizing.target-size": "1024"}
    )
    table.bulk_load(changes([("+I", 1, "b", 0, 1.5)]).drop_columns(["_change_action"]))
    with table.new_transaction(("w", 1)) as txn:
        txn.write(changes([("+I", 0, "a", 0, 0.0)]))
    table.optimizing.run("full")
    with table.new_transaction(("w", 2)) as txn:
        txn.write(changes([("+I", 1, "a", 0, 0.0)]))
    table.optimizing.run("minor")
    base = table.refresh().base_store
    assert DataFileContent.POSITION_DELETES in {f.data_file.content for f in live_files(base, base.current_snapshot())}

    table.optimizing.run("full")
    base = table.refresh().base_store
    assert {f.data_file.content for f in live_files(base, base.current_snapshot())} == {DataFileContent.DATA}
    assert rows_of(table.scan().to_arrow()) == rows_of(base.scan().to_arrow()) == [(0, "a", 0, 0.0), (1, "a", 0, 0.0)]
    assert table.optimizing.plan("full") == []


def _position_delete_targets(table: MixedTable) -> dict[str, Counter[str]]:
    """Each live position-delete file of the BaseStore: how many rows it holds of each data file (read with pyarrow)."""
    files = table.refresh().base_store.inspect.files()
    found = {}
    for path, content in zip(files.column("file_path").to_pylist(), files.column("content").to_pylist(), strict=True):
        if content == DataFileContent.POSITION_DELETES.value:
            found[path] = Counter(pq.read_table(path, columns=["file_path"]).column("file_path").to_pylist())
    return found


def test_a_minor_writes_one_position_delete_file_per_tree_node_and_segments_count_only_their_own_rows(
    tmp_path: Path,
) -> None:
    table = _keyed(tmp_path, **{"self-optimizing.target-size": "1024"})  # every base file is a segment
    _churn(table, 20)  # 20 inserts of new keys: 40 one-key fragments, 10 per node
    table.optimizing.run("minor")
    with table.new_transaction() as txn:  # update every new key: 40 segments hit
        txn.write(changes([(a, 1000 + k, "c", 1, 1.0) for k in range(20) for a in ("-U", "+U")]))
    before = rows_of(table.scan().to_arrow())
    seen = set(_position_delete_targets(table))
    table.optimizing.run("minor")
    assert rows_of(table.scan().to_arrow()) == before
    written = {p: targets for p, targets in _position_delete_targets(table).items() if p not in seen}
    nodes = {p: {parse_base(t).node for t in targets} for p, targets in written.items()}
    assert all(len(n) == 1 for n in nodes.values()), "a position-delete file holds rows of one tree node"
    assert len(written) == len(set().union(*nodes.values())) == 4, "expected one file per tree node, not per segment"
    assert sum(len(targets) for targets in written.values()) == 20
    # Each segment is charged its own deleted rows only, not the shared files' totals.
    held = _position_delete_targets(table)
    for segment in collect(table).partitions[0].base:
        assert segment.pos_delete_records == sum(held[p][segment.path] for p in segment.pos_delete_files)
        assert all(held[p][segment.path] for p in segment.pos_delete_files)


def _keys_by_data_file(table: MixedTable) -> dict[str, list[int]]:
    files = table.refresh().base_store.inspect.files()
    paths = [p for p, c in zip(files.column("file_path").to_pylist(), files.column("content").to_pylist(), strict=True) if c == 0]
    return {p: pq.read_table(p, columns=["id"]).column("id").to_pylist() for p in paths}


def _update(table: MixedTable, keys: list[int]) -> None:
    with table.new_transaction() as txn:
        txn.write(changes([(a, k, "u", k, 1.0) for k in keys for a in ("-U", "+U")]))


def test_a_shared_position_delete_file_is_retired_when_its_last_live_data_file_is_rewritten(tmp_path: Path) -> None:
    table = _keyed(tmp_path, **{"self-optimizing.target-size": "1024"})  # every base file is a segment
    _churn(table, 20)
    table.optimizing.run("minor")
    table.optimizing.run("major")  # the loaded segments, a quarter deleted, are rewritten clean
    keys = _keys_by_data_file(table)
    big = max(keys, key=lambda p: len(keys[p]))
    node = parse_base(big).node
    small = next(p for p, ids in keys.items() if len(ids) == 1 and ids[0] >= 1000 and parse_base(p).node == node)
    assert len(keys[big]) >= 11  # one deleted row stays under the 10 % duplicate ratio
    _update(table, [keys[small][0], keys[big][0]])
    before = rows_of(table.scan().to_arrow())
    table.optimizing.run("minor")
    (shared,) = [p for p, held in _position_delete_targets(table).items() if set(held) == {big, small}]
    table.optimizing.run("major")  # rewrites the one-row file (all deleted), not the big one
    live = _keys_by_data_file(table)
    assert small not in live
    assert big in live
    assert shared in _position_delete_targets(table)
    _update(table, keys[big][1:3])  # now the big segment is over the ratio too
    table.optimizing.run("minor")
    table.optimizing.run("major")
    assert big not in _keys_by_data_file(table)
    assert shared not in _position_delete_targets(table), "a file holding rows of rewritten files only must go"
    after = rows_of(table.scan().to_arrow())
    assert len(after) == len(before)


def test_shared_position_delete_files_are_retired_once_no_live_file_needs_them(tmp_path: Path) -> None:
    table = _keyed(tmp_path, **{"self-optimizing.target-size": "1024"})
    _churn(table, 12)
    for round_ in range(8):  # hot keys: combines, majors and position deletes of rewritten files
        table.optimizing.run("minor")
        for i in range(2):
            with table.new_transaction() as txn:
                keys = [1000 + (k + round_ + i) % 12 for k in range(0, 12, 2)]
                txn.write(changes([(a, k, "h", round_, 1.0) for k in keys for a in ("-U", "+U")]))
        before = rows_of(table.scan().to_arrow())
        table.optimizing.run("major" if round_ % 3 == 2 else "minor")
        assert rows_of(table.scan().to_arrow()) == before
        live = set(table.base_store.inspect.files().column("file_path").to_pylist())
        for path, targets in _position_delete_targets(table).items():
            assert set(targets) & live, f"{path} holds rows of rewritten files only: it should have been retired"
    table.optimizing.run("full")
    assert set(_content(table)) == {0}


def test_a_disabled_table_is_not_collected_by_automatic_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _keyed(tmp_path, **{"self-optimizing.enabled": "false"})
    _churn(table, 3)

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("collected a disabled table")

    monkeypatch.setattr("mixed_iceberg.optimizing.engine.collect", refuse)
    assert not table.optimizing.run().committed  # every commit of a streaming writer asks; it costs nothing
    monkeypatch.undo()
    assert table.optimizing.run("minor").committed  # a requested type still runs


def test_collect_reuses_the_base_store_state_until_its_metadata_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Planning after each ChangeStore commit reads the BaseStore's files once per BaseStore
    version; a commit or a property change to the BaseStore is seen at once."""
    from mixed_iceberg.optimizing import collect as collect_module

    table = _keyed(tmp_path)
    built = []
    real = collect_module._base_files
    monkeypatch.setattr(collect_module, "_base_files", lambda *a: built.append(1) or real(*a))
    first = collect(table.refresh())
    _churn(table, 2)  # ChangeStore only
    second = collect(table.refresh())
    assert len(built) == 1
    assert len(second.partitions[0].change) == len(first.partitions[0].change) + 4
    table.optimizing.run("minor")  # a BaseStore commit
    third = collect(table.refresh())
    assert len(built) == 2
    assert third.base_snapshot_id != first.base_snapshot_id
    assert third.partitions[0].change == ()
    with table.base_store.transaction() as txn:  # a property change, same snapshot
        txn.set_properties({"mixed-iceberg.test": "1"})
    collect(table.refresh())
    assert len(built) == 3
