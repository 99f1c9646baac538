"""Idempotent, conflict-aware commits of data files to one Iceberg store.

Every commit may carry a :class:`CommitId` (writer id + sequence) in its snapshot summary.
A commit whose sequence is at or below the last one recorded for its writer is a no-op:
this is what exactly-once ingestion rests on (DESIGN.md invariant 4). pyiceberg retries a
commit that lost a race; the retry re-checks the id first, so a concurrent commit of the
same id by a zombie writer is never applied twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pyiceberg import exceptions as ice
from pyiceberg.exceptions import (
    BadRequestError,
    CommitFailedException,
    ForbiddenError,
    UnauthorizedError,
    ValidationException,
)
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table, Transaction
from pyiceberg.table.snapshots import Operation

from mixed_iceberg._pyiceberg.rest_catalog import refresh_for_commit
from mixed_iceberg._pyiceberg.transaction import GuardedTransaction, StagedAppend, stage_merge_append
from mixed_iceberg.config.registry import MANIFEST_MERGE_ENABLED
from mixed_iceberg.exceptions import (
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    CorruptFileError,
    CorruptTableError,
    NoSuchTableError,
)
from mixed_iceberg.store.ancestry import ancestors
from mixed_iceberg.store.damage import MANIFEST, reading
from mixed_iceberg.store.manifests.live_files import manifests_of
from mixed_iceberg.store.rewrite import stage_rewrite
from mixed_iceberg.typedef import CommitId

__all__ = [
    "COMMIT_SEQUENCE",
    "COMMIT_WRITER",
    "CommitOutcome",
    "Stager",
    "Validator",
    "commit_files",
    "last_committed_sequence",
]

log = logging.getLogger(__name__)

COMMIT_WRITER = "mixed-iceberg.commit.writer"
COMMIT_SEQUENCE = "mixed-iceberg.commit.sequence"

#: Stage extra metadata updates (for example statistics) on the transaction for a snapshot id.
Stager = Callable[[Transaction, int], None]
#: Check, against freshly loaded metadata, that the commit is still valid; raise
#: CommitConflictError otherwise (for example: files it removes are gone already).
Validator = Callable[[Table], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitOutcome:
    """What a commit did: the new snapshot, or ``skipped`` when the id was already committed."""

    snapshot_id: int | None
    skipped: bool
    files_added: int
    files_deleted: int
    duration_s: float

    @classmethod
    def skip(cls, duration_s: float = 0.0) -> CommitOutcome:
        """No snapshot: the commit id was recorded already, or there was nothing to commit."""
        return cls(snapshot_id=None, skipped=True, files_added=0, files_deleted=0, duration_s=duration_s)


class _AlreadyCommittedError(Exception):
    """Raised inside a retry when the commit id turned out to be committed meanwhile."""


def last_committed_sequence(table: Table, writer: str) -> int | None:
    """The newest sequence recorded by ``writer`` in the current snapshot's ancestry."""
    for snapshot in ancestors(table.metadata):
        summary = snapshot.summary
        if summary is not None and summary.get(COMMIT_WRITER) == writer:
            return int(summary.get(COMMIT_SEQUENCE) or -1)
    return None


def _is_committed(table: Table, commit_id: CommitId) -> bool:
    last = last_committed_sequence(table, commit_id.writer)
    return last is not None and last >= commit_id.sequence


def _delete_files(table: Table, files: Iterable[DataFile]) -> None:
    for data_file in files:
        try:
            table.io.delete(data_file.file_path)
        except OSError:  # best effort: orphan cleaning removes what is left
            log.warning("could not delete uncommitted file %s", data_file.file_path, exc_info=True)


def _delete_merged_manifests(table: Table, staged: StagedAppend) -> None:
    """Delete the manifests the commit wrote and then merged away (pyiceberg 0.12 leaves them).

    Iceberg Java deletes them too: no snapshot ever referenced them.
    """
    written = staged.written_manifests()
    if len(written) < 2:  # one manifest written: it is the one committed
        return
    snapshot = table.metadata.snapshot_by_id(staged.snapshot_id)
    if snapshot is None:
        return
    committed = {manifest.manifest_path for manifest in snapshot.manifests(table.io)}
    for path in written:
        if path not in committed:
            try:
                table.io.delete(path)
            except OSError:  # best effort: orphan cleaning removes what is left
                log.warning("could not delete merged manifest %s", path, exc_info=True)


