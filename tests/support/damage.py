"""Damage a real table's files on disk, and forget what this process read of them.

A process keeps what it read or wrote of a table's immutable files (parsed metadata, manifest
lists, manifest entries, deleted positions), so damage to a file it already knows stays
unseen by it, as it would by any process that read the file before. :func:`forget_reads`
makes this process read every file again, as a fresh one would.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pyarrow.fs import AwsStandardS3RetryStrategy

from mixed_iceberg import MixedCatalog, MixedTable
from mixed_iceberg._pyiceberg.patches import MANIFEST_LISTS
from mixed_iceberg._pyiceberg.sql_catalog import SqlCatalogWithCache
from mixed_iceberg.optimizing import collect as collect_module
from mixed_iceberg.optimizing import key_index_store
from mixed_iceberg.optimizing.collect import collect
from mixed_iceberg.reader import file_reads
from mixed_iceberg.store.manifests import live_files

__all__ = ["DAMAGES", "HOW", "NoRetries", "damage", "damaged_file", "forget_reads", "local"]


def local(location: str) -> Path:
    return Path(location.removeprefix("file://"))


def garbage(path: Path) -> None:
    path.write_bytes(b"not a file of any table " * 8)


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def empty(path: Path) -> None:
    path.write_bytes(b"")


def remove(path: Path) -> None:
    path.unlink()


HOW: dict[str, Callable[[Path], None]] = {"garbage": garbage, "truncate": truncate, "empty": empty, "remove": remove}


def _metadata(table: MixedTable) -> str:
    return table.base_store.metadata_location


def _change_metadata(table: MixedTable) -> str:
    assert table.change_store is not None
    return table.change_store.metadata_location


def _manifest_list(table: MixedTable) -> str:
    snapshot = table.base_store.current_snapshot()
    assert snapshot is not None
    return snapshot.manifest_list


def _manifest(table: MixedTable) -> str:
    snapshot = table.base_store.current_snapshot()
    assert snapshot is not None
    return snapshot.manifests(table.base_store.io)[0].manifest_path


def _change_manifest(table: MixedTable) -> str:
    assert table.change_store is not None
    snapshot = table.change_store.current_snapshot()
    assert snapshot is not None
    return snapshot.manifests(table.change_store.io)[0].manifest_path  # the newest: above the optimized sequence


def _data_file(table: MixedTable) -> str:
    return sorted(collect(table.handle).data_files)[0]


def _delete_file(table: MixedTable) -> str:
    deletes = sorted(collect(table.handle).delete_files)
    assert deletes, f"{table.name} has no delete file to damage"
    return deletes[0]


def _change_file(table: MixedTable) -> str:
    changes = sorted(collect(table.handle).change_files)
    assert changes, f"{table.name} has no unmerged change file to damage"
    return changes[-1]


#: Which file of a table each kind of damage hits (the table as loaded now).
DAMAGES: dict[str, Callable[[MixedTable], str]] = {
    "metadata": _metadata,
    "change-metadata": _change_metadata,
    "manifest-list": _manifest_list,
    "manifest": _manifest,
    "change-manifest": _change_manifest,
    "data-file": _data_file,
    "delete-file": _delete_file,
    "change-file": _change_file,
}


def damaged_file(table: MixedTable, kind: str) -> str:
    """The location of the file of ``table`` that damage of ``kind`` hits."""
    return DAMAGES[kind](table.refresh())


def damage(table: MixedTable, kind: str, how: str, *catalogs: MixedCatalog) -> str:
    """Damage the file of ``kind`` of ``table`` (``how``: garbage, truncate, empty, remove),
    then forget this process's reads (``catalogs``' parsed metadata too); its location."""
    location = damaged_file(table, kind)
    HOW[how](local(location))
    forget_reads(*catalogs)
    return location


def forget_reads(*catalogs: MixedCatalog) -> None:
    """Forget the files this process read or wrote, so that it reads each one again."""
    for catalog in catalogs:
        if isinstance(catalog.iceberg, SqlCatalogWithCache):
            catalog.iceberg.metadata_cache.clear()
    MANIFEST_LISTS.clear()
    live_files._CACHE.clear()
    live_files._FLAT.clear()
    file_reads._POSITIONS.clear()
    collect_module._BASE_STATES.clear()
    key_index_store.CACHE.clear()


class NoRetries(AwsStandardS3RetryStrategy):
    """An S3 client that gives up at once (a refused connection is not retried for seconds)."""

    def __init__(self) -> None:
        super().__init__(max_attempts=1)
