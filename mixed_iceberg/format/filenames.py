"""Mixed-Iceberg data file names (Amoro ``FileNameRules.java``, ``TableFileUtil.java``).

A keyed table's file name carries what Iceberg metadata does not::

    {tree node id}-{file type}-{transaction id}-{partition id:05d}-{task id}-{operation id}-{count:05d}.{ext}
    e.g. 4-ED-101-00000-0-9009257362994691056-00002.parquet

Readers parse the node, the file type and the transaction id back; the other fields only keep
names unique. Names that do not follow the pattern (files added by Hive, Spark or plain
Iceberg writers) get Amoro's defaults: a ChangeStore file is an insert file of the root node at
its data sequence number, a BaseStore file a base file of the root node at transaction 0.
"""

from __future__ import annotations

import itertools
import re
import secrets
from dataclasses import dataclass, field
from functools import lru_cache

from mixed_iceberg.format.kinds import DataFileType, TableStore
from mixed_iceberg.format.tree import DataTreeNode

__all__ = [
    "FileNameMeta",
    "WriterIdentity",
    "file_name",
    "format_file_name",
    "is_optimizing_pos_delete_file",
    "optimizing_pos_delete_file_name",
    "parse_base",
    "parse_change",
    "parse_file_type",
]

# re.ASCII because Java's \d and \w are ASCII-only; fullmatch because Amoro calls matches().
_KEYED_FILE_NAME = re.compile(r"\.?(\d+)-(\w+)-(\d+)-(\d+)-(\d+)-.*", re.ASCII)
# Iceberg FileFormat extensions that Amoro strips in getFileNameWithoutExt.
_DATA_EXTENSIONS = (".parquet", ".orc", ".avro")
_POS_DELETE_IDENTIFIER = "delete"


@dataclass(frozen=True, slots=True)
class FileNameMeta:
    """What a keyed file's name says about it (Amoro ``DefaultKeyedFile.FileMeta``).

    Attributes:
        transaction_id: Orders the file's rows against other files' rows of the same key.
        file_type: Base, insert, equality-delete or position-delete file.
        node: The tree node whose keys the file holds.
    """

    transaction_id: int
    file_type: DataFileType
    node: DataTreeNode

    def __post_init__(self) -> None:
        if self.transaction_id < 0:
            raise ValueError(f"transaction id must be >= 0, found {self.transaction_id}")


def file_name(path: str) -> str:
    """The part of a path after its last ``/``."""
    return path[path.rfind("/") + 1 :]


def _check_parts(**numbers: int) -> None:
    for name, value in numbers.items():
        if value < 0:
            raise ValueError(f"{name} must be >= 0 for the name to parse back, found {value}")


def format_file_name(
    *,
    node: DataTreeNode,
    file_type: DataFileType,
    transaction_id: int,
    partition_id: int,
    task_id: int,
    operation_id: str,
    count: int,
    extension: str = "parquet",
) -> str:
    """Build a file name exactly as Amoro's ``FileNameRules.fileName`` does.

    Args:
        node: Tree node of every row in the file.
        file_type: What the file holds; its short name goes into the name.
        transaction_id: 0 when readers should use the file's data sequence number instead.
        partition_id: The engine's subtask index.
        task_id: The engine's attempt or task id.
        operation_id: Random per writer instance, so names never collide.
        count: Per-writer file counter, from 1.
        extension: The file format, without the dot.

    Raises:
        ValueError: If a number is negative (the name would not parse back) or the operation
            id holds a ``/``.

    Example:
        >>> format_file_name(node=DataTreeNode(3, 0), file_type=DataFileType.INSERT_FILE,
        ...     transaction_id=101, partition_id=0, task_id=0, operation_id="42", count=2)
        '4-I-101-00000-0-42-00002.parquet'
    """
    _check_parts(transaction_id=transaction_id, partition_id=partition_id, task_id=task_id, count=count)
    if not operation_id or "/" in operation_id:
        raise ValueError(f"operation id must be non-empty without '/', found {operation_id!r}")
    base = f"{node.id}-{file_type.short_name}-{transaction_id}-{partition_id:05d}-{task_id}-{operation_id}-{count:05d}"
    return f"{base}.{extension}"


