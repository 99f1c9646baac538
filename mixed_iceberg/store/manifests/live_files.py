"""Live files of a snapshot with their data sequence numbers, pruned by a filter.

Manifests are immutable, so their parsed entries are cached by path: a scan after N
commits reads only the manifests it has not seen, which keeps reads flat as history grows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFile, ManifestEntry, ManifestEntryStatus, ManifestFile
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot

from mixed_iceberg._pyiceberg.scan import ScanEvaluators
from mixed_iceberg.caching import LruCache
from mixed_iceberg.store.damage import MANIFEST, MANIFEST_LIST, reading

__all__ = ["LiveFile", "live_files", "manifest_entries", "manifests_of", "remember_entries"]

_CACHE: LruCache[str, tuple[ManifestEntry, ...]] = LruCache(8192)
#: The same entries as plain tuples: scans walk thousands of them, and Record properties are slow.
_FLAT: LruCache[str, tuple[tuple[DataFile, int, int], ...]] = LruCache(8192)


@dataclass(frozen=True, slots=True)
class LiveFile:
    """A file live in a snapshot, with the data sequence number of the commit that added it."""

    data_file: DataFile
    sequence_number: int
    snapshot_id: int


def manifest_entries(io: FileIO, manifest: ManifestFile) -> tuple[ManifestEntry, ...]:
    """The live entries of a committed manifest, cached by path (manifests never change).

    Opening a manifest costs more than reading its entries when it is small (pyiceberg converts
    the Avro header's schema every time; ``.venv/bin/python -m bench.commit_profile``,
    ``bench/results/commit_profile-2026-12-06-4647a3f.json``); commits and scans re-read the same
    manifests constantly.
    The entries are shared: callers must not change them.

    Raises:
        CorruptFileError: the manifest does not parse (``MissingFileError``: it is gone).
    """
    return _CACHE.get_or_build(manifest.manifest_path, lambda: _read_entries(io, manifest))


def _read_entries(io: FileIO, manifest: ManifestFile) -> tuple[ManifestEntry, ...]:
    with reading(io, MANIFEST, manifest.manifest_path):
        return tuple(manifest.fetch_manifest_entry(io, discard_deleted=True))


def manifests_of(table: Table, snapshot: Snapshot) -> list[ManifestFile]:
    """The manifests ``snapshot``'s manifest list names (kept by path once read, see
    ``mixed_iceberg._pyiceberg.patches``).

    Raises:
        CorruptFileError: the manifest list does not parse (``MissingFileError``: it is gone).
    """
    with reading(table.io, MANIFEST_LIST, snapshot.manifest_list):
        return snapshot.manifests(table.io)


def remember_entries(manifest: ManifestFile, written: Sequence[ManifestEntry]) -> None:
    """Cache the live entries of ``manifest``, committed, as this process wrote them (ADDED and
    EXISTING, in file order), so that it need not read its own manifest back.

    Entries come out as a read of the manifest gives them: an ADDED entry without sequence
    numbers takes the manifest's (assigned when its snapshot was committed), and every data
    file takes the manifest's partition spec id.
    """
    entries = []
    for entry in written:
        inherit = entry.status == ManifestEntryStatus.ADDED or manifest.sequence_number == 0
        copy = ManifestEntry.from_args(
            status=entry.status,
            snapshot_id=entry.snapshot_id if entry.snapshot_id is not None else manifest.added_snapshot_id,
            sequence_number=manifest.sequence_number if entry.sequence_number is None and inherit else entry.sequence_number,
            file_sequence_number=(
                manifest.sequence_number if entry.file_sequence_number is None and inherit else entry.file_sequence_number
            ),
            data_file=entry.data_file,
        )
        copy.data_file.spec_id = manifest.partition_spec_id
        entries.append(copy)
    _CACHE.put(manifest.manifest_path, tuple(entries))


def _entries(table: Table, manifest: ManifestFile) -> tuple[tuple[DataFile, int, int], ...]:
    return _FLAT.get_or_build(
        manifest.manifest_path,
        lambda: tuple((e.data_file, e.sequence_number or 0, e.snapshot_id or 0) for e in manifest_entries(table.io, manifest)),
    )


def live_files(
    table: Table,
    snapshot: Snapshot | None,
    row_filter: BooleanExpression | None = None,
    keep: Callable[[DataFile], bool] | None = None,
    *,
    partition_filter: BooleanExpression | None = None,
    case_sensitive: bool = True,
    above_sequence: int = -1,
) -> list[LiveFile]:
    """Files live in ``snapshot`` whose partition and column metrics may match ``row_filter``.

    ``partition_filter`` (default: ``row_filter``) prunes by partition only, for callers that
    may prune partitions by a wider predicate than the one they may test column metrics with.
    ``above_sequence`` keeps only files of a greater data sequence number; a manifest written at
    or below it is not opened (its entries' sequence numbers are at most its own), so a
    ChangeStore's optimized history costs nothing to walk past.

    Raises:
        CorruptFileError: the manifest list or a manifest does not parse (``MissingFileError``:
            one is gone).
    """
    if snapshot is None:
        return []
    manifests = [m for m in manifests_of(table, snapshot) if m.sequence_number is None or m.sequence_number > above_sequence]
    if (row_filter is None or isinstance(row_filter, AlwaysTrue)) and (
        partition_filter is None or isinstance(partition_filter, AlwaysTrue)
    ):
        # Nothing to prune: skip the per-file evaluators (8k calls for a 2k-file history).
        return [
            LiveFile(data_file, sequence, snapshot_id)
            for manifest in manifests
            for data_file, sequence, snapshot_id in _entries(table, manifest)
            if sequence > above_sequence and (keep is None or keep(data_file))
        ]
    evaluators = ScanEvaluators(table.metadata, table.io, row_filter or AlwaysTrue(), partition_filter, case_sensitive)
    result: list[LiveFile] = []
    for manifest in manifests:
        spec_id = manifest.partition_spec_id
        if not evaluators.manifest(spec_id)(manifest):
            continue
        in_partition = evaluators.partition(spec_id)
        for data_file, sequence, snapshot_id in _entries(table, manifest):
            if (
                sequence > above_sequence
                and in_partition(data_file)
                and evaluators.metrics(data_file)
                and (keep is None or keep(data_file))
            ):
                result.append(LiveFile(data_file, sequence, snapshot_id))
    return result
