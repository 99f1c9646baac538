"""File naming against Amoro's FileNameRules.java and TableFileUtil.java."""

from __future__ import annotations

import pytest

from mixed_iceberg.format import (
    DataTreeNode,
    FileNameMeta,
    WriterIdentity,
    file_name,
    format_file_name,
    is_optimizing_pos_delete_file,
    optimizing_pos_delete_file_name,
    parse_base,
    parse_change,
    parse_file_type,
)
from mixed_iceberg.typedef import DataFileType, TableStore

BASE, INSERT, EQ_DELETE, POS_DELETE = (
    DataFileType.BASE_FILE,
    DataFileType.INSERT_FILE,
    DataFileType.EQ_DELETE_FILE,
    DataFileType.POS_DELETE_FILE,
)
ROOT = DataTreeNode.root()
ICEBERG_NAME = "00000-0-3f5e1c2a-9b7d-4c1e-8f00-1234567890ab-00001.parquet"


def test_names_have_amoros_layout() -> None:
    name = format_file_name(
        node=DataTreeNode(3, 0),
        file_type=EQ_DELETE,
        transaction_id=101,
        partition_id=12,
        task_id=3,
        operation_id="9009257362994691056",
        count=123456,
    )
    # %d-%s-%d-%05d-%d-%s-%05d: zero padding is a minimum width, never a truncation.
    assert name == "4-ED-101-00012-3-9009257362994691056-123456.parquet"


def test_the_extension_follows_the_file_format() -> None:
    names = {fmt: WriterIdentity(operation_id="7", extension=fmt).file_name(ROOT, BASE) for fmt in ("parquet", "orc", "avro")}
    assert names == {fmt: f"1-B-0-00000-0-7-00001.{fmt}" for fmt in ("parquet", "orc", "avro")}


@pytest.mark.parametrize(
    ("transaction_id", "partition_id", "task_id", "count", "field"),
    [(-1, 0, 0, 1, "transaction_id"), (1, -1, 0, 1, "partition_id"), (1, 0, -1, 1, "task_id"), (1, 0, 0, -1, "count")],
)
def test_negative_numbers_are_refused_because_they_would_not_parse(
    transaction_id: int, partition_id: int, task_id: int, count: int, field: str
) -> None:
    with pytest.raises(ValueError, match=f"{field} must be >= 0"):
        format_file_name(
            node=ROOT,
            file_type=BASE,
            transaction_id=transaction_id,
            partition_id=partition_id,
            task_id=task_id,
            operation_id="1",
            count=count,
        )


@pytest.mark.parametrize("operation_id", ["", "a/b"])
def test_operation_ids_must_stay_inside_the_file_name(operation_id: str) -> None:
    with pytest.raises(ValueError, match="operation id"):
        format_file_name(
            node=ROOT, file_type=BASE, transaction_id=1, partition_id=0, task_id=0, operation_id=operation_id, count=1
        )


def test_generator_counts_files_and_keeps_one_operation_id() -> None:
    writer = WriterIdentity(partition_id=2, task_id=5, operation_id="42")
    assert writer.file_name(DataTreeNode(1, 1), INSERT, 7) == "3-I-7-00002-5-42-00001.parquet"
    assert writer.file_name(DataTreeNode(1, 1), EQ_DELETE, 8) == "3-ED-8-00002-5-42-00002.parquet"


def test_generators_draw_random_non_negative_long_operation_ids() -> None:
    ids = {WriterIdentity().operation_id for _ in range(20)}
    assert len(ids) == 20
    assert all(0 <= int(i) < 2**63 for i in ids)


def test_generator_refuses_negative_ids_up_front() -> None:
    with pytest.raises(ValueError, match="task_id must be >= 0"):
        WriterIdentity(task_id=-1)


@pytest.mark.parametrize(
    ("node", "file_type", "transaction_id"),
    [
        (ROOT, BASE, 100),
        (DataTreeNode(3, 2), EQ_DELETE, 101),
        (DataTreeNode(7, 5), INSERT, 2**40),
        (DataTreeNode(1, 0), POS_DELETE, 3),
    ],
)
def test_generated_names_parse_back(node: DataTreeNode, file_type: DataFileType, transaction_id: int) -> None:
    name = WriterIdentity().file_name(node, file_type, transaction_id)
    assert parse_change(f"s3://wh/db/t/change/data/dt=2024-01-01/{name}", None) == FileNameMeta(transaction_id, file_type, node)


