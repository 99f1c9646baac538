"""A store's scan plan (data files with the delete files that apply) from the cached manifest entries."""

from __future__ import annotations

from pyiceberg.expressions import BooleanExpression
from pyiceberg.manifest import DataFileContent
from pyiceberg.table import FileScanTask, Table
from pyiceberg.table.snapshots import Snapshot

from mixed_iceberg.store.manifests.delete_index import DeleteIndex
from mixed_iceberg.store.manifests.live_files import live_files

__all__ = ["plan_scan_tasks"]


def plan_scan_tasks(
    table: Table, snapshot: Snapshot | None, row_filter: BooleanExpression, *, case_sensitive: bool = True
) -> list[FileScanTask]:
    """pyiceberg's ``plan_files`` for data and position-delete files, from the cached entries.

    pyiceberg re-reads every manifest on every scan; this reads only manifests it has not seen.
    Delete files are attached by :class:`~mixed_iceberg.store.manifests.delete_index.DeleteIndex`. A
    snapshot with equality deletes is planned by pyiceberg, which refuses it with its own error.
    """
    files = live_files(table, snapshot, row_filter, case_sensitive=case_sensitive)
    if any(f.data_file.content == DataFileContent.EQUALITY_DELETES for f in files):
        snapshot_id = snapshot.snapshot_id if snapshot else None
        return list(table.scan(row_filter=row_filter, snapshot_id=snapshot_id, case_sensitive=case_sensitive).plan_files())
    index = DeleteIndex.build(table.metadata.specs(), (f for f in files if f.data_file.content != DataFileContent.DATA))
    return [
        FileScanTask(f.data_file, delete_files={d.data_file for d in index.position_deletes(f)})
        for f in files
        if f.data_file.content == DataFileContent.DATA
    ]
