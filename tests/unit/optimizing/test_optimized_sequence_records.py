"""The optimized sequence survives other engines: Puffin file + summary copy, replace snapshots.

Spark's ``compute_table_stats`` is imitated by replacing a snapshot's statistics file with one
that holds only a theta-sketch blob; tests/integration/test_spark_interop.py runs the real one.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from pyiceberg.table import Table, Transaction
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.statistics import StatisticsFile

from mixed_iceberg import MixedTable
from mixed_iceberg.basestore import optimized_sequence as osq
from mixed_iceberg.basestore.optimized_sequence import (
    BASE_OPTIMIZED_TIME,
    OPTIMIZED_SEQUENCE,
    REPAIRED_FROM,
    SUMMARY_COPY,
    read_optimized_sequence,
    stage_optimized_sequence,
    summary_flags,
)
from mixed_iceberg.exceptions import CorruptTableError, OptimizedSequenceMismatchError
from mixed_iceberg.optimizing.maintenance import TableMaintenance
from mixed_iceberg.store.commit import commit_files
from tests.support.tables import ORDERS_SCHEMA as SCHEMA
from tests.support.tables import changes, local_catalog, rows_of


def _optimized(tmp_path: Path) -> MixedTable:
    """A keyed table after bulk load, one change commit and a minor: the merged view as oracle."""
    table = local_catalog(tmp_path).create_table("db.t", SCHEMA, primary_key=["id"])
    table.bulk_load(changes([("+I", k, "a", k, 1.0) for k in range(20)]).drop_columns(["_change_action"]))
    with table.new_transaction() as txn:
        txn.write(changes([("-U", 1, "a", 1, 1.0), ("+U", 1, "a", 100, 2.0), ("-D", 2, "a", 2, 1.0), ("+I", 50, "b", 5, 5.0)]))
    assert table.optimizing.run("minor").committed
    return table.refresh()


def _replace_statistics(base: Table, blobs: list[tuple[str, bytes]]) -> None:
    """Replace the current snapshot's statistics file, as Spark's compute_table_stats does."""
    snapshot = base.current_snapshot()
    assert snapshot is not None
    data, footer_size, metadata = osq._puffin_bytes(blobs, snapshot.snapshot_id, snapshot.sequence_number or 0)
    path = f"{base.metadata.location}/metadata/{snapshot.snapshot_id}-{uuid.uuid4()}.stats"
    with base.io.new_output(path).create(overwrite=True) as stream:
        stream.write(data)
    statistics = StatisticsFile(
        snapshot_id=snapshot.snapshot_id,
        statistics_path=path,
        file_size_in_bytes=len(data),
        file_footer_size_in_bytes=footer_size,
        blob_metadata=metadata,
    )
    with base.transaction() as txn, txn.update_statistics() as update:
        update.set_statistics(statistics)


SKETCH = ("apache-datasketches-theta-v1", b"\x01\x02")


def test_optimizing_commits_a_replace_snapshot_carrying_both_records(tmp_path: Path) -> None:
    table = _optimized(tmp_path)
    base = table.base_store
    snapshot = base.current_snapshot()
    assert snapshot is not None
    assert snapshot.summary is not None
    assert snapshot.summary.operation == Operation.REPLACE
    assert snapshot.summary["changed-partition-count"] == "1"  # as Iceberg Java counts an unpartitioned table
    assert {k: snapshot.summary[k] for k in summary_flags()} == summary_flags()
    sequences = read_optimized_sequence(base, snapshot)
    assert json.loads(snapshot.summary[SUMMARY_COPY[OPTIMIZED_SEQUENCE]] or "") == sequences == {"": 1}
    times = read_optimized_sequence(base, snapshot, BASE_OPTIMIZED_TIME)
    assert json.loads(snapshot.summary[SUMMARY_COPY[BASE_OPTIMIZED_TIME]] or "") == times
    (statistics,) = [s for s in base.metadata.statistics if s.snapshot_id == snapshot.snapshot_id]
    assert {b.sequence_number for b in statistics.blob_metadata} == {snapshot.sequence_number}


def test_bulk_load_appends_and_bulk_overwrite_overwrites_with_both_records(tmp_path: Path) -> None:
    table = local_catalog(tmp_path).create_table("db.t", SCHEMA, primary_key=["id"])
    table.bulk_load(changes([("+I", 1, "a", 1, 1.0)]).drop_columns(["_change_action"]))
    appended = table.refresh().base_store.current_snapshot()
    assert appended is not None
    assert appended.summary is not None
    assert appended.summary.operation == Operation.APPEND
    table.bulk_load(changes([("+I", 2, "a", 1, 1.0)]).drop_columns(["_change_action"]), overwrite=True)
    overwritten = table.refresh().base_store.current_snapshot()
    assert overwritten is not None
    assert overwritten.summary is not None
    assert overwritten.summary.operation == Operation.OVERWRITE
    assert json.loads(overwritten.summary[SUMMARY_COPY[OPTIMIZED_SEQUENCE]] or "") == {"": 0}


def test_replaced_statistics_file_falls_back_to_the_summary_copy_and_the_next_minor_repairs(tmp_path: Path) -> None:
    table = _optimized(tmp_path)
    merged = rows_of(table.scan().to_arrow())
    _replace_statistics(table.base_store, [SKETCH])
    table = table.refresh()
    base = table.base_store
    assert read_optimized_sequence(base, base.current_snapshot()) == {"": 1}
    assert rows_of(table.scan().to_arrow()) == merged
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 60, "c", 6, 6.0)]))
    assert table.optimizing.run("minor").committed
    table = table.refresh()
    base = table.base_store
    assert rows_of(table.scan().to_arrow()) == sorted([*merged, (60, "c", 6, 6.0)])
    assert rows_of(base.scan().to_arrow()) == rows_of(table.scan().to_arrow()), "no change row merged twice"
    snapshot = base.current_snapshot()
    assert snapshot is not None
    (statistics,) = [s for s in base.metadata.statistics if s.snapshot_id == snapshot.snapshot_id]
    assert {b.type for b in statistics.blob_metadata} == {OPTIMIZED_SEQUENCE, BASE_OPTIMIZED_TIME}
    assert osq._puffin_blob(base, base.metadata, snapshot.snapshot_id, OPTIMIZED_SEQUENCE)[0] == {"": 2}


def test_puffin_blob_that_disagrees_with_the_summary_copy_raises(tmp_path: Path) -> None:
    table = _optimized(tmp_path)
    _replace_statistics(table.base_store, [(OPTIMIZED_SEQUENCE, b'{"": 0}'), (BASE_OPTIMIZED_TIME, b'{"": 0}'), SKETCH])
    table = table.refresh()
    with pytest.raises(OptimizedSequenceMismatchError, match=r"expected its optimized-sequence Puffin blob to equal"):
        table.scan().to_arrow()
    with pytest.raises(OptimizedSequenceMismatchError):
        table.optimizing.run("minor")


def _flag_without_copy(table: MixedTable, sequence: int) -> None:
    """A flagged snapshot whose only record is its Puffin file (as Amoro writes them)."""

    def stage(txn: Transaction, snapshot_id: int) -> None:
        data, footer, blobs = osq._puffin_bytes(
            [(OPTIMIZED_SEQUENCE, json.dumps({"": sequence}).encode()), (BASE_OPTIMIZED_TIME, b'{"": 0}')],
            snapshot_id,
            0,
        )
        path = f"{txn.table_metadata.location}/data/puffin/{snapshot_id}-{uuid.uuid4()}.puffin"
        with txn._table.io.new_output(path).create() as stream:
            stream.write(data)
        with txn.update_statistics() as update:
            update.set_statistics(
                StatisticsFile(
                    snapshot_id=snapshot_id,
                    statistics_path=path,
                    file_size_in_bytes=len(data),
                    file_footer_size_in_bytes=footer,
                    blob_metadata=blobs,
                )
            )

    commit_files(table.base_store, added=[], summary=summary_flags(), stage=stage)


def test_puffin_only_record_is_read_and_its_loss_raises_rather_than_reading_never_optimized(tmp_path: Path) -> None:
    table = _optimized(tmp_path)
    _flag_without_copy(table, 1)
    table = table.refresh()
    merged = rows_of(table.scan().to_arrow())
    assert read_optimized_sequence(table.base_store, table.base_store.current_snapshot()) == {"": 1}
    _replace_statistics(table.base_store, [SKETCH])
    table = table.refresh()
    with pytest.raises(OptimizedSequenceMismatchError, match=r"found neither"):
        table.scan().to_arrow()
    with pytest.raises(OptimizedSequenceMismatchError):
        table.optimizing.plan("minor")
    assert merged  # the table was readable before its only record was lost


def test_unparsable_summary_copy_is_a_corrupt_table(tmp_path: Path) -> None:
    table = _optimized(tmp_path)

    def stage(txn: Transaction, snapshot_id: int) -> None:
        stage_optimized_sequence(txn, snapshot_id, {"": 1}, {"": 0})

    commit_files(
        table.base_store,
        added=[],
        summary={**summary_flags()},
        stage=stage,
    )
    base = table.refresh().base_store
    snapshot = base.current_snapshot()
    assert snapshot is not None
    assert snapshot.summary is not None
    snapshot.summary[SUMMARY_COPY[OPTIMIZED_SEQUENCE]] = "not json"
    with pytest.raises(CorruptTableError, match=r"expected a JSON object"):
        read_optimized_sequence(base, snapshot)


def test_stage_optimized_sequence_needs_the_snapshot_staged_first(tmp_path: Path) -> None:
    table = _optimized(tmp_path)
    txn = table.base_store.transaction()
    with pytest.raises(ValueError, match=r"expected snapshot 42 staged"):
        stage_optimized_sequence(txn, 42, {"": 1}, {"": 0})


def test_summary_copy_survives_a_commit_retried_after_a_concurrent_commit(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    table = catalog.create_table("db.t", SCHEMA, primary_key=["id"])
    raced = {"n": 0}

    def stage(txn: Transaction, snapshot_id: int) -> None:
        stage_optimized_sequence(txn, snapshot_id, {"": 7}, {"": 0})
        if not raced["n"]:  # a concurrent commit lands before ours: ours is rebuilt and retried
            raced["n"] += 1
            commit_files(catalog.load_table("db.t").base_store, added=[], summary={"concurrent": "yes"})

    outcome = commit_files(table.base_store, added=[], summary=summary_flags(), stage=stage, operation=Operation.REPLACE)
    base = table.refresh().base_store
    snapshot = base.current_snapshot()
    assert snapshot is not None
    assert snapshot.summary is not None
    assert snapshot.parent_snapshot_id is not None
    assert snapshot.snapshot_id == outcome.snapshot_id
    parent = base.metadata.snapshot_by_id(snapshot.parent_snapshot_id)
    assert parent is not None
    assert parent.summary is not None
    assert parent.summary["concurrent"] == "yes"
    assert snapshot.summary[SUMMARY_COPY[OPTIMIZED_SEQUENCE]] == '{"":7}'
    assert read_optimized_sequence(base, snapshot) == {"": 7}


def test_repair_puts_the_optimized_sequence_back_into_a_puffin_file_once(tmp_path: Path) -> None:
    table = _optimized(tmp_path)
    maintenance = TableMaintenance(table.refreshed)
    assert maintenance.repair_optimized_sequence() is None, "nothing to repair yet"
    merged = rows_of(table.scan().to_arrow())
    replaced = table.base_store.current_snapshot()
    assert replaced is not None
    _replace_statistics(table.base_store, [SKETCH])
    repaired = maintenance.repair_optimized_sequence()
    assert repaired is not None
    base = table.refresh().base_store
    snapshot = base.current_snapshot()
    assert snapshot is not None
    assert snapshot.snapshot_id == repaired
    assert snapshot.summary is not None
    assert snapshot.summary.operation == Operation.REPLACE
    assert snapshot.summary[REPAIRED_FROM] == str(replaced.snapshot_id)
    assert osq._puffin_blob(base, base.metadata, repaired, OPTIMIZED_SEQUENCE)[0] == {"": 1}
    (sketches,) = [s for s in base.metadata.statistics if s.snapshot_id == replaced.snapshot_id]
    assert {b.type for b in sketches.blob_metadata} == {SKETCH[0]}, "the other engine's statistics stay"
    assert rows_of(table.refresh().scan().to_arrow()) == merged
    assert maintenance.repair_optimized_sequence() is None, "idempotent"


def test_repair_without_a_copy_raises(tmp_path: Path) -> None:
    table = _optimized(tmp_path)
    _flag_without_copy(table, 1)
    _replace_statistics(table.refresh().base_store, [SKETCH])
    with pytest.raises(OptimizedSequenceMismatchError):
        TableMaintenance(table.refreshed).repair_optimized_sequence()


def test_flagged_snapshot_expired_by_another_engine_raises_instead_of_reading_merged_rows_again(tmp_path: Path) -> None:
    """Spark's expire_snapshots keeps no Mixed-Iceberg snapshot: once the flagged one is gone the
    table used to read as never optimized (merged change rows came back as duplicates)."""
    from mixed_iceberg.basestore.optimized_sequence import OPTIMIZED_SINCE

    table = local_catalog(tmp_path).create_table("db.expired", SCHEMA, primary_key=["id"])
    table.bulk_load(changes([("+I", 1, "a", 1, 1.0)]).drop_columns(["_change_action"]))
    with table.new_transaction() as txn:
        txn.write(changes([("+I", 1, "b", 2, 2.0)]))
    table.optimizing.run("minor")
    base = table.refresh().base_store
    assert OPTIMIZED_SINCE in base.properties
    flagged = base.current_snapshot()
    assert flagged is not None
    base.append(changes([("+I", 9, "z", 9, 9.0)]).drop_columns(["_change_action"]).cast(SCHEMA))  # unflagged
    base.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in base.metadata.snapshots[:-1]]).commit()
    assert base.refresh().metadata.snapshot_by_id(flagged.snapshot_id) is None
    with pytest.raises(OptimizedSequenceMismatchError, match="expired"):
        table.scan().to_arrow()
    with pytest.raises(OptimizedSequenceMismatchError):
        table.optimizing.run("minor")
