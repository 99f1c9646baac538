"""A damaged table says so: every kind of damage to its files raises ``CorruptTableError`` naming
the table and the file, from every entry point that reads the file, and the table can still be
dropped and purged through our catalog.

Real files on disk, damaged as a disk or a careless hand would: garbage, emptied, truncated or
deleted. One keyed table (bulk load, change commits, a minor with position deletes, then
unmerged change files) is built once and restored for each case.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO

from mixed_iceberg import MixedCatalog, MixedIcebergError
from mixed_iceberg.cli.exits import ExitCode
from mixed_iceberg.cli.main import main
from mixed_iceberg.cli.status import status_report
from mixed_iceberg.exceptions import CorruptFileError, CorruptTableError, MissingFileError
from mixed_iceberg.store.damage import MANIFEST_LIST, ExpectedFile, locating, reading
from tests.support.damage import NoRetries, damage, forget_reads, local
from tests.support.optimizer import DUE, churn
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(where the table lives, a copy of it as built): each case restores the copy first."""
    root = tmp_path_factory.mktemp("damage")
    work = root / "work"
    catalog = local_catalog(work)
    table = catalog.create_table("db.k", ORDERS_SCHEMA, primary_key=["id"], properties=DUE)
    table.bulk_load(changes([("+I", k, "a", k, 1.0) for k in range(20)]).drop_columns(["_change_action"]))
    churn(table, 3, keys=20)  # updates of loaded keys: position deletes after the minor
    table.optimizing.run("minor")  # B files with position deletes
    churn(table, 2, keys=20)  # and unmerged change files
    catalog.iceberg.engine.dispose()  # type: ignore[attr-defined]  (SQLite checkpoints its log on the last close)
    shutil.copytree(work, root / "copy")
    return work, root / "copy"


@pytest.fixture
def fresh(pristine: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MixedCatalog]:
    work, copy = pristine
    shutil.rmtree(work)
    shutil.copytree(copy, work)
    forget_reads()  # the previous case's reads of the same paths
    conf = tmp_path / "catalogs.yaml"
    conf.write_text(
        f"catalogs:\n  - name: local\n    type: sql\n    properties:\n      uri: sqlite:///{work}/catalog.db\n      warehouse: {work}/wh\n"
    )
    monkeypatch.setenv("MIXED_ICEBERG_CATALOGS", str(conf))
    catalog = local_catalog(work)
    yield catalog
    catalog.iceberg.engine.dispose()  # type: ignore[attr-defined]


ROWS = changes([("+I", 1, "x", 1, 1.0)]).drop_columns(["_change_action"])


def _raised(entry: Callable[[MixedCatalog], object], catalog: MixedCatalog) -> Exception | None:
    try:
        entry(catalog)
    except Exception as exc:  # what the entry point raised, whatever it is, is what is checked
        return exc
    return None


def _write(catalog: MixedCatalog) -> None:
    with catalog.load_table("db.k").new_transaction() as txn:
        txn.write(changes([("+I", 999, "z", 1, 1.0)]))


def _status(catalog: MixedCatalog) -> None:
    status_report("local", "db.k")  # what `mixed-iceberg status` prints


ENTRY_POINTS: dict[str, Callable[[MixedCatalog], object]] = {
    "load_table": lambda c: c.load_table("db.k"),
    "scan": lambda c: c.load_table("db.k").scan().to_arrow(),
    "batch reader": lambda c: c.load_table("db.k").scan().to_arrow_batch_reader().read_all(),
    "changes": lambda c: c.load_table("db.k").changes().to_arrow(),
    "write": _write,
    "bulk_load": lambda c: c.load_table("db.k").bulk_load(ROWS, overwrite=True),
    "optimize": lambda c: c.load_table("db.k").optimizing.run("full"),
    "maintenance": lambda c: c.load_table("db.k").maintenance.run(),
    "status": _status,
}
_ALL = list(ENTRY_POINTS)
_READS = ["scan", "batch reader", "optimize"]
#: (what is damaged, how) -> the entry points that read that file, so must say it is damaged.
CASES: dict[tuple[str, str], list[str]] = {
    ("metadata", "garbage"): _ALL,
    ("metadata", "empty"): _ALL,
    ("metadata", "truncate"): _ALL,
    ("change-metadata", "truncate"): _ALL,
    ("manifest-list", "garbage"): ["scan", "batch reader", "bulk_load", "optimize", "maintenance", "status"],
    ("manifest", "truncate"): ["scan", "batch reader", "bulk_load", "optimize", "status"],
    ("change-manifest", "truncate"): ["scan", "batch reader", "changes", "bulk_load", "optimize", "maintenance", "status"],
    ("data-file", "remove"): _READS,
    ("data-file", "truncate"): _READS,
    ("delete-file", "truncate"): _READS,
    ("change-file", "garbage"): [*_READS, "changes"],
}


