"""Manifest rewriting: one REPLACE snapshot whose few merged manifests hold the same live files.

Every fast append adds a manifest, so after N commits a snapshot lists N manifests and each
commit writes (and each scan reads) a manifest list that keeps growing. Rewriting packs the
live entries of the current snapshot into manifests of about
``commit.manifest.target-size-bytes``, per (content, partition spec), dropping entries
marked DELETED. Entries keep their snapshot id and data/file sequence numbers (they are
written as EXISTING), so merge-on-read, the optimized-sequence rule and delete-file
application read exactly what they read before.

pyiceberg 0.12 has no rewrite-manifests operation, so this module subclasses its snapshot
producer (the delete-manifest writer is ``store.delete_files``'s). That is the only use of
pyiceberg internals in the maintenance package; it buys pyiceberg's manifest/manifest-list
writers, its commit retry (which recomputes the rewrite from the refreshed head) and its
cleanup of files from failed attempts.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from pyiceberg.exceptions import CommitFailedException, ValidationException
from pyiceberg.manifest import (
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    ManifestWriter,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation, Summary
from pyiceberg.table.update.snapshot import _SnapshotProducer
from pyiceberg.typedef import EMPTY_DICT

from mixed_iceberg.exceptions import CommitConflictError, CommitError
from mixed_iceberg.store.delete_files import DeleteManifestWriter

__all__ = ["RewriteOutcome", "pack_manifests", "rewrite_manifests"]

_TOTALS = (
    "total-data-files",
    "total-delete-files",
    "total-records",
    "total-files-size",
    "total-position-deletes",
    "total-equality-deletes",
)


def _has_deleted(manifest: ManifestFile) -> bool:
    return (manifest.deleted_files_count or 0) > 0


def pack_manifests(manifests: list[ManifestFile], target_size: int) -> list[list[ManifestFile]]:
    """Bins of manifests to merge, per (content, spec), each at most about ``target_size`` bytes.

    A manifest alone in its bin is returned alone (the caller keeps it unless it carries
    DELETED entries). Order is kept inside each group.
    """
    groups: dict[tuple[int, int], list[ManifestFile]] = defaultdict(list)
    for manifest in manifests:
        groups[(int(manifest.content), manifest.partition_spec_id)].append(manifest)
    bins: list[list[ManifestFile]] = []
    for group in groups.values():
        current: list[ManifestFile] = []
        weight = 0
        for manifest in group:
            if current and weight + manifest.manifest_length > target_size:
                bins.append(current)
                current, weight = [], 0
            current.append(manifest)
            weight += manifest.manifest_length
        if current:
            bins.append(current)
    return bins


class _RewriteManifests(_SnapshotProducer["_RewriteManifests"]):
    """A REPLACE snapshot with the parent's live files in merged manifests and no file changes."""

    def __init__(self, store: Table, target_size: int) -> None:
        super().__init__(Operation.REPLACE, store.transaction(), store.io)
        self._target_size = target_size
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
        entries = [e for m in manifests for e in self.fetch_manifest_entry(m, discard_deleted=True)]
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
        manifests = parent.manifests(self._io)
        self.manifests_before = len(manifests)
        result = []
        for group in pack_manifests(manifests, self._target_size):
            if len(group) == 1 and not _has_deleted(group[0]):
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


@dataclass(frozen=True, slots=True)
class RewriteOutcome:
    """Manifests of one store before and after; ``snapshot_id`` is None when nothing was rewritten."""

    snapshot_id: int | None
    manifests_before: int
    manifests_after: int
    manifests_written: int
    entries_rewritten: int


def _needs_rewrite(manifests: list[ManifestFile], target_size: int) -> bool:
    return any(len(group) > 1 or _has_deleted(group[0]) for group in pack_manifests(manifests, target_size))


def rewrite_manifests(store: Table, *, target_size: int, table_name: str) -> RewriteOutcome:
    """Replace the manifests of ``store``'s current snapshot with merged ones, in one snapshot.

    Args:
        store: one Iceberg store.
        target_size: bytes of a merged manifest (``commit.manifest.target-size-bytes``).
        table_name: for messages.

    Returns:
        The counts; no snapshot is written when every manifest would stay as it is.

    Raises:
        CommitConflictError: concurrent commits kept winning until retries ran out.
        CommitError: the commit failed otherwise.
    """
    store.refresh()
    current = store.current_snapshot()
    if current is None:
        return RewriteOutcome(None, 0, 0, 0, 0)
    manifests = current.manifests(store.io)
    if not _needs_rewrite(manifests, target_size):
        return RewriteOutcome(None, len(manifests), len(manifests), 0, 0)
    producer = _RewriteManifests(store, target_size)
    transaction = producer._transaction
    try:
        producer.commit()
        transaction.commit_transaction()
    except (CommitFailedException, ValidationException) as exc:
        # pyiceberg deleted the manifests it wrote: these errors prove the commit did not land.
        raise CommitConflictError(f"{table_name}: manifest rewrite lost to concurrent commits: {exc}") from exc
    except Exception as exc:
        # outcome unknown: pyiceberg keeps the manifests, orphan cleaning removes them if unused
        raise CommitError(f"{table_name}: manifest rewrite outcome unknown ({type(exc).__name__}: {exc})") from exc
    store.refresh()
    return RewriteOutcome(
        producer.snapshot_id,
        producer.manifests_before,
        producer.manifests_after,
        producer.manifests_written,
        producer.entries_rewritten,
    )
