"""Task inputs and outputs as versioned JSON: what the system database stores between optimizers.

A task's input (:class:`TaskInput`) is its :class:`~mixed_iceberg.optimizing.model.RewriteTask`
list (file paths, sizes, record counts, sequence numbers, tree nodes): references, never data
or a serialized object graph. Its output (:class:`TaskResult`) is what it wrote, as the manifest
entries the commit needs (path, partition, counts, column metrics), and what it removes, as
paths (the committer looks them up in the planned snapshot). A few hundred bytes per file.

Both are frozen pydantic models whose JSON carries ``format_version`` (:data:`TASK_FORMAT`).
Rows written before it existed (format 1: a bare JSON list with abbreviated keys) still
decode; a version this code does not know, or a malformed row, raises
:class:`~mixed_iceberg.exceptions.SystemDatabaseError` naming what was expected and found.

>>> task = RewriteTask(partition="", type=OptimizingType.MINOR, rewrite=(), segments=(),
...     change=(ChangeFile("c.parquet", 10, 1, 3, 3, False),), from_sequence=0, to_sequence=3)
>>> text = encode_tasks([task])
>>> text.startswith('{"format_version":2,')
True
>>> decode_tasks(text) == [task]
True
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.typedef import Record

from mixed_iceberg.exceptions import SystemDatabaseError
from mixed_iceberg.format import DataTreeNode
from mixed_iceberg.optimizing.model import BaseFile, ChangeFile, OptimizingType, RewriteTask

__all__ = [
    "TASK_FORMAT",
    "DataFileModel",
    "TaskInput",
    "TaskOutputModel",
    "TaskResult",
    "decode_data_file",
    "decode_result",
    "decode_tasks",
    "encode_data_file",
    "encode_result",
    "encode_tasks",
]

#: The format version written into every task input and output.
TASK_FORMAT: Final = 2


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TreeNodeModel(_Model):
    mask: int
    index: int


class BaseFileModel(_Model):
    """A BaseStore file a task reads, with the delete files that apply to it."""

    path: str
    size_bytes: int
    record_count: int
    transaction_id: int
    tree_node: TreeNodeModel
    pos_delete_files: tuple[str, ...]
    pos_delete_records: int
    eq_delete_files: tuple[str, ...]

    @classmethod
    def of(cls, f: BaseFile) -> BaseFileModel:
        return cls(
            path=f.path,
            size_bytes=f.size,
            record_count=f.records,
            transaction_id=f.transaction_id,
            tree_node=TreeNodeModel(mask=f.node.mask, index=f.node.index),
            pos_delete_files=f.pos_delete_files,
            pos_delete_records=f.pos_delete_records,
            eq_delete_files=f.eq_delete_files,
        )

    def to_domain(self) -> BaseFile:
        return BaseFile(
            path=self.path,
            size=self.size_bytes,
            records=self.record_count,
            transaction_id=self.transaction_id,
            node=DataTreeNode(self.tree_node.mask, self.tree_node.index),
            pos_delete_files=self.pos_delete_files,
            pos_delete_records=self.pos_delete_records,
            eq_delete_files=self.eq_delete_files,
        )


class ChangeFileModel(_Model):
    """A ChangeStore file a task merges in."""

    path: str
    size_bytes: int
    record_count: int
    sequence_number: int
    transaction_id: int
    is_delete: bool

    @classmethod
    def of(cls, f: ChangeFile) -> ChangeFileModel:
        return cls(
            path=f.path,
            size_bytes=f.size,
            record_count=f.records,
            sequence_number=f.sequence_number,
            transaction_id=f.transaction_id,
            is_delete=f.is_delete,
        )

    def to_domain(self) -> ChangeFile:
        return ChangeFile(
            self.path, self.size_bytes, self.record_count, self.sequence_number, self.transaction_id, self.is_delete
        )


class RewriteTaskModel(_Model):
    """One partition's :class:`~mixed_iceberg.optimizing.model.RewriteTask`."""

    partition: str
    type: OptimizingType
    rewrite_files: tuple[BaseFileModel, ...]
    segment_files: tuple[BaseFileModel, ...]
    change_files: tuple[ChangeFileModel, ...]
    from_sequence: int
    to_sequence: int
    drop_delete_files: tuple[str, ...]
    combine_deletes: tuple[str, ...]

    @classmethod
    def of(cls, t: RewriteTask) -> RewriteTaskModel:
        return cls(
            partition=t.partition,
            type=t.type,
            rewrite_files=tuple(BaseFileModel.of(f) for f in t.rewrite),
            segment_files=tuple(BaseFileModel.of(f) for f in t.segments),
            change_files=tuple(ChangeFileModel.of(f) for f in t.change),
            from_sequence=t.from_sequence,
            to_sequence=t.to_sequence,
            drop_delete_files=t.drop_delete_files,
            combine_deletes=t.combine_deletes,
        )

    def to_domain(self) -> RewriteTask:
        return RewriteTask(
            partition=self.partition,
            type=self.type,
            rewrite=tuple(f.to_domain() for f in self.rewrite_files),
            segments=tuple(f.to_domain() for f in self.segment_files),
            change=tuple(f.to_domain() for f in self.change_files),
            from_sequence=self.from_sequence,
            to_sequence=self.to_sequence,
            drop_delete_files=self.drop_delete_files,
            combine_deletes=self.combine_deletes,
        )


