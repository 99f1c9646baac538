"""What each maintenance step did: frozen, typed counts (never a ``dict`` of metrics)."""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = [
    "ChangeTtlResult",
    "DanglingDeleteResult",
    "ExpireResult",
    "MaintenanceResult",
    "ManifestRewriteResult",
    "OrphanResult",
]


def _check_counts(result: object) -> None:
    for field in fields(result):  # type: ignore[arg-type]
        value = getattr(result, field.name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            raise ValueError(f"{type(result).__name__}.{field.name}: expected >= 0, found {value}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpireResult:
    """Snapshot expiry over every store of a table.

    Attributes:
        snapshots_expired: snapshots removed from the stores' metadata.
        snapshots_kept: snapshots left, over all stores.
        files_deleted: files that only expired snapshots referenced, now deleted.
        bytes_deleted: their size.
        duration_s: wall time of the step.
    """

    snapshots_expired: int
    snapshots_kept: int
    files_deleted: int
    bytes_deleted: int
    duration_s: float

    def __post_init__(self) -> None:
        _check_counts(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class OrphanResult:
    """Orphan-file cleaning over the ``data`` and ``metadata`` folders of every store.

    Attributes:
        files_listed: files found under the folders.
        files_referenced: distinct files the live snapshots and metadata of all stores reference.
        orphans_found: listed files nobody references.
        young_orphans_kept: orphans kept because they are inside the safety window (or of unknown age).
        files_deleted: orphans deleted.
        bytes_deleted: their size.
        duration_s: wall time of the step.
    """

    files_listed: int
    files_referenced: int
    orphans_found: int
    young_orphans_kept: int
    files_deleted: int
    bytes_deleted: int
    duration_s: float

    def __post_init__(self) -> None:
        _check_counts(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeTtlResult:
    """Deletion of ChangeStore files already merged into the BaseStore and older than the TTL.

    Attributes:
        files_deleted: change files removed from the ChangeStore.
        records_deleted: rows in them.
        bytes_deleted: their size (the files stay on storage until no snapshot references them).
        unmerged_kept: files older than the TTL kept because their partition's optimized
            sequence has not reached them yet.
        commits: ChangeStore snapshots written (one per batch of 3000 files).
        duration_s: wall time of the step.
    """

    files_deleted: int
    records_deleted: int
    bytes_deleted: int
    unmerged_kept: int
    commits: int
    duration_s: float

    def __post_init__(self) -> None:
        _check_counts(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestRewriteResult:
    """Manifest rewriting over every store of a table.

    Attributes:
        manifests_before: manifests in the stores' current snapshots before the rewrite.
        manifests_after: manifests after it.
        manifests_written: merged manifests written.
        entries_rewritten: live file entries copied into merged manifests.
        commits: snapshots written (at most one per store).
        duration_s: wall time of the step.
    """

    manifests_before: int
    manifests_after: int
    manifests_written: int
    entries_rewritten: int
    commits: int
    duration_s: float

    def __post_init__(self) -> None:
        _check_counts(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class DanglingDeleteResult:
    """Dangling delete-file cleaning over every store of a table.

    Attributes:
        files_deleted: delete files that applied to no live data file, now removed from the stores.
        bytes_deleted: their size (the files themselves go with the snapshots that expire).
        commits: snapshots written (at most one per store).
        duration_s: wall time of the step.
    """

    files_deleted: int
    bytes_deleted: int
    commits: int
    duration_s: float

    def __post_init__(self) -> None:
        _check_counts(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintenanceResult:
    """One :meth:`TableMaintenance.run`; a step that did not run (disabled, or not keyed) is ``None``."""

    change_ttl: ChangeTtlResult | None
    manifests: ManifestRewriteResult | None
    expire: ExpireResult | None
    orphans: OrphanResult | None
    duration_s: float
    dangling_deletes: DanglingDeleteResult | None = None

    def __post_init__(self) -> None:
        _check_counts(self)
