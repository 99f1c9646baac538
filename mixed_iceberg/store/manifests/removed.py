"""What a snapshot removed: the highest data sequence number of the files it deleted.

The change-data TTL removes merged ChangeStore files in a commit of its own; a CDC read over a
range that held them must know, since their rows are then gone from the ChangeStore
(:mod:`mixed_iceberg.reader.change_timeline`). The deleted entries live in the manifests the
removing snapshot wrote, with status DELETED.
"""

from __future__ import annotations

from pyiceberg.manifest import ManifestEntryStatus
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot

from mixed_iceberg.store.damage import MANIFEST, reading
from mixed_iceberg.store.manifests.live_files import manifests_of

__all__ = ["removed_files", "removed_sequence"]


def removed_files(snapshot: Snapshot) -> bool:
    """Whether ``snapshot``'s summary says it removed data or delete files."""
    summary = snapshot.summary
    if summary is None:
        return False
    return any(summary.get(key, "0") not in ("", "0") for key in ("deleted-data-files", "removed-delete-files"))


def removed_sequence(store: Table, snapshot: Snapshot) -> int:
    """The highest data sequence number among the files ``snapshot`` removed (-1: none).

    Raises:
        CorruptFileError: a manifest does not parse (``MissingFileError``: it is gone).
    """
    if not removed_files(snapshot):
        return -1
    highest = -1
    for manifest in manifests_of(store, snapshot):
        if manifest.added_snapshot_id != snapshot.snapshot_id or manifest.deleted_files_count == 0:
            continue
        with reading(store.io, MANIFEST, manifest.manifest_path):
            entries = manifest.fetch_manifest_entry(store.io, discard_deleted=False)
        for entry in entries:
            if entry.status == ManifestEntryStatus.DELETED and entry.snapshot_id == snapshot.snapshot_id:
                highest = max(highest, int(entry.sequence_number or 0))
    return highest
