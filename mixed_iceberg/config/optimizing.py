"""``self-optimizing.*`` of one table, parsed once (Amoro's keys and defaults)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from mixed_iceberg.config import registry as opt
from mixed_iceberg.config.kinds import FileClass
from mixed_iceberg.config.layout import LayoutConfig

__all__ = ["OptimizingConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OptimizingConfig:
    """The ``self-optimizing.*`` properties of one table, parsed; ``layout`` is the table's
    file layout (the base bucket count the triggers weigh).

    Durations are :class:`~datetime.timedelta`; an interval that is off (Amoro's ``-1``) is None.
    What the optimizer service needs of a table is here too: ``enabled``, ``group`` and ``quota``
    (discovery), ``num_retries`` (``self-optimizing.execute.num-retries``: failed runs of a task
    before it fails for good) and ``allow_partial_commit`` (commit the tasks that succeeded when
    others failed for good).
    """

    enabled: bool
    group: str
    quota: float
    num_retries: int
    allow_partial_commit: bool
    target_size: int
    max_task_size: int
    max_file_count: int
    fragment_ratio: int
    min_target_ratio: float
    minor_file_count: int
    merge_width: int
    minor_interval: timedelta
    major_duplicate_ratio: float
    full_interval: timedelta | None
    full_rewrite_all: bool
    min_plan_interval: timedelta
    filter: str
    base_refresh_interval: timedelta | None
    layout: LayoutConfig
    key_index: bool

    @property
    def fragment_size(self) -> int:
        """Files at or below this size are fragments (128 MB / 8 = 16 MB by default)."""
        return self.target_size // self.fragment_ratio

    @property
    def min_target_size(self) -> int:
        """Files at or below this size (and above a fragment) are undersized segments."""
        return int(self.target_size * self.min_target_ratio)

    def classify(self, size: int) -> FileClass:
        if size <= self.fragment_size:
            return FileClass.FRAGMENT
        if size <= self.min_target_size:
            return FileClass.UNDERSIZED
        return FileClass.SEGMENT

    @classmethod
    def from_properties(
        cls, properties: Mapping[str, str], table: str = "", *, layout: LayoutConfig | None = None
    ) -> OptimizingConfig:
        """Parse once (``layout`` too, unless given); raises ``PropertyError`` naming the key on a bad value."""
        return cls(
            enabled=opt.OPT_ENABLED.read(properties, table),
            group=opt.OPT_GROUP.read(properties, table),
            quota=opt.OPT_QUOTA.read(properties, table),
            num_retries=opt.OPT_RETRIES.read(properties, table),
            allow_partial_commit=opt.OPT_PARTIAL.read(properties, table),
            target_size=opt.OPT_TARGET_SIZE.read(properties, table),
            max_task_size=opt.OPT_MAX_TASK_SIZE.read(properties, table),
            max_file_count=opt.OPT_MAX_FILE_COUNT.read(properties, table),
            fragment_ratio=opt.OPT_FRAGMENT_RATIO.read(properties, table),
            min_target_ratio=opt.OPT_MIN_TARGET_RATIO.read(properties, table),
            minor_file_count=opt.OPT_MINOR_FILES.read(properties, table),
            merge_width=opt.OPT_MERGE_WIDTH.read(properties, table),
            minor_interval=opt.OPT_MINOR_INTERVAL.read(properties, table),
            major_duplicate_ratio=opt.OPT_MAJOR_RATIO.read(properties, table),
            full_interval=opt.OPT_FULL_INTERVAL.read(properties, table),
            full_rewrite_all=opt.OPT_FULL_REWRITE_ALL.read(properties, table),
            min_plan_interval=opt.OPT_MIN_PLAN_INTERVAL.read(properties, table),
            filter=opt.OPT_FILTER.read(properties, table),
            base_refresh_interval=opt.BASE_REFRESH_INTERVAL.read(properties, table),
            layout=layout if layout is not None else LayoutConfig.from_properties(properties, table),
            key_index=opt.OPT_KEY_INDEX.read(properties, table),
        )
