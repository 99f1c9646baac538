"""Segment key indexes: lookups find every row of the probed keys, a bad index is refused, not trusted.

The merge-level guarantee (the merged view whatever state the indexes are in) is the oracle in
tests/property/test_optimizing_oracle.py; these pin the parts it rests on.
"""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from mixed_iceberg import MixedTable
from mixed_iceberg.format.javahash import key_hash
from mixed_iceberg.optimizing import key_index_store
from mixed_iceberg.optimizing.key_index import IndexedFile, SegmentIndex, probe_hashes
from mixed_iceberg.optimizing.key_index_store import INDEX_FOLDER, index_cache, index_location, segment_index
from mixed_iceberg.optimizing.maintenance.facade import TableMaintenance
from mixed_iceberg.store.manifests.live_files import live_files
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

FILE = IndexedFile("s3://bucket/t/data/00001-B-1.parquet", 1234, 6)
KEYS = pa.table({"id": pa.array([5, 3, 9, 3, 7, 1], pa.int64()), "region": ["eu", "us", "eu", "eu", "us", "eu"]})


def test_a_lookup_finds_every_row_of_the_probed_keys_in_position_order() -> None:
    index = SegmentIndex.build(FILE, KEYS)
    probe = probe_hashes([pa.array([3, 7], pa.int64()), pa.array(["eu", "us"])])
    positions, keys = index.find(probe)
    assert positions.tolist() == [3, 4]  # (3, eu) sits at 3, (7, us) at 4; (3, us) hashes otherwise
    assert keys.to_pylist() == [{"id": 3, "region": "eu"}, {"id": 7, "region": "us"}]
    assert index.find(probe_hashes([pa.array([42], pa.int64()), pa.array(["eu"])]))[0].tolist() == []


@pytest.mark.parametrize(
    ("rows", "probes"), [(20_000, 300), (50, 3000), (0, 10), (10, 0)], ids=["big-file", "small-file", "empty-file", "no-probe"]
)
def test_a_lookup_matches_a_brute_force_scan_of_the_hashes(rows: int, probes: int) -> None:
    rng = np.random.default_rng(7)
    ids = rng.integers(0, 5000, rows)
    index = SegmentIndex.build(IndexedFile("f", 1, len(ids)), pa.table({"id": pa.array(ids, pa.int64())}))
    probed = pa.array(rng.integers(0, 5000, probes), pa.int64())
    positions, keys = index.find(probe_hashes([probed]))
    expected = np.flatnonzero(np.isin(key_hash([pa.array(ids, pa.int64())]), key_hash([probed])))
    assert positions.tolist() == expected.tolist()
    assert keys.column("id").to_numpy().tolist() == ids[expected].tolist()
    # Rows a position delete removed are left out, their keys with them.
    dead = rng.random(rows) < 0.3
    positions, keys = index.find(probe_hashes([probed]), dead)
    expected = expected[~dead[expected]]
    assert positions.tolist() == expected.tolist()
    assert keys.column("id").to_numpy().tolist() == ids[expected].tolist()


