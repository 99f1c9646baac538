"""What the optimizer reasons about: file metadata in, plans and results out. No I/O.

Three tiers (STYLE.md): options parsed once into :class:`OptimizingConfig`, plans as frozen
dataclasses, rows always as Arrow (never here).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from mixed_iceberg import options as opt
from mixed_iceberg.format import DataTreeNode

__all__ = [
    "BaseFile",
    "ChangeFile",
    "FileClass",
    "OptimizingConfig",
    "OptimizingResult",
    "OptimizingType",
    "PartitionEvaluation",
    "PartitionFiles",
    "RewriteTask",
    "TableEvaluation",
]


class OptimizingType(enum.Enum):
    """Amoro's optimizing types, ordered by how much they rewrite."""

    MINOR = "minor"
    MAJOR = "major"
    FULL = "full"

    @property
    def rank(self) -> int:
        return {"minor": 1, "major": 2, "full": 3}[self.value]


class FileClass(enum.Enum):
    """Size classes of base files (``CommonPartitionEvaluator``)."""

    FRAGMENT = "fragment"
    UNDERSIZED = "undersized-segment"
    SEGMENT = "segment"


@dataclass(frozen=True, slots=True, kw_only=True)
class OptimizingConfig:
    """The ``self-optimizing.*`` properties of one table, parsed; ``layout`` is the table's
    file layout (the base bucket count the triggers weigh)."""

    enabled: bool
    group: str
    quota: float
    retries: int
    target_size: int
    max_task_size: int
    max_file_count: int
    fragment_ratio: int
    min_target_ratio: float
    minor_file_count: int
    merge_width: int
    minor_interval_ms: int
    major_duplicate_ratio: float
    full_interval_ms: int
    full_rewrite_all: bool
    min_plan_interval_ms: int
    filter: str
    base_refresh_interval_ms: int
    layout: opt.LayoutConfig
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
        cls, properties: Mapping[str, str], table: str = "", *, layout: opt.LayoutConfig | None = None
    ) -> OptimizingConfig:
        """Parse once (``layout`` too, unless given); raises ``PropertyError`` naming the key on a bad value."""
        return cls(
            enabled=opt.OPT_ENABLED.read(properties, table),
            group=opt.OPT_GROUP.read(properties, table),
            quota=opt.OPT_QUOTA.read(properties, table),
            retries=opt.OPT_RETRIES.read(properties, table),
            target_size=opt.OPT_TARGET_SIZE.read(properties, table),
            max_task_size=opt.OPT_MAX_TASK_SIZE.read(properties, table),
            max_file_count=opt.OPT_MAX_FILE_COUNT.read(properties, table),
            fragment_ratio=opt.OPT_FRAGMENT_RATIO.read(properties, table),
            min_target_ratio=opt.OPT_MIN_TARGET_RATIO.read(properties, table),
            minor_file_count=opt.OPT_MINOR_FILES.read(properties, table),
            merge_width=opt.OPT_MERGE_WIDTH.read(properties, table),
            minor_interval_ms=opt.OPT_MINOR_INTERVAL.read(properties, table),
            major_duplicate_ratio=opt.OPT_MAJOR_RATIO.read(properties, table),
            full_interval_ms=opt.OPT_FULL_INTERVAL.read(properties, table),
            full_rewrite_all=opt.OPT_FULL_REWRITE_ALL.read(properties, table),
            min_plan_interval_ms=opt.OPT_MIN_PLAN_INTERVAL.read(properties, table),
            filter=opt.OPT_FILTER.read(properties, table),
            base_refresh_interval_ms=opt.BASE_REFRESH_INTERVAL.read(properties, table),
            layout=layout if layout is not None else opt.LayoutConfig.from_properties(properties, table),
            key_index=opt.OPT_KEY_INDEX.read(properties, table),
        )


@dataclass(frozen=True, slots=True)
class BaseFile:
    """A live BaseStore data file and the delete files that apply to it."""

    path: str
    size: int
    records: int
    transaction_id: int
    node: DataTreeNode
    pos_delete_files: tuple[str, ...]
    pos_delete_records: int
    eq_delete_files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ChangeFile:
    """A visible ChangeStore file (data sequence above the optimized sequence)."""

    path: str
    size: int
    records: int
    sequence_number: int
    transaction_id: int
    is_delete: bool


@dataclass(frozen=True, slots=True)
class PartitionFiles:
    """Everything the evaluator and planner know about one partition."""

    path: str
    base: tuple[BaseFile, ...]
    change: tuple[ChangeFile, ...]
    optimized_sequence: int
    last_optimized_ms: int
    delete_files: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if any(c.sequence_number <= self.optimized_sequence for c in self.change):
            raise ValueError(f"partition {self.path!r}: change files at or below optimized sequence {self.optimized_sequence}")


@dataclass(frozen=True, slots=True)
class PartitionEvaluation:
    """Whether, and how, one partition needs optimizing, with the counts that decided it."""

    path: str
    type: OptimizingType | None
    reason: str
    fragments: int
    undersized: int
    segments: int
    change_files: int
    delete_files: int
    pos_delete_records: int
    records: int


@dataclass(frozen=True, slots=True)
class TableEvaluation:
    """The table-level answer: the highest type any partition needs (``None`` when idle)."""

    table: str
    partitions: tuple[PartitionEvaluation, ...]

    @property
    def type(self) -> OptimizingType | None:
        types = [p.type for p in self.partitions if p.type is not None]
        return max(types, key=lambda t: t.rank) if types else None

    @property
    def pending(self) -> bool:
        return self.type is not None


@dataclass(frozen=True, slots=True)
class RewriteTask:
    """One unit of work: a partition's base files to rewrite, segments to position-delete,
    and change files (a contiguous sequence range) to merge in."""

    partition: str
    type: OptimizingType
    rewrite: tuple[BaseFile, ...]
    segments: tuple[BaseFile, ...]
    change: tuple[ChangeFile, ...]
    from_sequence: int
    to_sequence: int
    drop_delete_files: tuple[str, ...] = field(default=())
    #: segments whose existing position-delete files are combined with the new positions
    combine_deletes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.to_sequence < self.from_sequence:
            raise ValueError(f"task {self.partition!r}: sequence range ({self.from_sequence}, {self.to_sequence}] is empty")
        if not (self.rewrite or self.change or self.drop_delete_files or self.combine_deletes):
            raise ValueError(f"task {self.partition!r}: nothing to do")

    @property
    def input_bytes(self) -> int:
        return sum(f.size for f in self.rewrite) + sum(f.size for f in self.change)


@dataclass(frozen=True, slots=True, kw_only=True)
class OptimizingResult:
    """What one optimizing run did."""

    table: str
    type: OptimizingType | None
    tasks: int
    files_in: int
    files_out: int
    delete_files_out: int
    bytes_in: int
    bytes_out: int
    rows_in: int
    rows_out: int
    duration_s: float
    committed: bool
    snapshot_id: int | None = None

    @classmethod
    def idle(cls, table: str, duration_s: float) -> OptimizingResult:
        """A run that found nothing to do (or was too soon after the last) and committed nothing."""
        return cls(
            table=table,
            type=None,
            tasks=0,
            files_in=0,
            files_out=0,
            delete_files_out=0,
            bytes_in=0,
            bytes_out=0,
            rows_in=0,
            rows_out=0,
            duration_s=duration_s,
            committed=False,
        )
