"""Task inputs and outputs in the system database: versioned JSON with clear keys, rows written
before format versions still decode to the same tasks and files, and an unknown version is
refused naming what was expected and found."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from types import SimpleNamespace

import pytest
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.typedef import Record

from mixed_iceberg.exceptions import SystemDatabaseError
from mixed_iceberg.format import DataTreeNode
from mixed_iceberg.optimizer.codec import TASK_FORMAT, decode_result, decode_tasks, encode_result, encode_tasks
from mixed_iceberg.optimizing.model import BaseFile, ChangeFile, OptimizingType, RewriteTask

TASK = RewriteTask(
    partition="p=1",
    type=OptimizingType.MAJOR,
    rewrite=(BaseFile("b.parquet", 100, 10, 4, DataTreeNode(1, 0), ("pd.parquet",), 2, ("ed.parquet",)),),
    segments=(BaseFile("s.parquet", 50, 5, 3, DataTreeNode(1, 1), (), 0),),
    change=(ChangeFile("c.parquet", 10, 1, 3, 3, True),),
    from_sequence=2,
    to_sequence=5,
    drop_delete_files=("old.parquet",),
    combine_deletes=("s.parquet",),
)

#: What format 1 (before format versions) wrote for TASK, and for one output of it.
V1_INPUT = (
    '[{"partition":"p=1","type":"major","rewrite":[{"path":"b.parquet","size":100,"records":10,"tx":4,"node":[1,0],'
    '"pos":["pd.parquet"],"pos_records":2,"eq":["ed.parquet"]}],"segments":[{"path":"s.parquet","size":50,"records":5,'
    '"tx":3,"node":[1,1],"pos":[],"pos_records":0,"eq":[]}],"change":[{"path":"c.parquet","size":10,"records":1,"seq":3,'
    '"tx":3,"delete":true}],"from":2,"to":5,"drop":["old.parquet"],"combine":["s.parquet"]}]'
)
V1_OUTPUT = (
    '[{"added_data":[{"content":0,"path":"w.parquet","format":"PARQUET","partition":[["int",1],["str","x"],'
    '["bytes","AAE="],["decimal","1.50"],["uuid","00000000-0000-0000-0000-000000000007"],["null",null],["bool",true],'
    '["float",2.5]],"records":3,"size":300,"column_sizes":{"1":10},"value_counts":{"1":3},"null_counts":{"1":0},'
    '"nan_counts":null,"lower":{"1":"AQ=="},"upper":{"1":"CQ=="},"split_offsets":[4],"equality_ids":null,'
    '"sort_order_id":0,"spec_id":0}],"added_deletes":[],"removed_data":["b.parquet"],"removed_deletes":["pd.parquet"],'
    '"rows_in":5,"rows_out":3}]'
)


def _written() -> DataFile:
    f = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path="w.parquet",
        file_format=FileFormat.PARQUET,
        partition=Record(1, "x", b"\x00\x01", Decimal("1.50"), uuid.UUID(int=7), None, True, 2.5),
        record_count=3,
        file_size_in_bytes=300,
        column_sizes={1: 10},
        value_counts={1: 3},
        null_value_counts={1: 0},
        nan_value_counts=None,
        lower_bounds={1: b"\x01"},
        upper_bounds={1: b"\x09"},
        split_offsets=[4],
        equality_ids=None,
        sort_order_id=0,
    )
    f.spec_id = 0
    return f


def _fields(f: DataFile) -> tuple[object, ...]:
    partition = tuple(f.partition[i] for i in range(len(f.partition)))
    return (
        f.content, f.file_path, f.file_format, partition, f.record_count, f.file_size_in_bytes, f.column_sizes,
        f.value_counts, f.null_value_counts, f.nan_value_counts, f.lower_bounds, f.upper_bounds, f.split_offsets,
        f.equality_ids, f.sort_order_id, f.spec_id,
    )  # fmt: skip


def _output() -> SimpleNamespace:
    return SimpleNamespace(
        added_data=[_written()],
        added_deletes=[],
        removed_data=[SimpleNamespace(file_path="b.parquet")],
        removed_deletes=[SimpleNamespace(file_path="pd.parquet")],
        rows_in=5,
        rows_out=3,
    )


def test_a_task_input_carries_its_format_version_and_clear_keys_and_decodes_to_the_same_tasks() -> None:
    text = encode_tasks([TASK, TASK])
    raw = json.loads(text)
    assert raw["format_version"] == TASK_FORMAT == 2
    (first, _) = raw["tasks"]
    assert {"rewrite_files", "segment_files", "change_files", "from_sequence", "to_sequence"} <= first.keys()
    assert set(first["change_files"][0]) == {
        "path",
        "size_bytes",
        "record_count",
        "sequence_number",
        "transaction_id",
        "is_delete",
    }
    assert decode_tasks(text) == [TASK, TASK]


def test_a_task_output_round_trips_every_partition_value_kind_and_the_files_metrics() -> None:
    result = decode_result(encode_result([_output()]))
    assert json.loads(encode_result([_output()]))["format_version"] == 2
    (out,) = result.outputs
    assert _fields(out.added_data_files[0].to_domain()) == _fields(_written())
    assert (out.removed_data_files, out.removed_delete_files) == (("b.parquet",), ("pd.parquet",))
    assert (result.rows_in, result.rows_out, result.bytes_out, result.files_in, result.files_out) == (5, 3, 300, 1, 1)


def test_rows_written_before_format_versions_decode_to_what_they_held() -> None:
    assert decode_tasks(V1_INPUT) == [TASK]
    old, new = decode_result(V1_OUTPUT), decode_result(encode_result([_output()]))
    assert old == new
    assert _fields(old.outputs[0].added_data_files[0].to_domain()) == _fields(_written())
    assert decode_result("[]").outputs == ()


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('{"format_version": 3, "tasks": []}', "found 3"),
        ('{"tasks": []}', "found None"),
        ('"a string"', "found 'str'"),
    ],
)
def test_an_input_of_an_unknown_format_version_is_refused_naming_it(text: str, found: str) -> None:
    with pytest.raises(SystemDatabaseError, match=rf"task input: expected format version 1 \(a JSON list\) or 2, {found}"):
        decode_tasks(text)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"format_version": 2, "tasks": [{"partition": "p"}]}',
        '[{"partition": "p", "type": "minor"}]',
        '{"format_version": 2, "tasks": [], "extra": 1}',
    ],
)
def test_a_malformed_input_is_refused_as_a_system_database_error(text: str) -> None:
    with pytest.raises(SystemDatabaseError, match="task input: expected the JSON of format version 2 or 1"):
        decode_tasks(text)
