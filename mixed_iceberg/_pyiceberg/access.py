"""What the seam's snapshot producers need from the layers above, passed in: the seam is a leaf.

The producers (:mod:`.row_delta`, :mod:`.rewrite_manifests`) read a store's manifest lists and
manifests. How those reads name damage (``store.damage``), which entries are cached
(``store.manifests.live_files``) and the table's manifest-merge options (the option registry)
belong to the layers above; they hand them in as a :class:`ManifestAccess` and a
:class:`ManifestMerge` (see ``mixed_iceberg.store.rewrite``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from pyiceberg.io import FileIO
from pyiceberg.manifest import ManifestEntry, ManifestFile

__all__ = ["ManifestAccess", "ManifestMerge"]


@dataclass(frozen=True, slots=True)
class ManifestAccess:
    """How a snapshot producer reads manifests.

    Args:
        manifest_list: wraps the read of one manifest list ``(io, location)``: translates its errors.
        manifest: wraps the read of one manifest ``(io, location)``: translates its errors.
        live_entries: the live (ADDED and EXISTING) entries of a committed manifest; may be cached,
            so callers must not change them.
        remember: told the live entries of a manifest this process wrote, once it is committed.
    """

    manifest_list: Callable[[FileIO, str], AbstractContextManager[object]]
    manifest: Callable[[FileIO, str], AbstractContextManager[object]]
    live_entries: Callable[[FileIO, ManifestFile], Sequence[ManifestEntry]]
    remember: Callable[[ManifestFile, Sequence[ManifestEntry]], None]


@dataclass(frozen=True, slots=True)
class ManifestMerge:
    """Iceberg's ``commit.manifest-merge.enabled``, ``commit.manifest.min-count-to-merge`` and
    ``commit.manifest.target-size-bytes``, parsed by the caller."""

    enabled: bool
    min_count: int
    target_size: int

    def __post_init__(self) -> None:
        if self.min_count < 1 or self.target_size < 1:
            raise ValueError(f"expected a positive min count and target size, found {self.min_count} and {self.target_size}")
