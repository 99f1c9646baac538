"""Which delete files apply to which data file: the Iceberg spec's scan-planning rules, in one place.

Pure (metadata in, metadata out, no I/O). The reader's scan planning, the equality-delete
reader and the optimizer's collect all ask this index, so they never disagree on a file.

The rules (spec, "Scan Planning"), by the *data* sequence numbers of the files:

* a **position** delete file applies to a data file of the same partition (spec id and values)
  whose sequence number is lower or equal; when it references one data file
  (``referenced_data_file``, or equal ``file_path`` bounds) it applies to that file only, and
  when its ``file_path`` bounds are a range, to the data files whose path lies in it (Java's
  ``DeleteFileIndex`` prunes by them too);
* an **equality** delete file applies to a data file whose sequence number is strictly lower, of
  the same partition, or of every partition when the delete file's spec is unpartitioned (a
  global delete).

The equality deletes of a data file are a suffix (by sequence number) of its partition's plus
a suffix of the global ones, so :meth:`DeleteIndex.equality_deletes` is two binary searches, and
its result is shared by every data file with the same suffixes (a reader groups by it).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyiceberg.manifest import DataFile, DataFileContent
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.typedef import Record

from mixed_iceberg.store.manifests.live_files import LiveFile
from mixed_iceberg.store.write.position_deletes import FILE_PATH_FIELD_ID, referenced_data_file

__all__ = ["DeleteIndex", "EqualityDeletes"]

_Partition = tuple[int, Record]


@dataclass(frozen=True, slots=True)
class EqualityDeletes:
    """The equality delete files that apply to a data file; ``key`` is equal for two data files
    exactly when their applicable equality deletes are the same files."""

    key: tuple[object, ...]
    files: tuple[LiveFile, ...]


def _path_bounds(delete: DataFile) -> tuple[bytes | None, bytes | None]:
    """The delete file's ``file_path`` lower and upper bounds (``None`` where it has none)."""
    return (
        (delete.lower_bounds or {}).get(FILE_PATH_FIELD_ID),
        (delete.upper_bounds or {}).get(FILE_PATH_FIELD_ID),
    )


def _within(bounds: tuple[bytes | None, bytes | None], path: bytes) -> bool:
    """Whether ``path`` lies within ``bounds`` (true where a bound is missing)."""
    lower, upper = bounds
    return (lower is None or lower <= path) and (upper is None or path <= upper)


class _BySequence:
    """Delete files of one scope, sorted by data sequence number, with their ``file_path``
    bounds (read once here: a lookup per data file compares them with the file's path)."""

    __slots__ = ("bounds", "files", "sequences")

    def __init__(self, files: list[LiveFile]) -> None:
        files.sort(key=lambda live: live.sequence_number)
        self.files = tuple(files)
        self.sequences = [live.sequence_number for live in files]
        self.bounds = [_path_bounds(live.data_file) for live in files]

    def at_or_after(self, sequence: int) -> int:
        """Index of the first file whose sequence number is >= ``sequence``."""
        return bisect_left(self.sequences, sequence)

    def after(self, sequence: int) -> int:
        """Index of the first file whose sequence number is > ``sequence``."""
        return bisect_right(self.sequences, sequence)


_EMPTY = _BySequence([])


class DeleteIndex:
    """Delete files of one snapshot of one store, indexed for lookups by data file."""

    __slots__ = ("_equality_global", "_equality_scoped", "_position_scoped", "_position_targeted", "_suffixes")

    def __init__(
        self,
        position_targeted: dict[str, _BySequence],
        position_scoped: dict[_Partition, _BySequence],
        equality_scoped: dict[_Partition, _BySequence],
        equality_global: _BySequence,
    ) -> None:
        self._position_targeted = position_targeted
        self._position_scoped = position_scoped
        self._equality_scoped = equality_scoped
        self._equality_global = equality_global
        self._suffixes: dict[tuple[object, ...], EqualityDeletes] = {}

    @classmethod
    def build(cls, specs: Mapping[int, PartitionSpec], deletes: Iterable[LiveFile]) -> DeleteIndex:
        """Index ``deletes`` (live position and equality delete files; data files are ignored).

        Args:
            specs: the store's partition specs by id (which equality deletes are global).
            deletes: live files with their data sequence numbers.
        """
        targeted: dict[str, list[LiveFile]] = defaultdict(list)
        positions: dict[_Partition, list[LiveFile]] = defaultdict(list)
        equalities: dict[_Partition, list[LiveFile]] = defaultdict(list)
        global_: list[LiveFile] = []
        for live in deletes:
            f = live.data_file
            if f.content == DataFileContent.POSITION_DELETES:
                target = referenced_data_file(f)
                if target is not None:
                    targeted[target].append(live)
                else:
                    positions[(f.spec_id, f.partition)].append(live)
            elif f.content == DataFileContent.EQUALITY_DELETES:
                if specs[f.spec_id].is_unpartitioned():
                    global_.append(live)
                else:
                    equalities[(f.spec_id, f.partition)].append(live)
        return cls(
            {path: _BySequence(files) for path, files in targeted.items()},
            {part: _BySequence(files) for part, files in positions.items()},
            {part: _BySequence(files) for part, files in equalities.items()},
            _BySequence(global_),
        )

    def position_deletes(self, data: LiveFile) -> tuple[LiveFile, ...]:
        """The position delete files that apply to ``data`` (those referencing it first)."""
        f = data.data_file
        targeted = self._position_targeted.get(f.file_path, _EMPTY)
        scoped = self._position_scoped.get((f.spec_id, f.partition), _EMPTY)
        first = scoped.at_or_after(data.sequence_number)
        later = scoped.files[first:]
        if later:
            path = f.file_path.encode()
            later = tuple(d for d, bounds in zip(later, scoped.bounds[first:], strict=True) if _within(bounds, path))
        return targeted.files[targeted.at_or_after(data.sequence_number) :] + later

    def equality_deletes(self, data: LiveFile) -> EqualityDeletes:
        """The equality delete files that apply to ``data`` (its partition's, then the global ones)."""
        f = data.data_file
        part = (f.spec_id, f.partition)
        scoped = self._equality_scoped.get(part, _EMPTY)
        local = scoped.after(data.sequence_number)
        global_ = self._equality_global.after(data.sequence_number)
        key = (part if local < len(scoped.files) else None, local if local < len(scoped.files) else 0, global_)
        found = self._suffixes.get(key)
        if found is None:
            found = EqualityDeletes(key, scoped.files[local:] + self._equality_global.files[global_:])
            self._suffixes[key] = found
        return found

    @property
    def has_equality_deletes(self) -> bool:
        return bool(self._equality_scoped or self._equality_global.files)
