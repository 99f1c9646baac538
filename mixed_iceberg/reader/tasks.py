"""Merge tasks: a scan split into independent, picklable units another process can run.

``table.scan(...).plan_tasks()`` gives one :class:`MergeTask` per file group (a partition's
tree node, see :mod:`mixed_iceberg.reader.groups`); :func:`execute_task` (or
``task.to_arrow()``) merges one of them anywhere the files are reachable. A task is small: the
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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
from pyiceberg.expressions import BooleanExpression
from pyiceberg.table import StaticTable, Table

from mixed_iceberg._pyiceberg import apply_patches
from mixed_iceberg.reader.groups import FileGroup
from mixed_iceberg.typedef import TableFormat

if TYPE_CHECKING:
    from mixed_iceberg.reader.scan import MixedScan

__all__ = ["MergeTask", "execute_task", "plan_merge_tasks"]


@dataclass(frozen=True, slots=True)
class MergeTask:
    """The files of one group of a scan and what to do with them; see the module docstring."""

    table: str
    table_format: TableFormat
    primary_key: tuple[str, ...]
    base_metadata: str
    change_metadata: str | None
    base_snapshot_id: int | None
    change_snapshot_id: int | None
    base_files: tuple[str, ...]
    change_files: tuple[str, ...]
    row_filter: str | BooleanExpression | None
    selected_fields: tuple[str, ...]
    case_sensitive: bool = True
    partition: str | None = None
    node: tuple[int, int] | None = None  # (mask, index) of the group's tree node
    io_properties: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if (self.change_metadata is None) != (not self.primary_key):
            raise ValueError(f"{self.table}: a task has a ChangeStore exactly when it has a primary key")

    def to_arrow(self) -> pa.Table:
        """The merged rows of this task's files (see :func:`execute_task`)."""
        return execute_task(self)


def plan_merge_tasks(scan: MixedScan) -> list[MergeTask]:
    """One task per file group of ``scan`` (no I/O beyond the scan's planning)."""
    table = scan.table
    base = table.base_store
    change = table.change_store
    return [
        MergeTask(
            table=table.name,
            table_format=table.format,
            primary_key=table.primary_key,
            base_metadata=base.metadata_location,
            change_metadata=change.metadata_location if change is not None else None,
            base_snapshot_id=scan.base_snapshot.snapshot_id if scan.base_snapshot is not None else None,
            change_snapshot_id=scan.change_snapshot.snapshot_id if scan.change_snapshot is not None else None,
            base_files=tuple(sorted(group.base_paths)),
            change_files=tuple(sorted(group.change_paths)),
            row_filter=scan.row_filter,
            selected_fields=scan.selected_fields,
            case_sensitive=scan.case_sensitive,
            partition=group.partition,
            node=(group.node.mask, group.node.index) if group.node is not None else None,
            io_properties=dict(base.io.properties),
        )
        for group in scan.file_groups()
    ]


def _store(location: str, properties: Mapping[str, str]) -> Table:
    return StaticTable.from_metadata(location, dict(properties))


def execute_task(task: MergeTask) -> pa.Table:
    """Merge one task's files: its rows of the scan it came from, ``selected_fields`` only.

    Raises:
        SnapshotExpiredError: maintenance deleted a file the task names.
        FileNotFoundError: a metadata file the task names is gone.
    """
    from mixed_iceberg.reader.scan import MixedScan
    from mixed_iceberg.table import MixedTable

    apply_patches()  # Amoro's statistics blobs in the BaseStore's metadata (mixed_iceberg._pyiceberg)
    base = _store(task.base_metadata, task.io_properties)
    change = _store(task.change_metadata, task.io_properties) if task.change_metadata is not None else None
    table = MixedTable(task.table, task.table_format, base, change, task.primary_key)
    snapshots = (
        change.metadata.snapshot_by_id(task.change_snapshot_id) if change is not None and task.change_snapshot_id else None,
        base.metadata.snapshot_by_id(task.base_snapshot_id) if task.base_snapshot_id is not None else None,
    )
    scan = MixedScan(table, task.row_filter, task.selected_fields, case_sensitive=task.case_sensitive, snapshots=snapshots)
    return scan.read_group(FileGroup(frozenset(task.base_files), frozenset(task.change_files)))
