"""Manifest rewriting: one REPLACE snapshot whose few merged manifests hold the same live files.

Every fast append adds a manifest, so after N commits a snapshot lists N manifests and each
commit writes (and each scan reads) a manifest list that keeps growing. Rewriting packs the
live entries of the current snapshot into manifests of about
``commit.manifest.target-size-bytes``, per (content, partition spec), dropping entries
marked DELETED. Entries keep their snapshot id and data/file sequence numbers (they are
written as EXISTING), so merge-on-read, the optimized-sequence rule and delete-file
application read exactly what they read before.

pyiceberg 0.12 has no rewrite-manifests operation: :mod:`mixed_iceberg._pyiceberg.rewrite_manifests`
commits the bins :func:`pack_manifests` plans, with pyiceberg's manifest/manifest-list writers,
its commit retry (which plans again from the refreshed head) and its cleanup of files from
failed attempts.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from pyiceberg.exceptions import CommitFailedException, ValidationException
from pyiceberg.manifest import (
    ManifestFile,
)
from pyiceberg.table import Table

from mixed_iceberg._pyiceberg.rewrite_manifests import ManifestRewrite, has_deleted_entries
from mixed_iceberg.exceptions import CommitConflictError, CommitStateUnknownError, CorruptTableError
from mixed_iceberg.store.manifests.live_files import manifests_of
from mixed_iceberg.store.rewrite import MANIFEST_ACCESS

__all__ = ["RewriteOutcome", "pack_manifests", "rewrite_manifests"]


def pack_manifests(manifests: list[ManifestFile], target_size: int) -> list[list[ManifestFile]]:
    """Bins of manifests to merge, per (content, spec), each at most about ``target_size`` bytes.

    A manifest alone in its bin is returned alone (the caller keeps it unless it carries
    DELETED entries). Order is kept inside each group.
    """
    groups: dict[tuple[int, int], list[ManifestFile]] = defaultdict(list)
    for manifest in manifests:
        groups[(int(manifest.content), manifest.partition_spec_id)].append(manifest)
    bins: list[list[ManifestFile]] = []
    for group in groups.values():
        current: list[ManifestFile] = []
        weight = 0
        for manifest in group:
            if current and weight + manifest.manifest_length > target_size:
                bins.append(current)
                current, weight = [], 0
            current.append(manifest)
            weight += manifest.manifest_length
        if current:
            bins.append(current)
    return bins


@dataclass(frozen=True, slots=True)
class RewriteOutcome:
    """Manifests of one store before and after; ``snapshot_id`` is None when nothing was rewritten."""

    snapshot_id: int | None
    manifests_before: int
    manifests_after: int
    manifests_written: int
    entries_rewritten: int


def _needs_rewrite(manifests: list[ManifestFile], target_size: int) -> bool:
    return any(len(group) > 1 or has_deleted_entries(group[0]) for group in pack_manifests(manifests, target_size))


def rewrite_manifests(store: Table, *, target_size: int, table_name: str) -> RewriteOutcome:
    """Replace the manifests of ``store``'s current snapshot with merged ones, in one snapshot.

    Args:
        store: one Iceberg store.
        target_size: bytes of a merged manifest (``commit.manifest.target-size-bytes``).
        table_name: for messages.

    Returns:
        The counts; no snapshot is written when every manifest would stay as it is.

    Raises:
        CommitConflictError: concurrent commits kept winning until retries ran out.
        CommitStateUnknownError: the commit's outcome is unknown.
    """
    store.refresh()
    current = store.current_snapshot()
    if current is None:
        return RewriteOutcome(None, 0, 0, 0, 0)
    manifests = manifests_of(store, current)
    if not _needs_rewrite(manifests, target_size):
        return RewriteOutcome(None, len(manifests), len(manifests), 0, 0)
    producer = ManifestRewrite(store, lambda manifests: pack_manifests(manifests, target_size), MANIFEST_ACCESS)
    try:
        producer.commit_rewrite()
    except (CommitFailedException, ValidationException) as exc:
        # pyiceberg deleted the manifests it wrote: these errors prove the commit did not land.
        raise CommitConflictError(f"{table_name}: manifest rewrite lost to concurrent commits: {exc}") from exc
    except CorruptTableError:
        raise  # met reading the manifests to rewrite: nothing was committed
    except Exception as exc:
        # outcome unknown: pyiceberg keeps the manifests, orphan cleaning removes them if unused
        raise CommitStateUnknownError(f"{table_name}: manifest rewrite outcome unknown ({type(exc).__name__}: {exc})") from exc
    store.refresh()
    return RewriteOutcome(
        producer.snapshot_id,
        producer.manifests_before,
        producer.manifests_after,
        producer.manifests_written,
        producer.entries_rewritten,
    )
