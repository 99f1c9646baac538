"""Task inputs and outputs as small JSON: what the system database stores between optimizers.

A task's input is its :class:`~mixed_iceberg.optimizing.model.RewriteTask` list (file paths,
sizes, record counts, sequence numbers, tree nodes): references, never data or a serialized
object graph. Its output is what it wrote, as the manifest entries the commit needs (path,
partition, counts, column metrics), and what it removes, as paths (the committer looks them up
in the planned snapshot). A few hundred bytes per file.

>>> task = RewriteTask(partition="", type=OptimizingType.MINOR, rewrite=(), segments=(),
...     change=(ChangeFile("c.parquet", 10, 1, 3, 3, False),), from_sequence=0, to_sequence=3)
>>> decode_tasks(encode_tasks([task])) == [task]
True
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.typedef import Record

from mixed_iceberg.format import DataTreeNode
from mixed_iceberg.optimizing.model import BaseFile, ChangeFile, OptimizingType, RewriteTask

__all__ = ["TaskResult", "decode_data_file", "decode_result", "decode_tasks", "encode_data_file", "encode_result", "encode_tasks"]


def _base_file(f: BaseFile) -> dict[str, Any]:
    return {
        "path": f.path,
        "size": f.size,
        "records": f.records,
        "tx": f.transaction_id,
        "node": [f.node.mask, f.node.index],
        "pos": list(f.pos_delete_files),
        "pos_records": f.pos_delete_records,
        "eq": list(f.eq_delete_files),
    }


def _change_file(f: ChangeFile) -> dict[str, Any]:
    return {
        "path": f.path,
        "size": f.size,
        "records": f.records,
        "seq": f.sequence_number,
        "tx": f.transaction_id,
        "delete": f.is_delete,
    }


def encode_tasks(tasks: Sequence[RewriteTask]) -> str:
    """The JSON text of ``tasks`` (one task of the system database may merge several partitions)."""
    return json.dumps(
        [
            {
                "partition": t.partition,
                "type": t.type.value,
                "rewrite": [_base_file(f) for f in t.rewrite],
                "segments": [_base_file(f) for f in t.segments],
                "change": [_change_file(f) for f in t.change],
                "from": t.from_sequence,
                "to": t.to_sequence,
                "drop": list(t.drop_delete_files),
                "combine": list(t.combine_deletes),
            }
            for t in tasks
        ],
        separators=(",", ":"),
    )


def decode_tasks(text: str) -> list[RewriteTask]:
    """The tasks :func:`encode_tasks` wrote."""

    def base(d: Mapping[str, Any]) -> BaseFile:
        return BaseFile(
            path=d["path"],
            size=d["size"],
            records=d["records"],
            transaction_id=d["tx"],
            node=DataTreeNode(*d["node"]),
            pos_delete_files=tuple(d["pos"]),
            pos_delete_records=d["pos_records"],
            eq_delete_files=tuple(d["eq"]),
        )

    def change(d: Mapping[str, Any]) -> ChangeFile:
        return ChangeFile(d["path"], d["size"], d["records"], d["seq"], d["tx"], d["delete"])

    return [
        RewriteTask(
            partition=t["partition"],
            type=OptimizingType(t["type"]),
            rewrite=tuple(base(f) for f in t["rewrite"]),
            segments=tuple(base(f) for f in t["segments"]),
            change=tuple(change(f) for f in t["change"]),
            from_sequence=t["from"],
            to_sequence=t["to"],
            drop_delete_files=tuple(t["drop"]),
            combine_deletes=tuple(t["combine"]),
        )
        for t in json.loads(text)
    ]


def _value(value: Any) -> list[Any]:
    """A partition value with its kind (JSON alone cannot tell bytes, decimals or UUIDs apart)."""
    if value is None:
        return ["null", None]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", value]
    if isinstance(value, float):
        return ["float", value]
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, bytes):
        return ["bytes", base64.b64encode(value).decode()]
    if isinstance(value, Decimal):
        return ["decimal", str(value)]
    if isinstance(value, uuid.UUID):
        return ["uuid", str(value)]
    raise TypeError(f"partition value {value!r}: expected int, float, str, bool, bytes, Decimal or UUID")


def _unvalue(encoded: Sequence[Any]) -> Any:
    kind, value = encoded
    if kind == "bytes":
        return base64.b64decode(value)
    if kind == "decimal":
        return Decimal(value)
    if kind == "uuid":
        return uuid.UUID(value)
    return value


def _counts(values: Mapping[int, int] | None) -> dict[str, int] | None:
    return None if values is None else {str(k): v for k, v in values.items()}


def _bounds(values: Mapping[int, bytes] | None) -> dict[str, str] | None:
    return None if values is None else {str(k): base64.b64encode(v).decode() for k, v in values.items()}


def encode_data_file(f: DataFile) -> dict[str, Any]:
    """A written file's manifest entry as JSON-able values."""
    return {
        "content": f.content.value,
        "path": f.file_path,
        "format": f.file_format.name,
        "partition": [_value(f.partition[i]) for i in range(len(f.partition))],
        "records": f.record_count,
        "size": f.file_size_in_bytes,
        "column_sizes": _counts(f.column_sizes),
        "value_counts": _counts(f.value_counts),
        "null_counts": _counts(f.null_value_counts),
        "nan_counts": _counts(f.nan_value_counts),
        "lower": _bounds(f.lower_bounds),
        "upper": _bounds(f.upper_bounds),
        "split_offsets": f.split_offsets,
        "equality_ids": f.equality_ids,
        "sort_order_id": f.sort_order_id,
        "spec_id": f.spec_id,
    }


