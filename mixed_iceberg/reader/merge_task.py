"""``MergeTask``: the files of one group of a scan and what to do with them, as picklable data.

Planned by ``table.scan(...).plan_tasks()`` and run by :func:`mixed_iceberg.reader.tasks.execute_task`
(see that module for what a task holds and how it reads).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyiceberg.expressions import BooleanExpression

from mixed_iceberg.typedef import TableFormat

__all__ = ["MergeTask"]


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
