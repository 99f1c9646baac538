"""The one delete index follows the spec's scan-planning rules, and its users agree with it.

The reader's scan planning, the equality-delete reader and the optimizer's collect all ask
:class:`DeleteIndex`; these tests pin the rules on metadata alone (no files are read).
"""

from __future__ import annotations

from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record

from mixed_iceberg.store.manifests.delete_index import DeleteIndex
from mixed_iceberg.store.manifests.live_files import LiveFile
from mixed_iceberg.store.write.position_deletes import FILE_PATH_FIELD_ID

SPECS = {0: PartitionSpec(spec_id=0), 1: PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "p"), spec_id=1)}


def live(
    content: DataFileContent,
    name: str,
    seq: int,
    *,
    spec_id: int = 1,
    part: str | None = "a",
    target: str = "",
    paths: tuple[str, str] | None = None,
) -> LiveFile:
    lower, upper = paths or (target, target)
    f = DataFile.from_args(
        content=content, file_path=name, file_format=FileFormat.PARQUET, partition=Record(part) if part else Record(),
        record_count=1, file_size_in_bytes=1,
        lower_bounds={FILE_PATH_FIELD_ID: lower.encode()} if lower else None,
        upper_bounds={FILE_PATH_FIELD_ID: upper.encode()} if upper else None,
        equality_ids=[1] if content == DataFileContent.EQUALITY_DELETES else None,
    )  # fmt: skip
    f.spec_id = spec_id
    return LiveFile(f, seq, seq)


def data(name: str, seq: int, *, spec_id: int = 1, part: str = "a") -> LiveFile:
    return live(DataFileContent.DATA, name, seq, spec_id=spec_id, part=part)


def names(files: tuple[LiveFile, ...]) -> list[str]:
    return [f.data_file.file_path for f in files]


def test_position_deletes_apply_at_or_after_the_data_sequence_in_the_same_spec_and_partition() -> None:
    index = DeleteIndex.build(
        SPECS,
        [
            live(DataFileContent.POSITION_DELETES, "pos-a2", 2),
            live(DataFileContent.POSITION_DELETES, "pos-a5", 5),
            live(DataFileContent.POSITION_DELETES, "pos-b9", 9, part="b"),
            live(DataFileContent.POSITION_DELETES, "pos-spec0", 9, spec_id=0, part=None),
        ],
    )
    assert names(index.position_deletes(data("a2", 2))) == ["pos-a2", "pos-a5"]  # equal sequence applies
    assert names(index.position_deletes(data("a3", 3))) == ["pos-a5"]
    assert names(index.position_deletes(data("a6", 6))) == []
    assert names(index.position_deletes(data("b1", 1, part="b"))) == ["pos-b9"]
    # A position delete of an unpartitioned spec is not global: it applies to that spec's files.
    assert names(index.position_deletes(data("c1", 1, part="c"))) == []


def test_a_position_delete_referencing_one_file_applies_to_that_file_only() -> None:
    index = DeleteIndex.build(SPECS, [live(DataFileContent.POSITION_DELETES, "pos-x", 4, target="x")])
    assert names(index.position_deletes(data("x", 4))) == ["pos-x"]
    assert names(index.position_deletes(data("y", 1))) == []
    assert names(index.position_deletes(data("x", 5))) == []  # the delete is older than the file


def test_equality_deletes_apply_to_strictly_older_data_of_their_partition_or_globally() -> None:
    index = DeleteIndex.build(
        SPECS,
        [
            live(DataFileContent.EQUALITY_DELETES, "eq-a3", 3),
            live(DataFileContent.EQUALITY_DELETES, "eq-b3", 3, part="b"),
            live(DataFileContent.EQUALITY_DELETES, "eq-global5", 5, spec_id=0, part=None),
        ],
    )
    assert names(index.equality_deletes(data("a1", 1)).files) == ["eq-a3", "eq-global5"]
    assert names(index.equality_deletes(data("a3", 3)).files) == ["eq-global5"]  # equal sequence does not
    assert names(index.equality_deletes(data("c4", 4, part="c")).files) == ["eq-global5"]
    assert names(index.equality_deletes(data("a5", 5)).files) == []
    assert index.has_equality_deletes


def test_data_files_with_the_same_equality_deletes_share_one_key() -> None:
    index = DeleteIndex.build(
        SPECS, [live(DataFileContent.EQUALITY_DELETES, "eq-a3", 3), live(DataFileContent.EQUALITY_DELETES, "eq-a6", 6)]
    )
    keys = {name: index.equality_deletes(data(name, seq)).key for name, seq in [("a1", 1), ("a2", 2), ("a4", 4), ("a7", 7)]}
    assert keys["a1"] == keys["a2"] != keys["a4"] != keys["a7"]
    # Files newer than every delete share the key of "nothing applies", whatever their partition.
    assert index.equality_deletes(data("b9", 9, part="b")).key == keys["a7"]
    assert not DeleteIndex.build(SPECS, []).has_equality_deletes


def test_a_position_delete_with_a_range_of_file_paths_applies_to_the_data_files_inside_it() -> None:
    index = DeleteIndex.build(SPECS, [live(DataFileContent.POSITION_DELETES, "pos-bd", 4, paths=("b", "d"))])
    assert [name for name in "abcde" if names(index.position_deletes(data(name, 1)))] == ["b", "c", "d"]
