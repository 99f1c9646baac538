"""Delete files that apply to no live data file any more (Amoro's ``clean-dangling-delete-files``).

A position delete file whose data files were all removed, or an equality delete file older than
every data file of its partition, changes no read: Iceberg's scan planning never pairs it with
a data file. It still costs every scan planning a look, so maintenance removes it, as Amoro's
``IcebergTableMaintainer.cleanDanglingDeleteFiles`` does: the delete files of the current
snapshot that no data file's scan task carries. The same rules decide both (the shared
:class:`~mixed_iceberg.store.manifests.delete_index.DeleteIndex`), so a removed file is one
no read applied.

The commit is a ``replace`` (rows unchanged), so incremental readers skip it. A concurrent
append cannot make a dangling file apply again: a new data file is newer than every delete
file of the snapshot read, and a position delete names the files it applies to.
"""

from __future__ import annotations

from pyiceberg.manifest import DataFile, DataFileContent
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation

from mixed_iceberg.store.commit import commit_files
from mixed_iceberg.store.manifests.delete_index import DeleteIndex
from mixed_iceberg.store.manifests.live_files import live_files

__all__ = ["clean_dangling_deletes", "dangling_deletes"]


def dangling_deletes(store: Table) -> list[DataFile]:
    """The delete files of ``store``'s current snapshot that apply to none of its live data files."""
    files = live_files(store, store.current_snapshot())
    deletes = [f for f in files if f.data_file.content != DataFileContent.DATA]
    if not deletes:
        return []
    index = DeleteIndex.build(store.specs(), deletes)
    applied: set[str] = set()
    for data in files:
        if data.data_file.content == DataFileContent.DATA:
            applied.update(d.data_file.file_path for d in index.position_deletes(data))
            applied.update(d.data_file.file_path for d in index.equality_deletes(data).files)
    return [f.data_file for f in deletes if f.data_file.file_path not in applied]


def clean_dangling_deletes(store: Table, *, table_name: str = "") -> tuple[int, int]:
    """Remove ``store``'s dangling delete files in one ``replace`` commit.

    Returns:
        The delete files removed and their bytes.

    Raises:
        CommitConflictError: a concurrent commit removed one of them first.
    """
    dangling = dangling_deletes(store)
    if not dangling:
        return 0, 0
    commit_files(store, added=[], deleted_deletes=dangling, operation=Operation.REPLACE, table_name=table_name)
    return len(dangling), sum(f.file_size_in_bytes for f in dangling)