class TaskInput(_Model):
    """A task's input: the partitions it rewrites (a unit task has several)."""

    format_version: Literal[2]
    tasks: tuple[RewriteTaskModel, ...]


PartitionKind = Literal["null", "bool", "int", "float", "str", "bytes", "decimal", "uuid"]


class PartitionValue(_Model):
    """A partition value with its kind (JSON alone cannot tell bytes, decimals or UUIDs apart)."""

    kind: PartitionKind
    value: Any

    @classmethod
    def of(cls, value: Any) -> PartitionValue:
        if value is None:
            return cls(kind="null", value=None)
        for kind, types in _PLAIN:
            if isinstance(value, types):
                return cls(kind=kind, value=value)
        if isinstance(value, bytes):
            return cls(kind="bytes", value=base64.b64encode(value).decode())
        if isinstance(value, Decimal):
            return cls(kind="decimal", value=str(value))
        if isinstance(value, uuid.UUID):
            return cls(kind="uuid", value=str(value))
        raise TypeError(f"partition value {value!r}: expected int, float, str, bool, bytes, Decimal or UUID")

    def to_domain(self) -> Any:
        if self.kind == "bytes":
            return base64.b64decode(self.value)
        if self.kind == "decimal":
            return Decimal(self.value)
        if self.kind == "uuid":
            return uuid.UUID(self.value)
        return self.value


_PLAIN: tuple[tuple[PartitionKind, type | tuple[type, ...]], ...] = (("bool", bool), ("int", int), ("float", float), ("str", str))


class DataFileModel(_Model):
    """A written file's manifest entry (pyiceberg's ``DataFile`` field names; bounds in base64)."""

    content: int
    file_path: str
    file_format: str
    partition: tuple[PartitionValue, ...]
    record_count: int
    file_size_in_bytes: int
    column_sizes: dict[int, int] | None
    value_counts: dict[int, int] | None
    null_value_counts: dict[int, int] | None
    nan_value_counts: dict[int, int] | None
    lower_bounds: dict[int, str] | None
    upper_bounds: dict[int, str] | None
    split_offsets: tuple[int, ...] | None
    equality_ids: tuple[int, ...] | None
    sort_order_id: int | None
    spec_id: int

    @classmethod
    def of(cls, f: DataFile) -> DataFileModel:
        def bounds(values: Mapping[int, bytes] | None) -> dict[int, str] | None:
            return None if values is None else {k: base64.b64encode(v).decode() for k, v in values.items()}

        return cls(
            content=f.content.value,
            file_path=f.file_path,
            file_format=f.file_format.name,
            partition=tuple(PartitionValue.of(f.partition[i]) for i in range(len(f.partition))),
            record_count=f.record_count,
            file_size_in_bytes=f.file_size_in_bytes,
            column_sizes=_ints(f.column_sizes),
            value_counts=_ints(f.value_counts),
            null_value_counts=_ints(f.null_value_counts),
            nan_value_counts=_ints(f.nan_value_counts),
            lower_bounds=bounds(f.lower_bounds),
            upper_bounds=bounds(f.upper_bounds),
            split_offsets=tuple(f.split_offsets) if f.split_offsets is not None else None,
            equality_ids=tuple(f.equality_ids) if f.equality_ids is not None else None,
            sort_order_id=f.sort_order_id,
            spec_id=f.spec_id,
        )

    def to_domain(self) -> DataFile:
        def bounds(values: Mapping[int, str] | None) -> dict[int, bytes] | None:
            return None if values is None else {k: base64.b64decode(v) for k, v in values.items()}

        f = DataFile.from_args(
            content=DataFileContent(self.content),
            file_path=self.file_path,
            file_format=FileFormat[self.file_format],
            partition=Record(*(v.to_domain() for v in self.partition)),
            record_count=self.record_count,
            file_size_in_bytes=self.file_size_in_bytes,
            column_sizes=_ints(self.column_sizes),
            value_counts=_ints(self.value_counts),
            null_value_counts=_ints(self.null_value_counts),
            nan_value_counts=_ints(self.nan_value_counts),
            lower_bounds=bounds(self.lower_bounds),
            upper_bounds=bounds(self.upper_bounds),
            split_offsets=list(self.split_offsets) if self.split_offsets is not None else None,
            equality_ids=list(self.equality_ids) if self.equality_ids is not None else None,
            sort_order_id=self.sort_order_id,
        )
        f.spec_id = self.spec_id
        return f