def test_a_serialized_index_reads_back_for_its_own_file_only() -> None:
    data = SegmentIndex.build(FILE, KEYS).serialize()
    back = SegmentIndex.parse(data, FILE, ["id", "region"])
    assert back is not None
    assert back.find(probe_hashes([pa.array([9], pa.int64()), pa.array(["eu"])]))[0].tolist() == [2]
    # another file's index (stale), another key, damage anywhere: refused, never half-trusted
    assert SegmentIndex.parse(data, IndexedFile(FILE.path, FILE.size + 1, FILE.records), ["id", "region"]) is None
    assert SegmentIndex.parse(data, IndexedFile("s3://bucket/t/data/other.parquet", 1234, 6), ["id", "region"]) is None
    assert SegmentIndex.parse(data, FILE, ["id"]) is None
    for at in (0, 12, len(data) // 2, len(data) - 1):
        damaged = bytearray(data)
        damaged[at] ^= 0x01
        assert SegmentIndex.parse(bytes(damaged), FILE, ["id", "region"]) is None, f"a flipped bit at byte {at}"
    assert SegmentIndex.parse(data[: len(data) // 2], FILE, ["id", "region"]) is None
    assert SegmentIndex.parse(b"", FILE, ["id", "region"]) is None


def test_a_small_files_index_is_only_cached_not_written(tmp_path: Path) -> None:
    table = _table(tmp_path)
    file = _first_data_file(table)
    assert file.records < key_index_store.PERSIST_MIN_ROWS
    cache = index_cache(1 << 20)
    segment_index(table.base_store, file, ["id"], cache=cache)
    assert cache.get(file) is not None
    assert not Path(index_location(table.base_store, file.path).removeprefix("file://")).exists()


def test_the_cache_keeps_to_its_byte_budget_least_recently_used_first() -> None:
    indexes = [SegmentIndex.build(IndexedFile(f"f{i}", 1, 6), KEYS) for i in range(3)]
    cache = index_cache(2 * indexes[0].nbytes)
    cache.put(indexes[0].file, indexes[0])
    cache.put(indexes[1].file, indexes[1])
    assert cache.get(indexes[0].file) is indexes[0]  # now the most recently used
    cache.put(indexes[2].file, indexes[2])
    assert cache.get(indexes[1].file) is None
    assert cache.get(indexes[0].file) is indexes[0]
    assert cache.size <= 2 * indexes[0].nbytes
    too_big = index_cache(indexes[0].nbytes - 1)
    too_big.put(indexes[0].file, indexes[0])
    assert too_big.get(indexes[0].file) is None


def _table(tmp_path: Path) -> MixedTable:
    properties = {"self-optimizing.target-size": "1024", "snapshot.keep.duration": "0min", "snapshot.keep.min-count": "1"}
    table = local_catalog(tmp_path / "c").create_table("db.t", ORDERS_SCHEMA, primary_key=["id"], properties=properties)
    table.bulk_load(changes([("+I", k, "a", k, 1.0) for k in range(300)]).drop_columns(["_change_action"]))
    return table


def _first_data_file(table: MixedTable) -> IndexedFile:
    base = table.refresh().base_store
    entry = next(f for f in live_files(base, base.current_snapshot()) if f.data_file.content.name == "DATA")
    return IndexedFile(entry.data_file.file_path, entry.data_file.file_size_in_bytes, entry.data_file.record_count)


def test_an_index_is_built_once_then_read_from_its_file_and_a_damaged_file_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(key_index_store, "PERSIST_MIN_ROWS", 0)
    table = _table(tmp_path)
    file = _first_data_file(table)
    base = table.base_store
    built = segment_index(base, file, ["id"], cache=index_cache(1 << 20))
    stored = Path(index_location(base, file.path).removeprefix("file://"))
    assert stored.exists()
    assert INDEX_FOLDER in stored.parts

    def no_build(*_: object) -> SegmentIndex:
        raise AssertionError("rebuilt from the data file")

    with monkeypatch.context() as patched:  # a fresh process: read from the index file
        patched.setattr(key_index_store, "_build", no_build)
        again = segment_index(base, file, ["id"], cache=index_cache(1 << 20))
    assert again.positions.tolist() == built.positions.tolist()
    stored.write_bytes(stored.read_bytes()[:-7])  # damaged: rebuilt and written again
    rebuilt = segment_index(base, file, ["id"], cache=index_cache(1 << 20))
    assert rebuilt.positions.tolist() == built.positions.tolist()
    assert SegmentIndex.parse(stored.read_bytes(), file, ["id"]) is not None


def _index_files_of_live_data(table: MixedTable) -> set[Path]:
    base = table.refresh().base_store
    return {
        Path(index_location(base, f.data_file.file_path).removeprefix("file://"))
        for f in live_files(base, base.current_snapshot())
        if f.data_file.content.name == "DATA"
    }


def test_a_minor_uses_the_indexes_and_orphan_cleaning_drops_those_of_files_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(key_index_store, "PERSIST_MIN_ROWS", 0)
    table = _table(tmp_path)
    with table.new_transaction() as txn:
        txn.write(changes([("-U", 7, "a", 7, 1.0), ("+U", 7, "b", 70, 2.0), ("-D", 8, "a", 8, 1.0)]))
    table.optimizing.run("minor")
    folder = Path(table.base_store.metadata.location.removeprefix("file://")) / INDEX_FOLDER
    assert list(folder.rglob("*.keys")), "the minor indexed the segments it probed"
    rows = {r[0]: r for r in rows_of(table.scan().to_arrow())}
    assert 8 not in rows
    assert rows[7][1] == "b"
    before = set(folder.rglob("*.keys"))
    table.optimizing.run("full")  # every segment rewritten: their indexes are orphans now
    maintenance = TableMaintenance(table.refreshed, clock=lambda: time.time() + 10**7)
    maintenance.expire_snapshots()
    maintenance.clean_orphan_files(older_than=timedelta(0))
    after = set(folder.rglob("*.keys"))
    live = _index_files_of_live_data(table)
    assert after <= live, "no index of a file gone is left"
    assert before & live <= after, "the indexes of live files are kept"
    assert before - live, "the full rewrite left orphan indexes to clean"
    assert before - after, "the indexes of the rewritten files are gone"
    with table.new_transaction() as txn:
        txn.write(changes([("-D", 9, "a", 9, 1.0)]))
    table.optimizing.run("minor")
    live = set(folder.rglob("*.keys"))
    assert live
    maintenance = TableMaintenance(table.refreshed, clock=lambda: time.time() + 10**7)
    maintenance.clean_orphan_files(older_than=timedelta(0))
    assert set(folder.rglob("*.keys")) == live, "the indexes of live files stay"


def test_the_files_a_minor_writes_are_indexed_as_written_not_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key_index_store.CACHE.clear()
    table = _table(tmp_path)
    with table.new_transaction() as txn:  # new keys: the minor writes them as new base files
        txn.write(changes([("+I", 1000 + k, "n", k, 1.0) for k in range(40)]))
    table.optimizing.run("minor")

    def refuse(*_: object) -> None:
        raise AssertionError("read a data file back to index it")

    monkeypatch.setattr(key_index_store, "_build", refuse)
    with table.new_transaction() as txn:  # the next minor probes the files the first one wrote
        txn.write(changes([(a, 1000 + k, "u", k, 2.0) for k in range(0, 40, 3) for a in ("-U", "+U")]))
    table.optimizing.run("minor")
    rows = {r[0]: r for r in rows_of(table.scan().to_arrow())}
    assert len(rows) == 340
    assert {rows[1000 + k][1] for k in range(0, 40, 3)} == {"u"}