@pytest.mark.parametrize(("kind", "how"), list(CASES), ids=[f"{k}-{h}" for k, h in CASES])
def test_damage_raises_corrupt_table_error_naming_table_and_file_from_every_entry_point_and_purge_removes_the_table(
    fresh: MixedCatalog, pristine: tuple[Path, Path], capsys: pytest.CaptureFixture[str], kind: str, how: str
) -> None:
    location = damage(fresh.load_table("db.k"), kind, how, fresh)
    capsys.readouterr()
    for name in CASES[(kind, how)]:
        error = _raised(ENTRY_POINTS[name], fresh)
        assert isinstance(error, CorruptTableError), f"{name} read the damaged {kind}: {error!r}"
        assert isinstance(error, MixedIcebergError)
        assert isinstance(error, CorruptFileError), name
        assert error.path == location, name
        assert "table db.k" in str(error), f"{name}: {error}"
        assert location in str(error), f"{name}: {error}"
        assert isinstance(error, MissingFileError) == (how == "remove"), name
    work, _ = pristine
    fresh.purge_table("db.k")
    assert fresh.list_tables("db") == []
    assert not (work / "wh" / "db" / "k").exists()
    assert not (work / "wh" / "db" / "k_change_").exists()


def test_status_of_a_damaged_table_prints_one_line_and_exits_non_zero(
    fresh: MixedCatalog, capsys: pytest.CaptureFixture[str]
) -> None:
    location = damage(fresh.load_table("db.k"), "manifest-list", "garbage", fresh)
    capsys.readouterr()
    assert main(["status", "db.k"]) == ExitCode.STORAGE  # a damaged file: 3, not the 2 of bad input
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith("mixed-iceberg: table db.k, BaseStore: manifest list")
    assert location in line


def test_a_table_with_damaged_metadata_is_dropped_its_files_kept_and_its_name_free_again(
    fresh: MixedCatalog, pristine: tuple[Path, Path]
) -> None:
    work, _ = pristine
    damage(fresh.load_table("db.k"), "metadata", "garbage", fresh)
    files = sorted(p for p in (work / "wh").rglob("*") if p.is_file())
    fresh.drop_table(("db", "k"))
    assert fresh.list_tables("db") == []
    assert not fresh.table_exists("db.k_change_")
    assert sorted(p for p in (work / "wh").rglob("*") if p.is_file()) == files, "drop without purge keeps every file"
    again = fresh.create_table("db.k", ORDERS_SCHEMA, primary_key=["id"])
    assert again.scan().to_arrow().num_rows == 0
    assert not again.base_store.location().endswith("/db/k"), "a new table never takes the old files' folder"


def test_purging_a_table_whose_only_metadata_file_is_damaged_removes_its_folder(tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path)
    table = catalog.create_table("db.t", ORDERS_SCHEMA)  # one metadata file, no older one to learn from
    local(table.base_store.metadata_location).write_bytes(b"")
    forget_reads(catalog)
    with pytest.raises(CorruptFileError):
        catalog.load_table("db.t")
    catalog.purge_table("db.t")
    assert not (tmp_path / "wh" / "db" / "t").exists()
    assert catalog.list_tables("db") == []


def test_a_storage_that_cannot_be_reached_is_not_reported_as_damage() -> None:
    # A real S3 client against a port nobody listens on: connection refused, a transient error.
    io = PyArrowFileIO(
        {
            "s3.endpoint": "http://127.0.0.1:9",
            "s3.region": "us-east-1",
            "s3.retry-strategy-impl": f"{NoRetries.__module__}.NoRetries",
        }
    )
    manifest_list = "s3://warehouse/db/t/metadata/snap-1.avro"
    with pytest.raises(OSError, match="NETWORK_CONNECTION") as raised, reading(io, MANIFEST_LIST, manifest_list, table="db.t"):
        io.new_input(manifest_list).open().read()
    assert not isinstance(raised.value, MixedIcebergError)
    data_file = "s3://warehouse/db/t/data/x.parquet"
    with (
        pytest.raises(OSError, match="NETWORK_CONNECTION") as read,
        locating(io, lambda: [ExpectedFile(data_file, "data file", 100, 10)]),
    ):
        io.new_input(data_file).open().read()
    assert not isinstance(read.value, MixedIcebergError), "a probe that cannot reach the storage leaves the error as it was"
