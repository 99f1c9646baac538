"""Orphan-file cleaning over the ``data``, ``metadata`` and ``key-index`` folders of every store of a table.

A listed file is deleted only when (DESIGN.md invariant 6):

- no live snapshot and no metadata of *any* store of the table references it (a file may
  sit under one store's folder and belong to the other, Amoro #1105);
- it is older than the safety window, so files of commits still in flight survive;
- its age is known at all (a listing without modification times deletes nothing).

A key-index file (:mod:`mixed_iceberg.optimizing.key_index_store`) counts as referenced while
its data file is.

The folders are listed *before* the references are collected: a commit that lands in
between is then seen by the reference scan, and one that lands after it only references
files younger than the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyiceberg.table import Table

from mixed_iceberg.optimizing.key_index_store import INDEX_FOLDER, index_location
from mixed_iceberg.optimizing.maintenance.reachability import Referenced, References
from mixed_iceberg.optimizing.maintenance.storage import ListedFile, Storage, file_key

__all__ = ["OrphanOutcome", "clean_orphans", "find_orphans"]

FOLDERS = ("data", "metadata")


@dataclass(frozen=True, slots=True)
class OrphanOutcome:
    """What orphan cleaning found and removed."""

    listed: int
    referenced: int
    orphans: int
    young_kept: int
    deleted: int
    size: int


def find_orphans(
    listed: Sequence[ListedFile], referenced: Referenced, *, delete_before_ms: int
) -> tuple[list[ListedFile], list[ListedFile]]:
    """Split unreferenced files into (old enough to delete, kept because young or of unknown age)."""
    old, young = [], []
    for item in listed:
        if item.key in referenced:
            continue
        if item.mtime_ms is not None and item.mtime_ms < delete_before_ms:
            old.append(item)
        else:
            young.append(item)
    return old, young


def _folders(store: Table) -> list[str]:
    location = store.metadata.location.rstrip("/")
    return [f"{location}/{folder}" for folder in (*FOLDERS, INDEX_FOLDER)]


def _indexes_of(stores: Sequence[Table], referenced: Referenced) -> Referenced:
    """The key-index files of the referenced files: an index lives as long as its data file."""
    found: Referenced = {}
    for store in stores:
        for location, _ in referenced.values():
            index = index_location(store, location)
            found[file_key(index)] = (index, None)
    return found


def clean_orphans(stores: Sequence[Table], *, delete_before_ms: int, dry_run: bool = False) -> OrphanOutcome:
    """Delete unreferenced files older than ``delete_before_ms`` under every store's folders.

    Args:
        stores: every store of one table (references are collected over all of them).
        delete_before_ms: only files modified before this epoch-millisecond time may go.
        dry_run: find and count, delete nothing.

    Raises:
        OSError: listing a folder or reading metadata failed; nothing was deleted.
    """
    listed: dict[str, ListedFile] = {}
    for store in stores:
        storage = Storage(store.io)
        for folder in _folders(store):
            for item in storage.list_files(folder):
                listed[item.key] = item
    referenced: Referenced = {}
    references = References()
    for store in stores:
        store.refresh()
        referenced.update(references.store(store))
    kept = {**referenced, **_indexes_of(stores, referenced)}
    old, young = find_orphans(list(listed.values()), kept, delete_before_ms=delete_before_ms)
    deleted = size = 0
    if old and not dry_run:
        deleted, size = Storage(stores[0].io).delete({item.location: item.size for item in old})
    return OrphanOutcome(
        listed=len(listed),
        referenced=len(referenced),
        orphans=len(old) + len(young),
        young_kept=len(young),
        deleted=deleted,
        size=size,
    )