def _parent_damage(table: Table) -> CorruptFileError | None:
    """The damaged manifest list or manifest of ``table``'s current snapshot, if any: what a
    commit on top of it reads before it writes a manifest list of its own."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        return None
    try:
        for manifest in manifests_of(table, snapshot):
            with reading(table.io, MANIFEST, manifest.manifest_path):
                manifest.fetch_manifest_entry(table.io, discard_deleted=False)
    except CorruptFileError as damage:
        return damage
    except OSError:
        return None  # the storage cannot be asked now: nothing is proven
    return None


def _retry_guard(commit_id: CommitId | None, validate: Validator | None) -> Callable[[Table], None]:
    """Before pyiceberg retries on a refreshed head: the id may have landed meanwhile, and the
    commit may no longer be valid."""

    def guard(table: Table) -> None:
        if commit_id is not None and _is_committed(table, commit_id):
            raise _AlreadyCommittedError(str(commit_id))
        if validate is not None:
            validate(table)

    return guard


def commit_files(
    table: Table,
    *,
    added: list[DataFile],
    deleted: list[DataFile] | None = None,
    commit_id: CommitId | None = None,
    summary: Mapping[str, str] | None = None,
    stage: Stager | None = None,
    table_name: str = "",
    added_deletes: list[DataFile] | None = None,
    deleted_deletes: list[DataFile] | None = None,
    validate: Validator | None = None,
    operation: Operation | None = None,
    files_reused: bool = False,
) -> CommitOutcome:
    """Commit ``added`` (and remove ``deleted``) as one snapshot, idempotently by ``commit_id``.

    ``files_reused``: the added files may be those of an earlier attempt of this commit id that
    landed (the optimizer resuming a commit after a crash): they are never deleted when the id
    turns out committed.

    The snapshot's operation is inferred (``append`` when files are only added, else
    ``overwrite`` or ``delete``) unless ``operation`` is given: ``Operation.REPLACE`` for a
    rewrite that keeps the table's rows (compaction), so that incremental and streaming readers
    skip it rather than fail on it, as they do for Iceberg Java's ``RewriteFiles``.

    Files in ``added`` are deleted again when the commit provably did not land (a conflict,
    a validation failure, or the id already committed); when the outcome is unknown they
    are left for orphan cleaning, since a live snapshot may reference them.

    Raises:
        CommitConflictError: a concurrent commit conflicted and retries ran out.
        CommitStateUnknownError: the outcome is unknown (the catalog or storage failed mid-commit);
            the written files are kept for orphan cleaning.
        NoSuchTableError: the store was renamed or dropped since it was loaded.
        CorruptTableError: the table is damaged (``CorruptFileError``: its metadata file, or the
            manifest list or a manifest the commit builds on, does not parse); nothing landed.
    """
    started = time.monotonic()
    deleted = deleted or []
    name = table_name or ".".join(table.name())
    added_deletes = added_deletes or []
    deleted_deletes = deleted_deletes or []
    written = [*added, *added_deletes]
    try:
        refresh_for_commit(table)  # a REST writer alone on its table skips it (a stale head costs a retry)
    except ice.NoSuchTableError as exc:
        raise NoSuchTableError(
            f"{name}: expected it in its catalog under that name, found none (renamed or dropped since it was "
            f"loaded); load it again by its current name"
        ) from exc
    # The id first: a commit that already landed must not be validated (its inputs are gone).
    if commit_id is not None and _is_committed(table, commit_id):
        log.info("%s: commit %s already committed; skipped", name, commit_id)
        if not files_reused:
            _delete_files(table, written)
        return CommitOutcome.skip(time.monotonic() - started)
    if validate is not None:
        try:
            validate(table)
        except CommitConflictError:
            _delete_files(table, written)
            raise
    properties = dict(summary or {})
    if commit_id is not None:
        properties[COMMIT_WRITER] = commit_id.writer
        properties[COMMIT_SEQUENCE] = str(commit_id.sequence)
    txn = GuardedTransaction(table, _retry_guard(commit_id, validate))
    merging: StagedAppend | None = None
    if added_deletes or deleted_deletes or deleted or operation is not None:
        # Removals go through stage_rewrite: pyiceberg 0.12's overwrite carries forward
        # manifests whose entries are all DELETED, so they pile up with every compaction.
        snapshot_id = stage_rewrite(
            txn,
            add_data=added,
            remove_data=deleted,
            add_deletes=added_deletes,
            remove_deletes=deleted_deletes,
            snapshot_properties=properties,
            operation=operation,
        )
    else:
        # Iceberg's default for commit.manifest-merge.enabled is true (pyiceberg's is false):
        # without merging, every append adds a manifest that every later commit lists again.
        merge = MANIFEST_MERGE_ENABLED.read(table.properties, name)
        merging = stage_merge_append(txn, added, properties, merge_enabled=merge)
        snapshot_id = merging.snapshot_id
    if stage is not None:
        stage(txn, snapshot_id)
    try:
        txn.commit_transaction()
    except _AlreadyCommittedError:
        log.info("%s: commit %s landed concurrently; skipped", name, commit_id)
        if not files_reused:
            _delete_files(table, written)
        return CommitOutcome.skip(time.monotonic() - started)
    except CommitConflictError:
        _delete_files(table, written)  # raised by validate on a retry: nothing landed
        raise
    except (CommitFailedException, ValidationException) as exc:
        # Both prove the commit did not land, so the new files are garbage.
        _delete_files(table, written)
        raise CommitConflictError(f"{name}: commit conflicted with a concurrent change and did not land: {exc}") from exc
    except (BadRequestError, ForbiddenError, UnauthorizedError) as exc:
        # A REST catalog refused the commit (400/401/403): it answered, so nothing landed.
        _delete_files(table, written)
        raise CommitError(f"{name}: the catalog refused the commit, nothing landed: {type(exc).__name__}: {exc}") from exc
    except CorruptTableError:
        # Met reading the table before anything was swapped in (its current metadata, the
        # parent's manifest list or manifests): the table is damaged and the commit never
        # made. Its files are kept all the same, left to orphan cleaning or a purge.
        raise
    except Exception as exc:
        if not isinstance(exc, OSError) and (damage := _parent_damage(table)) is not None:
            raise damage from exc  # pyiceberg's own read of a damaged parent manifest (merge-append)
        raise CommitStateUnknownError(
            f"{name}: commit outcome unknown ({type(exc).__name__}: {exc}); files kept for orphan cleaning"
        ) from exc
    if merging is not None:
        _delete_merged_manifests(table, merging)
    duration = time.monotonic() - started
    log.info(
        "%s: committed snapshot %s (+%d -%d files) in %.1f ms",
        name,
        snapshot_id,
        len(written),
        len(deleted) + len(deleted_deletes),
        duration * 1000,
    )
    return CommitOutcome(
        snapshot_id=snapshot_id,
        skipped=False,
        files_added=len(written),
        files_deleted=len(deleted) + len(deleted_deletes),
        duration_s=duration,
    )
