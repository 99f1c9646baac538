"""A table's summary figures for the metrics, from its metadata (manifests, never data files).

:func:`summarize` reads what :func:`~mixed_iceberg.optimizing.collect.collect` gathers (live
base files with the deletes that apply to them, unmerged ChangeStore files) and counts them the
way Amoro's ``table_summary_*`` metrics do, with a ChangeStore's unmerged delete files counted as
equality deletes (Amoro's Mixed-Iceberg format names them so too). The figures change only when a
store's metadata file changes, so the collector keeps them per pair of metadata locations.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyiceberg.manifest import DataFileContent
from pyiceberg.table.metadata import TableMetadata

from mixed_iceberg.config.health import HealthConfig
from mixed_iceberg.exceptions import PropertyError
from mixed_iceberg.handle import TableHandle
from mixed_iceberg.ingest.progress import IngestPosition, ingest_positions
from mixed_iceberg.optimizing.collect import OPTIMIZING_TYPE, collect
from mixed_iceberg.optimizing.health import TableFigures, change_commit_times, figures_of

__all__ = ["TableSummary", "summarize"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TableSummary:
    """What a table holds now. Data files are live base data files and unmerged ChangeStore
    inserts; equality deletes are base equality-delete files and unmerged ChangeStore deletes."""

    data_files: int
    data_files_size: int
    data_files_records: int
    equality_delete_files: int
    equality_delete_files_size: int
    equality_delete_files_records: int
    position_delete_files: int
    position_delete_files_size: int
    position_delete_files_records: int
    #: Base delete files that no live data file references.
    dangling_delete_files: int
    #: Snapshots of the BaseStore (as Amoro counts them).
    snapshots: int
    unmerged_change_files: int
    unmerged_change_bytes: int
    unmerged_change_insert_records: int
    unmerged_change_delete_records: int
    #: When the oldest unmerged ChangeStore file was committed (None: nothing unmerged).
    oldest_unmerged_change_ms: int | None
    #: The newest commit of either store (None: never written).
    last_commit_ms: int | None
    #: The newest commit that added files and was not the optimizer's (Amoro's "non-maintained" snapshot).
    last_data_commit_ms: int | None
    #: What a merged read pays (optimizing/health.py), judged against ``health`` at scrape time.
    figures: TableFigures
    #: The table's ``health.*`` targets (None: a property holds a bad value; no state is exported).
    health: HealthConfig | None
    #: Where each ingest job stands on each source partition (its newest commit of it).
    ingest: tuple[IngestPosition, ...] = ()

    @property
    def total_files(self) -> int:
        return self.data_files + self.equality_delete_files + self.position_delete_files

    @property
    def total_files_size(self) -> int:
        return self.data_files_size + self.equality_delete_files_size + self.position_delete_files_size

    @property
    def total_records(self) -> int:
        return self.data_files_records + self.equality_delete_files_records + self.position_delete_files_records


def _newest_data_commit(metadata: TableMetadata) -> int | None:
    newest = None
    for snapshot in metadata.snapshots:
        summary = snapshot.summary
        if summary is None or summary.get(OPTIMIZING_TYPE) is not None or int(summary.get("added-data-files", "0") or 0) == 0:
            continue
        newest = max(newest or 0, snapshot.timestamp_ms)
    return newest


def summarize(table: TableHandle) -> TableSummary:
    """The summary of ``table`` at its loaded metadata.

    Raises:
        MixedIcebergError: a manifest list or manifest is missing or does not parse.
    """
    collected = collect(table)
    base_files = [f for p in collected.partitions for f in p.base]
    change = [c for p in collected.partitions for c in p.change]
    inserts = [c for c in change if not c.is_delete]
    change_deletes = [c for c in change if c.is_delete]
    equality = [f.data_file for f in collected.delete_files.values() if f.data_file.content == DataFileContent.EQUALITY_DELETES]
    position = [f.data_file for f in collected.delete_files.values() if f.data_file.content == DataFileContent.POSITION_DELETES]
    referenced = {path for f in base_files for path in (*f.pos_delete_files, *f.eq_delete_files)}
    stores = [table.base_store.metadata] + ([table.change_store.metadata] if table.change_store is not None else [])
    commits = [s.timestamp_ms for metadata in stores for s in metadata.snapshots]
    change_commits = change_commit_times(table.change_store.metadata if table.change_store is not None else None)
    oldest = min((c.sequence_number for c in change), default=None)
    data_commits = [t for t in map(_newest_data_commit, stores) if t is not None]
    return TableSummary(
        data_files=len(base_files) + len(inserts),
        data_files_size=sum(f.size for f in base_files) + sum(c.size for c in inserts),
        data_files_records=sum(f.records for f in base_files) + sum(c.records for c in inserts),
        equality_delete_files=len(equality) + len(change_deletes),
        equality_delete_files_size=sum(f.file_size_in_bytes for f in equality) + sum(c.size for c in change_deletes),
        equality_delete_files_records=sum(f.record_count for f in equality) + sum(c.records for c in change_deletes),
        position_delete_files=len(position),
        position_delete_files_size=sum(f.file_size_in_bytes for f in position),
        position_delete_files_records=sum(f.record_count for f in position),
        dangling_delete_files=sum(1 for path in collected.delete_files if path not in referenced),
        snapshots=len(table.base_store.metadata.snapshots),
        unmerged_change_files=len(change),
        unmerged_change_bytes=sum(c.size for c in change),
        unmerged_change_insert_records=sum(c.records for c in inserts),
        unmerged_change_delete_records=sum(c.records for c in change_deletes),
        oldest_unmerged_change_ms=None if oldest is None else change_commits.get(oldest),
        last_commit_ms=max(commits, default=None),
        last_data_commit_ms=max(data_commits, default=None),
        figures=figures_of(collected, table.config.optimizing, change_commits),
        health=_health(table),
        ingest=ingest_positions(table.change_store.metadata if table.change_store is not None else None),
    )


def _health(table: TableHandle) -> HealthConfig | None:
    try:
        return table.config.health
    except PropertyError:  # `mixed-iceberg status` names the bad property; the score is still exported
        return None
