"""Split a merged read into groups of files that merge independently. Pure: metadata in, groups out.

All rows of a key are in files of the key's tree node or of a node related to it (an ancestor
or a descendant: see :mod:`mixed_iceberg.format.tree`). So files grouped by their node's index
under the smallest mask among them never share a key with another group, and each group can be
read and merged alone: a streaming read holds one group at a time, a distributed read sends
each to a worker. Within a partition the smallest mask is the partition's own; when a key may
sit in several partitions (a table partitioned by a column outside its key, or files written
under several partition specs) groups span every partition, by node only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyiceberg.table import FileScanTask
from pyiceberg.transforms import VoidTransform

from mixed_iceberg.format import parse_base, parse_change
from mixed_iceberg.format.tree import DataTreeNode

if TYPE_CHECKING:
    from mixed_iceberg.handle import TableHandle

__all__ = ["BaseFileInfo", "ChangeFileInfo", "FileGroup", "group_files", "keys_stay_in_partition"]


@dataclass(frozen=True, slots=True)
class BaseFileInfo:
    """A BaseStore data file: its path and partition path."""

    path: str
    partition: str


@dataclass(frozen=True, slots=True)
class ChangeFileInfo:
    """A ChangeStore file: its path, partition path and data sequence number."""

    path: str
    partition: str
    sequence_number: int


@dataclass(frozen=True, slots=True)
class FileGroup:
    """Files whose keys no other group's files hold, by path; ``partition`` and ``node`` say
    which part of the table they are (``partition`` None: every partition; ``node`` None: every node)."""

    base_paths: frozenset[str]
    change_paths: frozenset[str]
    partition: str | None = None
    node: DataTreeNode | None = None

    @classmethod
    def whole(cls, tasks: Iterable[FileScanTask]) -> FileGroup:
        """One group of every BaseStore file of ``tasks``."""
        return cls(frozenset(t.file.file_path for t in tasks), frozenset())


def keys_stay_in_partition(table: TableHandle) -> bool:
    """Whether all rows of a key are in one partition path: every partition field is computed
    from key columns (or is ``void``) and each store has had one partition spec only."""
    schema = table.schema()
    stores = [table.base_store, *([table.change_store] if table.change_store is not None else [])]
    if any(len(store.metadata.partition_specs) != 1 for store in stores):
        return False
    return all(
        schema.find_column_name(f.source_id) in table.primary_key or isinstance(f.transform, VoidTransform)
        for f in table.base_store.spec().fields
    )


def group_files(base: Sequence[BaseFileInfo], change: Sequence[ChangeFileInfo], *, by_partition: bool) -> list[FileGroup]:
    """Groups of ``base`` and ``change`` files that share no key, ordered by partition and node.

    ``by_partition`` is only correct when a key's rows are all in one partition path
    (:func:`keys_stay_in_partition`).
    """
    nodes: list[tuple[str | None, DataTreeNode, str, bool]] = []
    for b in base:
        nodes.append((b.partition if by_partition else None, parse_base(b.path).node, b.path, True))
    for c in change:
        nodes.append((c.partition if by_partition else None, parse_change(c.path, c.sequence_number).node, c.path, False))
    smallest: dict[str | None, int] = {}
    for partition, node, _, _ in nodes:
        smallest[partition] = min(smallest.get(partition, node.mask), node.mask)
    members: dict[tuple[str | None, int], tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for partition, node, path, is_base in nodes:
        group = members[(partition, node.index & smallest[partition])]
        (group[0] if is_base else group[1]).append(path)
    return [
        FileGroup(frozenset(b), frozenset(c), partition, DataTreeNode(smallest[partition], index))
        for (partition, index), (b, c) in sorted(members.items(), key=lambda item: (item[0][0] or "", item[0][1]))
    ]