def _ints(values: Mapping[int, int] | None) -> dict[int, int] | None:
    return None if values is None else dict(values)


class TaskOutputModel(_Model):
    """What a task did to one planned partition."""

    added_data_files: tuple[DataFileModel, ...]
    added_delete_files: tuple[DataFileModel, ...]
    removed_data_files: tuple[str, ...]  # paths, looked up in the planned snapshot
    removed_delete_files: tuple[str, ...]
    rows_in: int
    rows_out: int


class TaskResult(_Model):
    """What one executed task did, per planned partition (a unit task has several)."""

    format_version: Literal[2]
    outputs: tuple[TaskOutputModel, ...]

    @property
    def rows_in(self) -> int:
        return sum(o.rows_in for o in self.outputs)

    @property
    def rows_out(self) -> int:
        return sum(o.rows_out for o in self.outputs)

    @property
    def bytes_out(self) -> int:
        return sum(f.file_size_in_bytes for o in self.outputs for f in (*o.added_data_files, *o.added_delete_files))

    @property
    def files_in(self) -> int:
        """Base files the task removed (its change files are counted from its input)."""
        return sum(len(o.removed_data_files) for o in self.outputs)

    @property
    def files_out(self) -> int:
        return sum(len(o.added_data_files) for o in self.outputs)


M = TypeVar("M", bound=_Model)


def _decode(text: str, what: str, model: type[M], legacy: Callable[[list[Any]], dict[str, Any]]) -> M:
    """``text`` as ``model``: the current format, or format 1 (a bare list) through ``legacy``."""
    try:
        raw = json.loads(text)
        if isinstance(raw, list):
            raw = legacy(raw)
        elif not isinstance(raw, dict) or raw.get("format_version") != TASK_FORMAT:
            found = raw.get("format_version") if isinstance(raw, dict) else type(raw).__name__
            raise SystemDatabaseError(
                f"{what}: expected format version 1 (a JSON list) or {TASK_FORMAT}, found {found!r}; "
                "it was written by a newer mixed-iceberg, or by hand"
            )
        return model.model_validate(raw)
    except (ValueError, KeyError, TypeError, ValidationError) as exc:
        if isinstance(exc, SystemDatabaseError):
            raise
        raise SystemDatabaseError(
            f"{what}: expected the JSON of format version {TASK_FORMAT} or 1, found {text[:200]!r}: {exc}"
        ) from exc


def encode_tasks(tasks: Sequence[RewriteTask]) -> str:
    """The JSON text of ``tasks`` (one task of the system database may merge several partitions)."""
    return TaskInput(format_version=TASK_FORMAT, tasks=tuple(RewriteTaskModel.of(t) for t in tasks)).model_dump_json()


