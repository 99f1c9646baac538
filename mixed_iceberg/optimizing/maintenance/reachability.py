"""Which files a store's snapshots and metadata reference.

A snapshot references its manifest list, the manifests in it and the live entries of those
manifests (data and delete files). A store's metadata also references its current metadata
file, the metadata log, and statistics and partition-statistics files (the Puffin files that
hold the optimized sequence among them). Entries marked DELETED are not references: the
file they name is live, if anywhere, in an older snapshot, which is read in its own right.

Manifests are immutable and shared by many snapshots, so each is read once per
:class:`References` instance.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from pyiceberg.manifest import ManifestFile
from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot

from mixed_iceberg.optimizing.maintenance.storage import file_key
from mixed_iceberg.store.damage import MANIFEST, reading
from mixed_iceberg.store.manifests.live_files import manifests_of

__all__ = ["Referenced", "References"]

_READ_THREADS = 8

#: file key -> (full location, size in bytes when the metadata knows it)
Referenced = dict[str, tuple[str, int | None]]


class References:
    """Collects referenced files, reading every manifest and manifest list at most once."""

    def __init__(self) -> None:
        self._manifest_lists: dict[str, tuple[ManifestFile, ...]] = {}
        self._entries: dict[str, tuple[tuple[str, int], ...]] = {}
        self._lock = threading.Lock()

    def _manifests(self, store: Table, snapshot: Snapshot) -> tuple[ManifestFile, ...]:
        with self._lock:
            cached = self._manifest_lists.get(snapshot.manifest_list)
        if cached is None:
            cached = tuple(manifests_of(store, snapshot))
            with self._lock:
                self._manifest_lists[snapshot.manifest_list] = cached
        return cached

    def _live_entries(self, store: Table, manifest: ManifestFile) -> tuple[tuple[str, int], ...]:
        with self._lock:
            cached = self._entries.get(manifest.manifest_path)
        if cached is None:
            with reading(store.io, MANIFEST, manifest.manifest_path):
                entries = manifest.fetch_manifest_entry(store.io, discard_deleted=True)
            cached = tuple((entry.data_file.file_path, entry.data_file.file_size_in_bytes) for entry in entries)
            with self._lock:
                self._entries[manifest.manifest_path] = cached
        return cached

    def snapshots(self, store: Table, snapshots: Iterable[Snapshot]) -> Referenced:
        """Files referenced by ``snapshots`` of ``store`` (manifest lists, manifests, live files)."""
        snapshots = list(snapshots)
        found: Referenced = {}
        with ThreadPoolExecutor(max_workers=_READ_THREADS) as pool:
            lists = list(pool.map(lambda s: self._manifests(store, s), snapshots))
            manifests = {m.manifest_path: m for manifest_list in lists for m in manifest_list}
            entries = list(pool.map(lambda m: self._live_entries(store, m), manifests.values()))
        for snapshot in snapshots:
            found[file_key(snapshot.manifest_list)] = (snapshot.manifest_list, None)
        for manifest, live in zip(manifests.values(), entries, strict=True):
            found[file_key(manifest.manifest_path)] = (manifest.manifest_path, manifest.manifest_length)
            for path, size in live:
                found[file_key(path)] = (path, size)
        return found

    @staticmethod
    def statistics(metadata: TableMetadata, snapshot_ids: Iterable[int] | None = None) -> Referenced:
        """Statistics and partition-statistics files (of ``snapshot_ids`` only, when given)."""
        wanted = None if snapshot_ids is None else set(snapshot_ids)
        found: Referenced = {}
        for stats in metadata.statistics:
            if wanted is None or stats.snapshot_id in wanted:
                found[file_key(stats.statistics_path)] = (stats.statistics_path, stats.file_size_in_bytes)
        for part in metadata.partition_statistics:
            if wanted is None or part.snapshot_id in wanted:
                found[file_key(part.statistics_path)] = (part.statistics_path, part.file_size_in_bytes)
        return found

    def store(self, store: Table) -> Referenced:
        """Everything the store's current metadata references: all live snapshots and metadata files."""
        metadata = store.metadata
        found = self.snapshots(store, metadata.snapshots)
        found.update(self.statistics(metadata))
        for entry in metadata.metadata_log:
            found[file_key(entry.metadata_file)] = (entry.metadata_file, None)
        found[file_key(store.metadata_location)] = (store.metadata_location, None)
        return found
