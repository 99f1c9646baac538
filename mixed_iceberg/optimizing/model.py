"""What the optimizer reasons about: file metadata in, plans and results out. No I/O.

Three tiers (STYLE.md): options parsed once into
:class:`~mixed_iceberg.config.optimizing.OptimizingConfig`, plans as frozen dataclasses, rows
always as Arrow (never here). The kinds :class:`OptimizingType` and :class:`FileClass` live in
:mod:`mixed_iceberg.config.kinds` and are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mixed_iceberg.config.kinds import FileClass, OptimizingType
from mixed_iceberg.format import DataTreeNode

__all__ = [
    "BaseFile",
    "ChangeFile",
    "FileClass",
    "OptimizingResult",
    "OptimizingType",
    "PartitionEvaluation",
    "PartitionFiles",
    "RewriteTask",
    "TableEvaluation",
]


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
    #: tasks that failed and were left out (``self-optimizing.allow-partial-commit``)
    tasks_failed: int = 0

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
