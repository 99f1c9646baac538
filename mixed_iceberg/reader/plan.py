"""Which files a merged read of a keyed table touches. Pure: metadata in, plan out.

Change files count only when their data sequence number is above their partition's
optimized sequence (and within the requested sequence range). The transaction id of a
change file comes from its name, or is its data sequence number when the name says 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pyiceberg.manifest import DataFile
from pyiceberg.table import Table

from mixed_iceberg.format import parse_change
from mixed_iceberg.store.manifests.live_files import LiveFile
from mixed_iceberg.store.write.layout import partition_path
from mixed_iceberg.typedef import DataFileType

__all__ = ["ChangeFileRef", "PartitionIndex", "plan_change_files"]


class PartitionIndex:
    """Dense ordinals for partition paths, so rows can carry their partition as an int."""

    def __init__(self) -> None:
        self._ordinals: dict[str, int] = {}
        self._paths: list[str] = []

    def ordinal(self, path: str) -> int:
        return self._ordinals.setdefault(path, len(self._ordinals))

    def path(self, ordinal: int) -> str:
        """The partition path of an ordinal this index handed out."""
        if len(self._paths) != len(self._ordinals):
            self._paths = list(self._ordinals)
        return self._paths[ordinal]


@dataclass(frozen=True, slots=True)
class ChangeFileRef:
    """One change file to read, with the constants its rows inherit."""

    path: str
    file_type: DataFileType
    transaction_id: int
    sequence_number: int
    partition: int
    record_count: int

    @property
    def is_delete(self) -> bool:
        return self.file_type == DataFileType.EQ_DELETE_FILE


def plan_change_files(
    store: Table,
    files: Sequence[LiveFile],
    partitions: PartitionIndex,
    optimized_sequence: Mapping[str, int],
    *,
    from_sequence: int | None = None,
    to_sequence: int | None = None,
    admit: Callable[[DataFile], bool] | None = None,
) -> list[ChangeFileRef]:
    """Change files visible to a read, ordered by (transaction id, path).

    ``from_sequence`` (exclusive) raises each partition's floor, its optimized sequence, to at
    least itself; ``to_sequence`` is inclusive.
    ``admit`` (e.g. a filter's metrics test) is asked only about files the sequences keep: in a
    long history most files are merged already, and a metrics test costs per file.
    """
    refs = []
    for live in files:
        path = partition_path(store, live.data_file)
        floor = optimized_sequence.get(path, -1)
        if from_sequence is not None:
            floor = max(floor, from_sequence)
        if live.sequence_number <= floor or (to_sequence is not None and live.sequence_number > to_sequence):
            continue
        if admit is not None and not admit(live.data_file):
            continue
        meta = parse_change(live.data_file.file_path, live.sequence_number)
        refs.append(
            ChangeFileRef(
                path=live.data_file.file_path,
                file_type=meta.file_type,
                transaction_id=meta.transaction_id,
                sequence_number=live.sequence_number,
                partition=partitions.ordinal(path),
                record_count=live.data_file.record_count,
            )
        )
    refs.sort(key=lambda ref: (ref.transaction_id, ref.path))
    return refs
