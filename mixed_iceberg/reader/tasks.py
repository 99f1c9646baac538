"""Merge tasks: a scan split into independent, picklable units another process can run.

``table.scan(...).plan_tasks()`` gives one :class:`MergeTask` per file group (a partition's
tree node, see :mod:`mixed_iceberg.reader.groups`); :func:`execute_task` merges one of them
anywhere the files are reachable. A task is small: the
stores' metadata file locations and snapshot ids, the paths of the group's files, the row
filter as given (a string, or a pyiceberg expression, which pickles), the selected fields and
the FileIO properties (so credentials of an S3 FileIO travel with it, as they do with a
pickled pyiceberg table). The worker reads the stores' metadata files, not the catalog, so it
sees exactly the snapshots the scan planned, whatever was committed since. The union of all
tasks' outputs is the scan's ``to_arrow()`` (``limit`` aside: tasks ignore it).

>>> from concurrent.futures import ProcessPoolExecutor                   # doctest: +SKIP
>>> with ProcessPoolExecutor() as pool:                                   # doctest: +SKIP
...     parts = list(pool.map(execute_task, table.scan().plan_tasks()))
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
from pyiceberg.table import StaticTable, Table

from mixed_iceberg._pyiceberg import apply_patches
from mixed_iceberg.handle import TableHandle
from mixed_iceberg.reader.groups import FileGroup
from mixed_iceberg.reader.merge_task import MergeTask
from mixed_iceberg.reader.scan import MixedScan
from mixed_iceberg.store.damage import METADATA_FILE, reading

__all__ = ["MergeTask", "execute_task"]


def _store(location: str, properties: Mapping[str, str], table: str) -> Table:
    with reading(None, METADATA_FILE, location, table=table, referenced=False):
        return StaticTable.from_metadata(location, dict(properties))


def execute_task(task: MergeTask) -> pa.Table:
    """Merge one task's files: its rows of the scan it came from, ``selected_fields`` only.

    Raises:
        SnapshotExpiredError: maintenance deleted a file the task names.
        FileNotFoundError: a metadata file the task names is gone.
        CorruptFileError: a file the task reads does not parse.
    """
    apply_patches()  # Amoro's statistics blobs in the BaseStore's metadata (mixed_iceberg._pyiceberg)
    base = _store(task.base_metadata, task.io_properties, task.table)
    change = _store(task.change_metadata, task.io_properties, task.table) if task.change_metadata is not None else None
    table = TableHandle.of(task.table, task.table_format, base, change, task.primary_key)
    snapshots = (
        change.metadata.snapshot_by_id(task.change_snapshot_id) if change is not None and task.change_snapshot_id else None,
        base.metadata.snapshot_by_id(task.base_snapshot_id) if task.base_snapshot_id is not None else None,
    )
    scan = MixedScan(
        table,
        row_filter=task.row_filter,
        selected_fields=task.selected_fields,
        case_sensitive=task.case_sensitive,
        snapshots=snapshots,
    )
    return scan.read_group(FileGroup(frozenset(task.base_files), frozenset(task.change_files)))
