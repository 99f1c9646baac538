"""Snapshot expiry per store, keeping what merge-on-read and idempotent commits need.

A snapshot is expired when it is older than ``snapshot.keep.duration`` and none of these
keeps it:

- it is among the ``snapshot.keep.min-count`` newest ancestors of the current snapshot
  (the current snapshot itself always stays), or the head of a branch or tag;
- it is the ancestor that was current when ``snapshot.keep.duration`` began: time travel to
  any moment of the kept window needs the state of that moment;
- it is, or descends from, the latest BaseStore snapshot flagged ``optimized-sequence.exist``:
  readers walk the parent chain back to it for the optimized sequence (Amoro #1720);
- it is, or descends from, the newest snapshot of a commit writer
  (``mixed-iceberg.commit.writer``): a replayed commit is recognised by walking the
  ancestry back to that snapshot (DESIGN.md invariant 4).

Because expiry cuts the parent chain where it removes a snapshot (pyiceberg clears the
``parent-snapshot-id`` of the child), protecting a snapshot means keeping every ancestor
between it and the current snapshot as well: the kept ancestry is one unbroken chain.

After the metadata commit, the files that only expired snapshots referenced (manifest
lists, manifests, data and delete files, statistics files) are deleted, unless a snapshot
of any store of the table still references them, as Iceberg's own expiry does. They are
not subject to the orphan safety window: a file an expired snapshot referenced belonged
to a commit that landed long ago, never to one in flight.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table import Table, TableProperties
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.update import (
    AssertTableUUID,
    RemovePartitionStatisticsUpdate,
    RemoveSnapshotsUpdate,
    TableUpdate,
)
from pyiceberg.utils.properties import property_as_bool

from mixed_iceberg.basestore.optimized_sequence import OPTIMIZED_SEQUENCE
from mixed_iceberg.exceptions import CommitConflictError, CommitStateUnknownError
from mixed_iceberg.optimizing.maintenance.reachability import Referenced, References
from mixed_iceberg.optimizing.maintenance.storage import Storage
from mixed_iceberg.store.ancestry import ancestors
from mixed_iceberg.store.commit import COMMIT_WRITER

__all__ = ["ExpiryPlan", "StoreExpiry", "expire_stores", "plan_expiry"]

log = logging.getLogger(__name__)

_OPTIMIZED_FLAG = f"{OPTIMIZED_SEQUENCE}.exist"


@dataclass(frozen=True, slots=True)
class ExpiryPlan:
    """Snapshot ids of one store to expire and to keep."""

    expire: tuple[int, ...]
    keep: tuple[int, ...]

    def __post_init__(self) -> None:
        if set(self.expire) & set(self.keep):
            raise ValueError(f"snapshots both expired and kept: {sorted(set(self.expire) & set(self.keep))}")


@dataclass(frozen=True, slots=True)
class StoreExpiry:
    """What expiry did to one store."""

    expired: int
    kept: int


def plan_expiry(metadata: TableMetadata, *, expire_before_ms: int, min_count: int) -> ExpiryPlan:
    """Choose the snapshots of one store to expire (pure: metadata in, ids out).

    Args:
        metadata: the store's current metadata.
        expire_before_ms: snapshots committed before this epoch-millisecond time may expire.
        min_count: how many of the newest ancestors of the current snapshot always stay (>= 1).

    Returns:
        The plan; ``keep`` lists every snapshot that stays.
    """
    chain = list(ancestors(metadata))
    depth = min(max(min_count, 1), len(chain)) - 1
    writers: set[str] = set()
    flagged = False
    for index, snapshot in enumerate(chain):
        summary = snapshot.summary
        writer = summary.get(COMMIT_WRITER) if summary is not None else None
        if writer is not None and writer not in writers:
            writers.add(writer)
            depth = max(depth, index)
        if not flagged and summary is not None and summary.get(_OPTIMIZED_FLAG) == "true":
            flagged = True
            depth = max(depth, index)
        if snapshot.timestamp_ms >= expire_before_ms:
            # and the ancestor that was current at the cutoff: a read as of any time inside
            # snapshot.keep.duration then finds the store's state of that time
            depth = max(depth, index + 1)
    kept_chain = {snapshot.snapshot_id for snapshot in chain[: depth + 1]}
    protected = {
        ref.snapshot_id
        for ref in metadata.refs.values()
        if ref.snapshot_ref_type in (SnapshotRefType.BRANCH, SnapshotRefType.TAG)
    }
    expire, keep = [], []
    for snapshot in metadata.snapshots:
        sid = snapshot.snapshot_id
        if sid in kept_chain or sid in protected or snapshot.timestamp_ms >= expire_before_ms:
            keep.append(sid)
        else:
            expire.append(sid)
    return ExpiryPlan(tuple(expire), tuple(keep))


def _commit_expiry(store: Table, plan: ExpiryPlan, table_name: str) -> None:
    # One metadata commit through the catalog API rather than pyiceberg's
    # ``store.maintenance.expire_snapshots().by_ids(...)``: that builder deep-copies the whole
    # table metadata twice per id (``Transaction.table_metadata``), which made expiring 300 of
    # 300 snapshots take seconds. The update is the one the builder stages, and pyiceberg's
    # apply of it also drops the expired snapshots' statistics files and refs; it leaves their
    # partition statistics behind, so those are removed in the same commit.
    previous_log = {entry.metadata_file for entry in store.metadata.metadata_log}
    expired = set(plan.expire)
    updates: list[TableUpdate] = [RemoveSnapshotsUpdate(snapshot_ids=list(plan.expire))]
    stale = sorted({part.snapshot_id for part in store.metadata.partition_statistics if part.snapshot_id in expired})
    updates += [RemovePartitionStatisticsUpdate(snapshot_id=sid) for sid in stale]
    try:
        store.catalog.commit_table(store, (AssertTableUUID(uuid=store.metadata.table_uuid),), tuple(updates))
    except CommitFailedException as exc:
        raise CommitConflictError(f"{table_name}: snapshot expiry conflicted with a concurrent commit: {exc}") from exc
    except ValueError as exc:  # "snapshot does not exist": a concurrent expiry got there first
        raise CommitConflictError(f"{table_name}: snapshot expiry raced with another expiry: {exc}") from exc
    except Exception as exc:
        raise CommitStateUnknownError(f"{table_name}: snapshot expiry outcome unknown ({type(exc).__name__}: {exc})") from exc
    store.refresh()
    # What pyiceberg's Table does after its own commits: metadata files that fell off the
    # metadata log go when write.metadata.delete-after-commit.enabled is set (Amoro sets it).
    if property_as_bool(store.metadata.properties, TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED, False):
        dropped = previous_log - {entry.metadata_file for entry in store.metadata.metadata_log}
        Storage(store.io).delete(dict.fromkeys(dropped, 0))


def expire_stores(
    stores: Sequence[Table],
    *,
    expire_before_ms: int,
    min_count: int,
    delete_files: bool,
    table_name: str,
) -> tuple[list[StoreExpiry], int, int]:
    """Expire old snapshots of every store of one table, then delete what only they referenced.

    Args:
        stores: the table's stores (BaseStore, then ChangeStore when keyed).
        expire_before_ms: snapshots committed before this epoch-millisecond time may expire.
        min_count: newest snapshots always kept per store.
        delete_files: delete the files only expired snapshots referenced.
        table_name: for messages.

    Returns:
        Per-store counts, files deleted, bytes deleted.

    Raises:
        CommitConflictError: a concurrent commit or expiry interfered; nothing was deleted.
        CommitStateUnknownError: the outcome of an expiry commit is unknown; nothing was deleted.
    """
    references = References()
    outcomes: list[StoreExpiry] = []
    candidates: Referenced = {}
    for store in stores:
        store.refresh()
        metadata = store.metadata
        plan = plan_expiry(metadata, expire_before_ms=expire_before_ms, min_count=min_count)
        outcomes.append(StoreExpiry(len(plan.expire), len(plan.keep)))
        if not plan.expire:
            continue
        if delete_files:
            expired_ids = set(plan.expire)
            expired = [s for s in metadata.snapshots if s.snapshot_id in expired_ids]
            candidates.update(references.snapshots(store, expired))
            candidates.update(references.statistics(metadata, plan.expire))
        _commit_expiry(store, plan, table_name)
    if not candidates:
        return outcomes, 0, 0
    still: Referenced = {}
    for store in stores:
        store.refresh()
        still.update(references.store(store))
    doomed = {key: value for key, value in candidates.items() if key not in still}
    storage = Storage(stores[0].io)
    unknown = [location for location, size in doomed.values() if size is None]
    sizes = storage.sizes(unknown) if unknown else {}
    by_location = {location: size if size is not None else sizes.get(key, 0) for key, (location, size) in doomed.items()}
    files, size = storage.delete(by_location)
    return outcomes, files, size
