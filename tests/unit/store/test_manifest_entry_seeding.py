"""A committed row delta seeds the manifest entry cache with exactly what a read of its manifests gives.

The optimizer's next plan reads the entries of the manifests its last commit wrote from the
cache (live_files), so a seeded entry that differed from the file (a sequence number, a spec
id, a status) would plan on wrong metadata. Each test compares the cache with a fresh read
of every manifest of the committed snapshot, field by field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyiceberg.manifest import ManifestEntry
from pyiceberg.table import Table

from mixed_iceberg._pyiceberg.transaction import GuardedTransaction
from mixed_iceberg.store.manifests import live_files as live_files_module
from mixed_iceberg.store.manifests.live_files import live_files
from mixed_iceberg.store.rewrite import stage_rewrite
from tests.support.iceberg_files import Row, commit, data_file, new_table, pos_deletes

ROWS_A: list[Row] = [(i, "x", "a", i) for i in range(6)]
ROWS_B: list[Row] = [(i, "x", "b", i) for i in range(6)]


def _fields(entry: ManifestEntry) -> tuple[Any, ...]:
    f = entry.data_file
    return (int(entry.status), entry.snapshot_id, entry.sequence_number, entry.file_sequence_number, f.spec_id, *f._data)


def _seeded_and_read(table: Table) -> list[tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]]:
    """For each manifest of the current snapshot the cache holds: (cached, as read from the file)."""
    snapshot = table.current_snapshot()
    assert snapshot is not None
    pairs = []
    for manifest in snapshot.manifests(table.io):
        cached = live_files_module._CACHE.peek(manifest.manifest_path)
        if cached is not None:
            read = manifest.fetch_manifest_entry(table.io, discard_deleted=True)
            pairs.append(([_fields(e) for e in cached], [_fields(e) for e in read]))
    return pairs


def _guarded_rewrite(table: Table, **files: Any) -> None:
    txn = GuardedTransaction(table)
    stage_rewrite(txn, **files)
    txn.commit_transaction()


def test_a_row_delta_seeds_its_rewritten_and_added_manifests_as_a_read_gives_them(tmp_path: Path) -> None:
    table = new_table(tmp_path, partitioned=True)
    a, b = data_file(table, ROWS_A), data_file(table, ROWS_B)
    commit(table, add_data=[a, b])
    live_files_module._CACHE.clear()
    # Removes a (its manifest is rewritten, b carried as EXISTING), adds data and a delete file.
    _guarded_rewrite(table, remove_data=[a], add_data=[data_file(table, ROWS_A)], add_deletes=[pos_deletes(table, [(b, 1)])])
    pairs = _seeded_and_read(table)
    assert len(pairs) == 3  # the rewritten manifest, the added data and the added deletes
    for cached, read in pairs:
        assert cached == read


def test_merged_manifests_are_seeded_as_a_read_gives_them(tmp_path: Path) -> None:
    table = new_table(tmp_path, partitioned=True)
    with table.transaction() as txn:
        txn.set_properties({"commit.manifest.min-count-to-merge": "2", "commit.manifest-merge.enabled": "true"})
    files = [data_file(table, rows) for rows in (ROWS_A, ROWS_B, ROWS_A)]
    for f in files:
        commit(table, add_data=[f])
    live_files_module._CACHE.clear()
    _guarded_rewrite(table, remove_data=[files[0]], add_data=[data_file(table, ROWS_B)])
    snapshot = table.current_snapshot()
    assert snapshot is not None
    assert len(snapshot.manifests(table.io)) == 1  # everything merged into one manifest
    (cached, read), *_ = _seeded_and_read(table)
    assert cached == read
    assert len(read) == 3


def test_a_retried_row_delta_seeds_the_manifests_of_the_attempt_that_landed(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    a = data_file(table, ROWS_A)
    commit(table, add_data=[a])
    txn = GuardedTransaction(table)
    stage_rewrite(txn, add_deletes=[pos_deletes(table, [(a, 5)])])
    commit(table.catalog.load_table(table.name()), add_data=[data_file(table, ROWS_B)])  # the race
    live_files_module._CACHE.clear()
    txn.commit_transaction()  # fails once, rebuilt on the new head, lands
    pairs = _seeded_and_read(table)
    assert len(pairs) == 1  # only the delete manifest this commit wrote; the concurrent one is read as usual
    assert pairs[0][0] == pairs[0][1]
    assert sorted(f.data_file.record_count for f in live_files(table, table.current_snapshot())) == [1, 6, 6]
