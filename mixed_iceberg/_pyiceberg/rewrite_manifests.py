"""One REPLACE snapshot whose merged manifests hold the same live entries, on pyiceberg 0.12.

pyiceberg 0.12 has no rewrite-manifests operation; :class:`ManifestRewrite` subclasses its
private ``_SnapshotProducer`` (and reads its ``_snapshot_id``, ``_compression``,
``_parent_snapshot_id``, ``_transaction``, ``_io``), which buys pyiceberg's manifest and
manifest-list writers, its commit retry (the rewrite is planned again from the refreshed head)
and its cleanup of files from failed attempts. Delete manifests are written with
:class:`~mixed_iceberg._pyiceberg.row_delta.DeleteManifestWriter`.
"""

from __future__ import annotations

from collections.abc import Callable

from pyiceberg.manifest import ManifestContent, ManifestEntry, ManifestFile, ManifestWriter
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation, Summary
from pyiceberg.table.update.snapshot import _SnapshotProducer
from pyiceberg.typedef import EMPTY_DICT

from mixed_iceberg._pyiceberg.access import ManifestAccess
from mixed_iceberg._pyiceberg.row_delta import DeleteManifestWriter

__all__ = ["ManifestRewrite", "has_deleted_entries"]

_TOTALS = (
    "total-data-files",
    "total-delete-files",
    "total-records",
    "total-files-size",
    "total-position-deletes",
    "total-equality-deletes",
)


def has_deleted_entries(manifest: ManifestFile) -> bool:
    """Whether ``manifest`` lists DELETED entries (a rewrite drops them)."""
    return (manifest.deleted_files_count or 0) > 0


class ManifestRewrite(_SnapshotProducer["ManifestRewrite"]):
    """A REPLACE snapshot with the parent's live files in merged manifests and no file changes.

    ``plan`` bins the parent's manifests; a bin of one manifest without DELETED entries is
    kept as it is, every other bin is merged into one manifest. :meth:`commit_rewrite` stages the
    snapshot and commits it (pyiceberg's ``CommitFailedException`` or ``ValidationException``:
    it did not land). ``access`` reads the manifests (:data:`mixed_iceberg.store.rewrite.MANIFEST_ACCESS`).
    """

    def __init__(
        self, store: Table, plan: Callable[[list[ManifestFile]], list[list[ManifestFile]]], access: ManifestAccess
    ) -> None:
        super().__init__(Operation.REPLACE, store.transaction(), store.io)
        self._plan = plan
        self._access = access
        self.manifests_before = 0
        self.manifests_after = 0
        self.manifests_written = 0
        self.entries_rewritten = 0

    def _validate_concurrency(self) -> None:
        """Nothing to validate: every attempt recomputes the rewrite from the refreshed head."""

    def _deleted_entries(self) -> list[ManifestEntry]:
        return []

    def _merge(self, manifests: list[ManifestFile]) -> ManifestFile | None:
        first = manifests[0]
        entries = []
        for manifest in manifests:
            with self._access.manifest(self._io, manifest.manifest_path):
                entries.extend(self.fetch_manifest_entry(manifest, discard_deleted=True))
        if not entries:
            return None
        spec: PartitionSpec = self.spec(first.partition_spec_id)
        writer: ManifestWriter
        if first.content == ManifestContent.DELETES:
            writer = DeleteManifestWriter(spec, self.schema(), self.new_manifest_output(), self._snapshot_id, self._compression)
        else:
            writer = self.new_manifest_writer(spec)
        with writer:
            for entry in entries:
                writer.existing(entry)
        self.manifests_written += 1
        self.entries_rewritten += len(entries)
        return writer.to_manifest_file()

    def _existing_manifests(self) -> list[ManifestFile]:
        self.manifests_written = self.entries_rewritten = 0
        parent = (
            self._transaction.table_metadata.snapshot_by_id(self._parent_snapshot_id)
            if self._parent_snapshot_id is not None
            else None
        )
        if parent is None:
            return []
        with self._access.manifest_list(self._io, parent.manifest_list):
            manifests = parent.manifests(self._io)
        self.manifests_before = len(manifests)
        result = []
        for group in self._plan(manifests):
            if len(group) == 1 and not has_deleted_entries(group[0]):
                result.append(group[0])
                continue
            merged = self._merge(group)
            if merged is not None:
                result.append(merged)
        self.manifests_after = len(result)
        return result

    def _summary(self, snapshot_properties: dict[str, str] = EMPTY_DICT) -> Summary:
        # pyiceberg's summary update rejects REPLACE; the totals simply carry over.
        metadata = self._transaction.table_metadata
        parent = metadata.snapshot_by_id(self._parent_snapshot_id) if self._parent_snapshot_id is not None else None
        previous = parent.summary if parent is not None and parent.summary is not None else {}
        totals = {key: str(previous[key]) for key in _TOTALS if previous.get(key) is not None}
        counts = {
            "manifests-created": str(self.manifests_written),
            "manifests-kept": str(self.manifests_after - self.manifests_written),
            "manifests-replaced": str(self.manifests_before - (self.manifests_after - self.manifests_written)),
            "entries-processed": str(self.entries_rewritten),
        }
        return Summary(operation=Operation.REPLACE, **totals, **counts, **snapshot_properties)

    def commit_rewrite(self) -> None:
        """Stage the snapshot and commit its transaction (a retry plans the rewrite again)."""
        self.commit()
        self._transaction.commit_transaction()
