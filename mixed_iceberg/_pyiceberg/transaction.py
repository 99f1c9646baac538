"""A pyiceberg 0.12 transaction that re-checks before a retry, and a merge-append staged on one.

What this module touches of pyiceberg's private API (listed in ``docs/pyiceberg.md``):

* ``Transaction._rebuild_snapshot_updates`` is what ``commit_transaction`` calls to rebuild the
  staged snapshots on the refreshed head after a lost race; :class:`GuardedTransaction` runs a
  check (is the commit id already there? is the commit still valid?) before it.
* ``Transaction._table`` and ``Transaction._updates``: the table a transaction commits to
  (refreshed on a retry) and its staged updates, the two things the metadata of the staged
  state depends on (:attr:`GuardedTransaction.table_metadata` caches it on their identity).
* ``Transaction._snapshot_producers``: read before ``commit_transaction`` clears it, so that a
  producer implementing :class:`RemembersCommit` can seed a cache with what it wrote once its
  snapshot landed.
* ``_MergeAppendFiles._merge_enabled``, ``._snapshot_id`` and ``._written_manifests``: merging
  on by Iceberg's default, the snapshot id before the commit (statistics attach to it), the
  manifests it wrote and merged away (pyiceberg leaves them behind).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pyiceberg.manifest import DataFile
from pyiceberg.table import Table, Transaction
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import TableUpdate
from pyiceberg.table.update.snapshot import _MergeAppendFiles

from mixed_iceberg._pyiceberg.patches import updated_metadata

__all__ = ["GuardedTransaction", "RemembersCommit", "StagedAppend", "stage_merge_append", "transaction_table"]


def transaction_table(txn: Transaction) -> Table:
    """The table ``txn`` commits to (on a retry: refreshed to the catalog's current metadata)."""
    table: Table = txn._table
    return table


@runtime_checkable
class RemembersCommit(Protocol):
    """A snapshot producer that keeps something of what it wrote once its snapshot lands."""

    def remember_committed(self, table: Table) -> None: ...


class GuardedTransaction(Transaction):
    """A transaction (not autocommitted) whose automatic retry first calls ``before_retry``.

    pyiceberg refreshes the table and then rebuilds the staged snapshots on the new head;
    ``before_retry(table)`` runs between the two and may raise to stop the retry (the commit
    landed meanwhile, or is no longer valid).
    """

    def __init__(self, table: Table, before_retry: Callable[[Table], None] | None = None) -> None:
        super().__init__(table, autocommit=False)
        self._before_retry = before_retry
        self._metadata_cache: tuple[TableMetadata, tuple[TableUpdate, ...], TableMetadata] | None = None

    @property
    def table_metadata(self) -> TableMetadata:
        # pyiceberg 0.12 rebuilds (and deep-copies) the whole metadata on every access, about
        # 19 times per commit, so commit cost grew with the snapshot count (iceberg-python
        # #2673). The result depends only on the base metadata and the staged updates, both
        # replaced (never mutated) when they change, so it is cached on their identity, and
        # built without the deep copy (patches.updated_metadata).
        cache = self._metadata_cache
        if cache is None or cache[0] is not self._table.metadata or cache[1] is not self._updates:
            cache = (self._table.metadata, self._updates, updated_metadata(self._table.metadata, self._updates))
            self._metadata_cache = cache
        return cache[2]

    def commit_transaction(self) -> Table:
        # pyiceberg forgets its snapshot producers once the commit lands; the ones that can
        # seed the manifest entry cache with what they wrote do so then.
        producers = list(self._snapshot_producers)
        table = super().commit_transaction()
        for producer in producers:
            if isinstance(producer, RemembersCommit):
                producer.remember_committed(self._table)
        return table

    def _rebuild_snapshot_updates(self) -> None:
        if self._before_retry is not None:
            self._before_retry(self._table)
        super()._rebuild_snapshot_updates()


@dataclass(frozen=True, slots=True)
class StagedAppend:
    """A merge-append staged on a transaction: its snapshot id (stable across retries) and the
    manifests it wrote (after the commit: including those it merged away)."""

    snapshot_id: int
    _producer: _MergeAppendFiles

    def written_manifests(self) -> list[str]:
        return list(self._producer._written_manifests)


def stage_merge_append(
    txn: Transaction, files: list[DataFile], properties: dict[str, str], *, merge_enabled: bool
) -> StagedAppend:
    """Stage on ``txn`` one ``append`` snapshot of ``files`` with summary ``properties``, its
    manifests merged as ``commit.manifest-merge.enabled`` says when ``merge_enabled``."""
    producer = txn.update_snapshot(snapshot_properties=properties).merge_append()
    producer._merge_enabled = merge_enabled
    staged = StagedAppend(producer._snapshot_id, producer)
    with producer:
        for data_file in files:
            producer.append_data_file(data_file)
    return staged