@pytest.mark.parametrize(
    ("path", "sequence_number", "expected"),
    [
        ("4-ED-101-00000-0-9009257362994691056-00001.parquet", 5, FileNameMeta(101, EQ_DELETE, DataTreeNode(3, 0))),
        ("/wh/t/change/data/5-I-0-00003-2-77-00001.parquet", 42, FileNameMeta(42, INSERT, DataTreeNode(3, 1))),  # Flink: tx 0
        (".4-I-3-00000-0-1-00001.parquet", 9, FileNameMeta(3, INSERT, DataTreeNode(3, 0))),  # leading dot allowed
        (ICEBERG_NAME, 9, FileNameMeta(9, INSERT, ROOT)),
        ("00000-0-12345678-1234-5678-abcd-00001.parquet", 9, FileNameMeta(9, INSERT, ROOT)),  # matches; type "0" is unknown
        ("6-XYZ-12-00000-0-1-00001.parquet", 9, FileNameMeta(9, INSERT, ROOT)),
        ("4-I-101-00000-0.parquet", 9, FileNameMeta(9, INSERT, ROOT)),  # too few fields
        ("\u0664-I-3-00000-0-1-00001.parquet", 9, FileNameMeta(9, INSERT, ROOT)),  # Java's \d is ASCII only
    ],
)
def test_parse_change(path: str, sequence_number: int, expected: FileNameMeta) -> None:
    assert parse_change(path, sequence_number) == expected


@pytest.mark.parametrize("path", ["4-I-0-00000-0-1-00001.parquet", ICEBERG_NAME])
def test_parse_change_needs_a_sequence_number_when_the_name_has_no_transaction(path: str) -> None:
    with pytest.raises(ValueError, match="no data sequence number"):
        parse_change(path, None)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("1-B-100-00000-0-4217271085623029157-00001.parquet", FileNameMeta(100, BASE, ROOT)),
        (
            "s3://b/t/base/data/6-I-12-00000-0-1-00001.parquet",
            FileNameMeta(12, BASE, DataTreeNode(3, 2)),
        ),  # "I" is read as "B" in the BaseStore
        ("6-PD-12-00000-0-1-00001.parquet", FileNameMeta(12, POS_DELETE, DataTreeNode(3, 2))),
        ("6-ED-12-00000-0-1-00001.parquet", FileNameMeta(12, EQ_DELETE, DataTreeNode(3, 2))),
        ("7-B-0-00000-0-1-00001.parquet", FileNameMeta(0, BASE, DataTreeNode(3, 3))),  # base keeps tx 0
        (ICEBERG_NAME, FileNameMeta(0, BASE, ROOT)),
        ("part-00000-abc.c000.snappy.parquet", FileNameMeta(0, BASE, ROOT)),  # Spark / Hive
    ],
)
def test_parse_base(path: str, expected: FileNameMeta) -> None:
    assert parse_base(path) == expected


def test_node_id_zero_is_refused_where_amoro_would_loop_forever() -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        parse_base("0-B-1-00000-0-1-00001.parquet")
    assert parse_file_type("0-B-1-00000-0-1-00001.parquet", TableStore.BASE) is BASE  # Amoro never builds the node here


@pytest.mark.parametrize(
    ("path", "store", "expected"),
    [
        ("4-ED-1-00000-0-1-00001.parquet", TableStore.CHANGE, EQ_DELETE),
        ("4-I-1-00000-0-1-00001.parquet", TableStore.CHANGE, INSERT),
        ("4-I-1-00000-0-1-00001.parquet", TableStore.BASE, BASE),
        ("4-PD-1-00000-0-1-00001.parquet", TableStore.BASE, POS_DELETE),
        (ICEBERG_NAME, TableStore.CHANGE, INSERT),
        (ICEBERG_NAME, TableStore.BASE, BASE),
    ],
)
def test_parse_file_type(path: str, store: TableStore, expected: DataFileType) -> None:
    assert parse_file_type(path, store) is expected


def test_file_meta_refuses_negative_transaction_ids() -> None:
    with pytest.raises(ValueError, match="transaction id must be >= 0"):
        FileNameMeta(-1, BASE, ROOT)


def test_file_name_is_the_part_after_the_last_slash() -> None:
    assert file_name("s3://b/t/data/x.parquet") == "x.parquet"
    assert file_name("x.parquet") == "x.parquet"


def test_per_data_file_pos_deletes_are_recognised_by_name() -> None:
    data = "s3://b/t/base/data/1-B-100-00000-0-42-00001.parquet"
    delete = f"s3://b/t/base/data/{optimizing_pos_delete_file_name('1-B-100-00000-0-42-00001', '3-00001')}.parquet"
    assert delete.endswith("/1-B-100-00000-0-42-00001-delete-3-00001.parquet")
    assert is_optimizing_pos_delete_file(data, delete)
    assert not is_optimizing_pos_delete_file("s3://b/t/base/data/1-B-100-00000-0-42-00002.parquet", delete)
    assert not is_optimizing_pos_delete_file(data, "s3://b/t/base/data/1-PD-100-00000-0-42-00001.parquet")
    # Amoro strips only Iceberg's own data-file extensions before comparing.
    assert is_optimizing_pos_delete_file("a/x.orc", "a/x-delete-1.orc")
    assert not is_optimizing_pos_delete_file("a/x.csv", "a/x-delete-1.orc")