@dataclass(slots=True, kw_only=True)
class WriterIdentity:
    """Who writes: engine subtask (``partition_id``), attempt (``task_id``) and a random operation
    id; names that writer's files with its own counter.

    Like Amoro's ``FileNameRules``, the operation id is a random non-negative long, so two
    writers with the same partition and task id never produce the same name.

    Example:
        >>> writer = WriterIdentity(operation_id="9")
        >>> writer.file_name(DataTreeNode.root(), DataFileType.BASE_FILE, 7)
        '1-B-7-00000-0-9-00001.parquet'
    """

    partition_id: int = 0
    task_id: int = 0
    extension: str = "parquet"
    operation_id: str = field(default_factory=lambda: str(secrets.randbits(63)))
    _counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1), init=False, repr=False)

    def __post_init__(self) -> None:
        # Fail at construction, not at the first file a writer rolls.
        _check_parts(partition_id=self.partition_id, task_id=self.task_id)

    def file_name(self, node: DataTreeNode, file_type: DataFileType, transaction_id: int = 0) -> str:
        """The next file name for a node and file type (``transaction_id`` 0: as Flink writers,
        readers then use the file's sequence number)."""
        return format_file_name(
            node=node,
            file_type=file_type,
            transaction_id=transaction_id,
            partition_id=self.partition_id,
            task_id=self.task_id,
            operation_id=self.operation_id,
            count=next(self._counter),
            extension=self.extension,
        )


@lru_cache(maxsize=1 << 16)
def _match(path: str) -> tuple[int, DataFileType, int] | None:
    """Node id, type and transaction id of a keyed name; ``None`` if the name is not keyed.

    Memoised (names are immutable): every plan parses the name of every live file again,
    about a millisecond of each optimizer plan after a BaseStore commit at 1M rows."""
    match = _KEYED_FILE_NAME.fullmatch(file_name(path))
    if match is None:
        return None
    try:
        file_type = DataFileType.from_short_name(match.group(2))
    except ValueError:
        return None  # e.g. plain Iceberg's "00000-0-<uuid>-00001.parquet" has type "0"
    return int(match.group(1)), file_type, int(match.group(3))


def parse_change(path: str, sequence_number: int | None) -> FileNameMeta:
    """What the name of a ChangeStore file says (Amoro ``parseChange``).

    Args:
        path: The file's path or name.
        sequence_number: The file's Iceberg data sequence number; it stands in for the
            transaction id when the name holds 0 (Flink writers) or is not a keyed name.

    Raises:
        ValueError: If the sequence number is needed but ``None``, or the node id is 0.
    """
    parsed = _match(path)
    if parsed is None:
        if sequence_number is None:
            raise ValueError(f"change file {path!r} is not a keyed name and has no data sequence number")
        return FileNameMeta(sequence_number, DataFileType.INSERT_FILE, DataTreeNode.root())
    node_id, file_type, transaction_id = parsed
    if transaction_id == 0:
        if sequence_number is None:
            raise ValueError(f"change file {path!r} has transaction id 0 and no data sequence number")
        transaction_id = sequence_number
    return FileNameMeta(transaction_id, file_type, DataTreeNode.of_id(node_id))


def parse_base(path: str) -> FileNameMeta:
    """What the name of a BaseStore file says (Amoro ``parseBase``).

    An ``I`` type in a BaseStore name is read as ``B``, as Amoro does.

    Raises:
        ValueError: If the node id in the name is 0.
    """
    parsed = _match(path)
    if parsed is None:
        return FileNameMeta(0, DataFileType.BASE_FILE, DataTreeNode.root())
    node_id, file_type, transaction_id = parsed
    return FileNameMeta(transaction_id, _base_type(file_type), DataTreeNode.of_id(node_id))


def _base_type(file_type: DataFileType) -> DataFileType:
    return DataFileType.BASE_FILE if file_type is DataFileType.INSERT_FILE else file_type


def parse_file_type(path: str, store: TableStore) -> DataFileType:
    """The file type a name implies in a store (Amoro ``parseFileType``)."""
    parsed = _match(path)
    if store is TableStore.CHANGE:
        return DataFileType.INSERT_FILE if parsed is None else parsed[1]
    return DataFileType.BASE_FILE if parsed is None else _base_type(parsed[1])


def _strip_data_extension(name: str) -> str:
    for extension in _DATA_EXTENSIONS:
        if name.endswith(extension):
            return name[: -len(extension)]
    return name


def optimizing_pos_delete_file_name(data_file_name: str, suffix: str) -> str:
    """Name of a position-delete file that covers one data file: ``{data}-delete-{suffix}``.

    Args:
        data_file_name: The data file's name, usually without its extension (as Amoro's
            ``IcebergFanoutPosDeleteWriter`` passes it).
        suffix: Keeps names unique, e.g. a count and an extension.
    """
    return f"{data_file_name}-{_POS_DELETE_IDENTIFIER}-{suffix}"


def is_optimizing_pos_delete_file(data_file_path: str, pos_delete_file_path: str) -> bool:
    """Whether a position-delete file was written for exactly this data file.

    Amoro's evaluator uses it to tell per-file deletes from shared ones
    (``TableFileUtil.isOptimizingPosDeleteFile``).
    """
    data_name = _strip_data_extension(file_name(data_file_path))
    return file_name(pos_delete_file_path).startswith(f"{data_name}-{_POS_DELETE_IDENTIFIER}")
