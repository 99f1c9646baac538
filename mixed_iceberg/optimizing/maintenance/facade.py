"""``TableMaintenance``: snapshot expiry, change-data TTL, manifest rewriting, orphan and dangling-delete cleaning.

>>> from mixed_iceberg.optimizing.maintenance import TableMaintenance   # doctest: +SKIP
>>> maintenance = TableMaintenance(table)                               # doctest: +SKIP
>>> maintenance.run()                           # every enabled step    # doctest: +SKIP
>>> maintenance.clean_orphan_files(older_than=timedelta(hours=1))       # doctest: +SKIP

Works on keyed Mixed-Iceberg tables (BaseStore + ChangeStore), unkeyed ones and plain
Iceberg tables. None of the steps changes what ``table.scan()`` returns (DESIGN.md
invariant 5), and replaying an already committed commit id stays a no-op afterwards.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import TYPE_CHECKING

from pyiceberg.table import Table

from mixed_iceberg.basestore.optimized_sequence import repair_optimized_sequence
from mixed_iceberg.config.maintenance import MaintenanceConfig
from mixed_iceberg.exceptions import NotKeyedTableError
from mixed_iceberg.optimizing.maintenance.change_ttl import expire_change_files
from mixed_iceberg.optimizing.maintenance.dangling import clean_dangling_deletes
from mixed_iceberg.optimizing.maintenance.expire import expire_stores
from mixed_iceberg.optimizing.maintenance.manifests import rewrite_manifests
from mixed_iceberg.optimizing.maintenance.orphans import clean_orphans
from mixed_iceberg.optimizing.maintenance.results import (
    ChangeTtlResult,
    DanglingDeleteResult,
    ExpireResult,
    MaintenanceResult,
    ManifestRewriteResult,
    OrphanResult,
)
from mixed_iceberg.store.manifests.live_files import manifests_of
from mixed_iceberg.typedef import Clock

if TYPE_CHECKING:
    from mixed_iceberg.handle import Refresh, TableHandle

__all__ = ["TableMaintenance"]

log = logging.getLogger(__name__)


def _ms(delta: timedelta) -> int:
    return int(delta.total_seconds() * 1000)


class TableMaintenance:
    """Maintenance steps of one table; each returns a frozen result and logs one INFO line.

    Settings come from the table's properties (``snapshot.keep.duration``,
    ``snapshot.keep.min-count``, ``change.data.ttl.minutes``,
    ``clean-orphan-file.min-existing-time-minutes``, ...), read afresh on every call.
    ``table-expire.enabled``, ``clean-orphan-file.enabled`` and
    ``clean-dangling-delete-files.enabled`` gate their steps in :meth:`run` only: calling a step
    directly always runs it.

    Args:
        refresh: reloads the table and returns its fresh handle (``MixedTable.refreshed``);
            every step starts from the table's latest state.
        clock: current time in epoch seconds; every age is measured against it.

    Example:
        >>> maintenance = TableMaintenance(table.refreshed)              # doctest: +SKIP
        >>> maintenance.expire_snapshots().snapshots_expired             # doctest: +SKIP
        298
        >>> maintenance.clean_orphan_files(timedelta(hours=1), dry_run=True).orphans_found  # doctest: +SKIP
        3
    """

    def __init__(self, refresh: Refresh, *, clock: Clock = time.time) -> None:
        self._refresh = refresh
        self._clock = clock
        self._table: TableHandle = refresh()

    def __repr__(self) -> str:
        return f"TableMaintenance({self._table.name!r})"

    @property
    def config(self) -> MaintenanceConfig:
        """The maintenance settings in the table's current properties.

        Raises:
            PropertyError: a maintenance property holds a bad value.
        """
        self._table = self._refresh()
        return self._table.config.maintenance

    def _stores(self) -> list[Table]:
        change = self._table.change_store
        return [self._table.base_store] if change is None else [self._table.base_store, change]

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def expire_snapshots(self, *, delete_files: bool = True) -> ExpireResult:
        """Expire snapshots older than ``snapshot.keep.duration`` in every store.

        The current snapshot, the ``snapshot.keep.min-count`` newest ones, the latest
        BaseStore snapshot carrying the optimized sequence and the newest snapshot of every
        commit writer stay, with the ancestry that links them to the current snapshot.

        Args:
            delete_files: also delete the files that only expired snapshots referenced.

        Raises:
            PropertyError: a maintenance property holds a bad value.
            CommitConflictError: a concurrent commit interfered; nothing was deleted.
            CommitStateUnknownError: the expiry commit's outcome is unknown.
        """
        started = time.monotonic()
        config = self.config
        per_store, files, size = expire_stores(
            self._stores(),
            expire_before_ms=self._now_ms() - _ms(config.snapshot_keep),
            min_count=config.snapshot_min_count,
            delete_files=delete_files,
            table_name=self._table.name,
        )
        result = ExpireResult(
            snapshots_expired=sum(s.expired for s in per_store),
            snapshots_kept=sum(s.kept for s in per_store),
            files_deleted=files,
            bytes_deleted=size,
            duration_s=time.monotonic() - started,
        )
        log.info(
            "%s: expired %d snapshots (kept %d), deleted %d files (%d bytes) in %.1f ms",
            self._table.name,
            result.snapshots_expired,
            result.snapshots_kept,
            result.files_deleted,
            result.bytes_deleted,
            result.duration_s * 1000,
        )
        return result

    def clean_orphan_files(self, older_than: timedelta | None = None, *, dry_run: bool = False) -> OrphanResult:
        """Delete files under the stores' ``data``/``metadata`` folders that nothing references.

        Args:
            older_than: the safety window; default ``clean-orphan-file.min-existing-time-minutes``.
            dry_run: count, delete nothing.

        Raises:
            PropertyError: a maintenance property holds a bad value.
            ValueError: ``older_than`` is negative.
        """
        started = time.monotonic()
        window = older_than if older_than is not None else self.config.orphan_min_age
        if window < timedelta(0):
            raise ValueError(f"{self._table.name}: older_than expected a duration >= 0, found {window}")
        outcome = clean_orphans(self._stores(), delete_before_ms=self._now_ms() - _ms(window), dry_run=dry_run)
        result = OrphanResult(
            files_listed=outcome.listed,
            files_referenced=outcome.referenced,
            orphans_found=outcome.orphans,
            young_orphans_kept=outcome.young_kept,
            files_deleted=outcome.deleted,
            bytes_deleted=outcome.size,
            duration_s=time.monotonic() - started,
        )
        log.info(
            "%s: orphan cleaning listed %d files, found %d orphans (%d young kept), deleted %d (%d bytes) in %.1f ms",
            self._table.name,
            result.files_listed,
            result.orphans_found,
            result.young_orphans_kept,
            result.files_deleted,
            result.bytes_deleted,
            result.duration_s * 1000,
        )
        return result

    def expire_change_data(self) -> ChangeTtlResult:
        """Delete ChangeStore files older than ``change.data.ttl.minutes`` that are merged into base.

        Raises:
            NotKeyedTableError: the table has no ChangeStore.
            PropertyError: a maintenance property holds a bad value.
            CommitConflictError: a concurrent commit conflicted.
        """
        change = self._table.change_store
        if change is None:
            raise NotKeyedTableError(f"{self._table.name}: change-data TTL needs a keyed table; this one has no ChangeStore")
        started = time.monotonic()
        config = self.config
        outcome = expire_change_files(
            self._table.base_store,
            change,
            expire_before_ms=self._now_ms() - _ms(config.change_ttl),
            table_name=self._table.name,
        )
        result = ChangeTtlResult(
            files_deleted=outcome.files,
            records_deleted=outcome.records,
            bytes_deleted=outcome.size,
            unmerged_kept=outcome.unmerged_kept,
            commits=outcome.commits,
            duration_s=time.monotonic() - started,
        )
        log.info(
            "%s: change TTL removed %d files (%d rows, %d bytes) in %d commits, kept %d unmerged, in %.1f ms",
            self._table.name,
            result.files_deleted,
            result.records_deleted,
            result.bytes_deleted,
            result.commits,
            result.unmerged_kept,
            result.duration_s * 1000,
        )
        return result

    def rewrite_manifests(self, *, min_count: int = 1) -> ManifestRewriteResult:
        """Merge each store's manifests into a few of ``commit.manifest.target-size-bytes``.

        Args:
            min_count: rewrite a store only when its current snapshot has at least this many
                manifests (``run()`` passes ``commit.manifest.min-count-to-merge``).

        Raises:
            PropertyError: a maintenance property holds a bad value.
            CommitConflictError: concurrent commits kept winning.
        """
        started = time.monotonic()
        config = self.config
        outcomes = []
        for store in self._stores():
            current = store.current_snapshot()
            count = len(manifests_of(store, current)) if current is not None else 0
            if count < min_count:
                outcomes.append((count, count, 0, 0, 0))
                continue
            done = rewrite_manifests(store, target_size=config.manifest_target_size, table_name=self._table.name)
            commits = 0 if done.snapshot_id is None else 1
            outcomes.append(
                (done.manifests_before, done.manifests_after, done.manifests_written, done.entries_rewritten, commits)
            )
        before, after, written, entries, commits = (sum(column) for column in zip(*outcomes, strict=True))
        result = ManifestRewriteResult(
            manifests_before=before,
            manifests_after=after,
            manifests_written=written,
            entries_rewritten=entries,
            commits=commits,
            duration_s=time.monotonic() - started,
        )
        log.info(
            "%s: rewrote manifests %d -> %d (%d written, %d entries) in %d commits, %.1f ms",
            self._table.name,
            result.manifests_before,
            result.manifests_after,
            result.manifests_written,
            result.entries_rewritten,
            result.commits,
            result.duration_s * 1000,
        )
        return result

    def clean_dangling_delete_files(self) -> DanglingDeleteResult:
        """Remove the delete files that apply to no live data file, in every store
        (:mod:`~mixed_iceberg.optimizing.maintenance.dangling`); reads are unchanged.

        Raises:
            CommitConflictError: a concurrent commit removed one of them first.
        """
        started = time.monotonic()
        self._table = self._refresh()
        counts = [clean_dangling_deletes(store, table_name=self._table.name) for store in self._stores()]
        result = DanglingDeleteResult(
            files_deleted=sum(files for files, _ in counts),
            bytes_deleted=sum(size for _, size in counts),
            commits=sum(1 for files, _ in counts if files),
            duration_s=time.monotonic() - started,
        )
        log.info(
            "%s: removed %d dangling delete files (%d bytes) in %d commits, %.1f ms",
            self._table.name,
            result.files_deleted,
            result.bytes_deleted,
            result.commits,
            result.duration_s * 1000,
        )
        return result

    def repair_optimized_sequence(self) -> int | None:
        """Write the BaseStore's optimized sequence back into a Puffin file where another engine
        (Spark's ``compute_table_stats``) replaced it, for Amoro's readers; ours read the summary
        copy meanwhile (basestore/optimized_sequence.py). Not part of :meth:`run`.

        Returns:
            The id of the repair snapshot, or None when nothing needed repair.

        Raises:
            NotKeyedTableError: the table has no ChangeStore (so no optimized sequence).
            OptimizedSequenceMismatchError: there is no copy to repair from, or the records disagree.
        """
        if self._table.change_store is None:
            raise NotKeyedTableError(f"{self._table.name}: only a keyed table has an optimized sequence")
        outcome = repair_optimized_sequence(self._table.base_store, table_name=self._table.name)
        return None if outcome is None else outcome.snapshot_id

    def run(self) -> MaintenanceResult:
        """Every enabled step, in an order that lets each feed the next.

        Change-data TTL (keyed tables), then dangling delete files
        (``clean-dangling-delete-files.enabled``), then manifest rewriting (stores with at least
        ``commit.manifest.min-count-to-merge`` manifests), then snapshot expiry
        (``table-expire.enabled``; it deletes what the steps before made unreachable once their
        old snapshots expire), then orphan cleaning (``clean-orphan-file.enabled``).

        Raises:
            PropertyError: a maintenance property holds a bad value.
            CommitConflictError: a step conflicted with a concurrent commit.
        """
        started = time.monotonic()
        config = self.config
        change_ttl = self.expire_change_data() if self._table.is_keyed else None
        dangling = self.clean_dangling_delete_files() if config.clean_dangling_deletes else None
        manifests = self.rewrite_manifests(min_count=config.manifest_min_count)
        expire = self.expire_snapshots() if config.expire_enabled else None
        orphans = self.clean_orphan_files() if config.orphan_enabled else None
        result = MaintenanceResult(
            change_ttl=change_ttl,
            manifests=manifests,
            expire=expire,
            orphans=orphans,
            duration_s=time.monotonic() - started,
            dangling_deletes=dangling,
        )
        log.info(
            "%s: maintenance ran ttl=%s dangling=%s manifests=%s expire=%s orphans=%s in %.1f ms",
            self._table.name,
            change_ttl is not None,
            dangling is not None and dangling.commits > 0,
            manifests.commits > 0,
            expire is not None,
            orphans is not None,
            result.duration_s * 1000,
        )
        return result