def decode_data_file(d: Mapping[str, Any]) -> DataFile:
    """The manifest entry :func:`encode_data_file` wrote."""

    def counts(values: Mapping[str, int] | None) -> dict[int, int] | None:
        return None if values is None else {int(k): v for k, v in values.items()}

    def bounds(values: Mapping[str, str] | None) -> dict[int, bytes] | None:
        return None if values is None else {int(k): base64.b64decode(v) for k, v in values.items()}

    f = DataFile.from_args(
        content=DataFileContent(d["content"]),
        file_path=d["path"],
        file_format=FileFormat[d["format"]],
        partition=Record(*(_unvalue(v) for v in d["partition"])),
        record_count=d["records"],
        file_size_in_bytes=d["size"],
        column_sizes=counts(d["column_sizes"]),
        value_counts=counts(d["value_counts"]),
        null_value_counts=counts(d["null_counts"]),
        nan_value_counts=counts(d["nan_counts"]),
        lower_bounds=bounds(d["lower"]),
        upper_bounds=bounds(d["upper"]),
        split_offsets=d["split_offsets"],
        equality_ids=d["equality_ids"],
        sort_order_id=d["sort_order_id"],
    )
    f.spec_id = d["spec_id"]
    return f


class TaskResult:
    """What one executed task did, per planned partition (a unit task has several)."""

    __slots__ = ("outputs",)

    def __init__(self, outputs: Sequence[Mapping[str, Any]]) -> None:
        self.outputs = list(outputs)

    @property
    def rows_in(self) -> int:
        return sum(int(o["rows_in"]) for o in self.outputs)

    @property
    def rows_out(self) -> int:
        return sum(int(o["rows_out"]) for o in self.outputs)

    @property
    def bytes_out(self) -> int:
        return sum(int(f["size"]) for o in self.outputs for f in (*o["added_data"], *o["added_deletes"]))

    @property
    def files_out(self) -> int:
        return sum(len(o["added_data"]) for o in self.outputs)


def encode_result(outputs: Sequence[Any]) -> str:
    """The JSON text of a task's :class:`~mixed_iceberg.optimizing.execute.TaskOutput` list."""
    return json.dumps(
        [
            {
                "added_data": [encode_data_file(f) for f in o.added_data],
                "added_deletes": [encode_data_file(f) for f in o.added_deletes],
                "removed_data": [f.file_path for f in o.removed_data],
                "removed_deletes": [f.file_path for f in o.removed_deletes],
                "rows_in": o.rows_in,
                "rows_out": o.rows_out,
            }
            for o in outputs
        ],
        separators=(",", ":"),
    )


def decode_result(text: str) -> TaskResult:
    return TaskResult(json.loads(text))