def decode_tasks(text: str) -> list[RewriteTask]:
    """The tasks :func:`encode_tasks` wrote (or format 1 wrote).

    Raises:
        SystemDatabaseError: an unknown format version, or a malformed input.
    """
    return [t.to_domain() for t in _decode(text, "task input", TaskInput, _v1_input).tasks]


def encode_data_file(f: DataFile) -> DataFileModel:
    """A written file's manifest entry as its model."""
    return DataFileModel.of(f)


def decode_data_file(model: DataFileModel) -> DataFile:
    """The manifest entry :func:`encode_data_file` modelled."""
    return model.to_domain()


def encode_result(outputs: Sequence[Any]) -> str:
    """The JSON text of a task's :class:`~mixed_iceberg.optimizing.execute.TaskOutput` list."""
    return TaskResult(
        format_version=TASK_FORMAT,
        outputs=tuple(
            TaskOutputModel(
                added_data_files=tuple(DataFileModel.of(f) for f in o.added_data),
                added_delete_files=tuple(DataFileModel.of(f) for f in o.added_deletes),
                removed_data_files=tuple(f.file_path for f in o.removed_data),
                removed_delete_files=tuple(f.file_path for f in o.removed_deletes),
                rows_in=o.rows_in,
                rows_out=o.rows_out,
            )
            for o in outputs
        ),
    ).model_dump_json()


def decode_result(text: str) -> TaskResult:
    """The output :func:`encode_result` wrote (or format 1 wrote).

    Raises:
        SystemDatabaseError: an unknown format version, or a malformed output.
    """
    return _decode(text, "task output", TaskResult, _v1_result)


# -- format 1: a bare list with abbreviated keys (rows written before format versions) -----------


def _v1_base_file(d: Mapping[str, Any]) -> dict[str, Any]:
    mask, index = d["node"]
    return {
        "path": d["path"],
        "size_bytes": d["size"],
        "record_count": d["records"],
        "transaction_id": d["tx"],
        "tree_node": {"mask": mask, "index": index},
        "pos_delete_files": d["pos"],
        "pos_delete_records": d["pos_records"],
        "eq_delete_files": d["eq"],
    }


def _v1_input(tasks: list[Any]) -> dict[str, Any]:
    return {
        "format_version": TASK_FORMAT,
        "tasks": [
            {
                "partition": t["partition"],
                "type": t["type"],
                "rewrite_files": [_v1_base_file(f) for f in t["rewrite"]],
                "segment_files": [_v1_base_file(f) for f in t["segments"]],
                "change_files": [
                    {
                        "path": f["path"],
                        "size_bytes": f["size"],
                        "record_count": f["records"],
                        "sequence_number": f["seq"],
                        "transaction_id": f["tx"],
                        "is_delete": f["delete"],
                    }
                    for f in t["change"]
                ],
                "from_sequence": t["from"],
                "to_sequence": t["to"],
                "drop_delete_files": t["drop"],
                "combine_deletes": t["combine"],
            }
            for t in tasks
        ],
    }


def _v1_data_file(d: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "content": d["content"],
        "file_path": d["path"],
        "file_format": d["format"],
        "partition": [{"kind": kind, "value": value} for kind, value in d["partition"]],
        "record_count": d["records"],
        "file_size_in_bytes": d["size"],
        "column_sizes": d["column_sizes"],
        "value_counts": d["value_counts"],
        "null_value_counts": d["null_counts"],
        "nan_value_counts": d["nan_counts"],
        "lower_bounds": d["lower"],
        "upper_bounds": d["upper"],
        "split_offsets": d["split_offsets"],
        "equality_ids": d["equality_ids"],
        "sort_order_id": d["sort_order_id"],
        "spec_id": d["spec_id"],
    }


def _v1_result(outputs: list[Any]) -> dict[str, Any]:
    return {
        "format_version": TASK_FORMAT,
        "outputs": [
            {
                "added_data_files": [_v1_data_file(f) for f in o["added_data"]],
                "added_delete_files": [_v1_data_file(f) for f in o["added_deletes"]],
                "removed_data_files": o["removed_data"],
                "removed_delete_files": o["removed_deletes"],
                "rows_in": o["rows_in"],
                "rows_out": o["rows_out"],
            }
            for o in outputs
        ],
    }
