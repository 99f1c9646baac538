"""Maintenance settings, parsed once from a table's properties into a frozen object.

The keys are declared in :mod:`mixed_iceberg.config.registry` (Amoro's names and defaults), which
parses them into :class:`~datetime.timedelta` values (``snapshot.keep.duration`` with
:func:`mixed_iceberg.config.option.parse_duration`).

Two Iceberg keys are read as well, since manifest rewriting follows them (declared in the
registry too, with Iceberg's defaults): ``commit.manifest.target-size-bytes`` (size of a merged
manifest) and ``commit.manifest.min-count-to-merge`` (manifests per store before :meth:`run`
rewrites them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from mixed_iceberg.config.option import parse_duration
from mixed_iceberg.config.registry import (
    CHANGE_TTL,
    DANGLING_ENABLED,
    EXPIRE_ENABLED,
    MANIFEST_MIN_COUNT_TO_MERGE,
    MANIFEST_TARGET_SIZE,
    ORPHAN_ENABLED,
    ORPHAN_MIN_AGE,
    SNAPSHOT_KEEP_DURATION,
    SNAPSHOT_KEEP_MIN,
)

__all__ = ["MaintenanceConfig", "parse_duration"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintenanceConfig:
    """What maintenance reads from a table's (BaseStore) properties.

    No field has a default of its own: the defaults are the option registry's, so a table
    without these keys is ``MaintenanceConfig.from_properties({})``.

    Attributes:
        expire_enabled: ``table-expire.enabled``; gates snapshot expiry in ``run()``.
        snapshot_keep: ``snapshot.keep.duration``; younger snapshots are kept.
        snapshot_min_count: ``snapshot.keep.min-count``; newest snapshots always kept, per store.
        change_ttl: ``change.data.ttl.minutes``; merged change files older than this are deleted.
        orphan_enabled: ``clean-orphan-file.enabled``; gates orphan cleaning in ``run()``.
        orphan_min_age: ``clean-orphan-file.min-existing-time-minutes``; the safety window.
        clean_dangling_deletes: ``clean-dangling-delete-files.enabled``; gates removing the
            delete files that apply to no live data file any more (``run()``, and optimizing's
            drop of the equality deletes it has made dangling).
        manifest_target_size: ``commit.manifest.target-size-bytes``; size of a merged manifest.
        manifest_min_count: ``commit.manifest.min-count-to-merge``; ``run()`` rewrites a store's
            manifests once its current snapshot has at least this many.
    """

    expire_enabled: bool
    snapshot_keep: timedelta
    snapshot_min_count: int
    change_ttl: timedelta
    orphan_enabled: bool
    orphan_min_age: timedelta
    clean_dangling_deletes: bool
    manifest_target_size: int
    manifest_min_count: int

    def __post_init__(self) -> None:
        if self.snapshot_min_count < 1:
            raise ValueError(f"snapshot_min_count: expected >= 1, found {self.snapshot_min_count}")
        for name in ("snapshot_keep", "change_ttl", "orphan_min_age"):
            if getattr(self, name) < timedelta(0):
                raise ValueError(f"{name}: expected a duration >= 0, found {getattr(self, name)}")
        if self.manifest_target_size <= 0 or self.manifest_min_count <= 0:
            raise ValueError(
                f"manifest settings: expected positive values, found {self.manifest_target_size}, {self.manifest_min_count}"
            )

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], table: str = "") -> MaintenanceConfig:
        """Parse the maintenance settings of a table.

        Args:
            properties: the table's (BaseStore) properties.
            table: the table name, used in error messages.

        Raises:
            PropertyError: a value does not parse, naming the key, what was expected and what was found.
        """
        return cls(
            expire_enabled=EXPIRE_ENABLED.read(properties, table),
            snapshot_keep=SNAPSHOT_KEEP_DURATION.read(properties, table),
            snapshot_min_count=SNAPSHOT_KEEP_MIN.read(properties, table),
            change_ttl=CHANGE_TTL.read(properties, table),
            orphan_enabled=ORPHAN_ENABLED.read(properties, table),
            orphan_min_age=ORPHAN_MIN_AGE.read(properties, table),
            clean_dangling_deletes=DANGLING_ENABLED.read(properties, table),
            manifest_target_size=MANIFEST_TARGET_SIZE.read(properties, table),
            manifest_min_count=MANIFEST_MIN_COUNT_TO_MERGE.read(properties, table),
        )
