"""A table's health from its metadata: the figures a reader pays for, a health score, and each
``health.target.*`` judged green, amber or red. Pure: it takes what :func:`collect` gathered.

The score is in the spirit of Amoro 0.9's (small files, equality deletes, position deletes), on
our figures: 100, less 40 times the small-file share of the files a read opens, less 30 times the
delete ratio, less 30 times the equality-delete share; never below 0.

>>> from mixed_iceberg.config.health import HealthConfig
>>> figures = TableFigures(files=120, small_files=100, delete_ratio=0.05, equality_delete_files=0,
...     oldest_unmerged_change_ms=None, read_bytes=10**6)
>>> health = judge(figures, HealthConfig.from_properties({"health.target.max-files": "100"}), now_ms=0)
>>> health.state.value, health.score, [c.key for c in health.missed]
('red', 65, ['health.target.max-files'])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from pyiceberg.table.metadata import TableMetadata

from mixed_iceberg.config.health import HealthConfig
from mixed_iceberg.config.kinds import FileClass, HealthState
from mixed_iceberg.config.optimizing import OptimizingConfig
from mixed_iceberg.optimizing.collect import CollectedTable

__all__ = ["TableFigures", "TableHealth", "TargetCheck", "change_commit_times", "figures_of", "judge"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TableFigures:
    """What a merged read of the table pays, from metadata.

    Attributes:
        files: files a full merged read opens: base data and delete files, unmerged change files.
        small_files: base fragments and unmerged change files.
        delete_ratio: position deletes and unmerged change deletes over all rows written.
        equality_delete_files: equality delete files (written by other engines).
        oldest_unmerged_change_ms: when the oldest unmerged ChangeStore commit landed (None: none).
        read_bytes: the bytes of the files a full merged read opens.
    """

    files: int
    small_files: int
    delete_ratio: float
    equality_delete_files: int
    oldest_unmerged_change_ms: int | None
    read_bytes: int


def change_commit_times(change: TableMetadata | None) -> dict[int, int]:
    """What :func:`figures_of` takes: each ChangeStore sequence number's commit time (epoch ms)."""
    if change is None:
        return {}
    return {s.sequence_number: s.timestamp_ms for s in change.snapshots if s.sequence_number is not None}


def figures_of(collected: CollectedTable, config: OptimizingConfig, change_commits: Mapping[int, int]) -> TableFigures:
    """The figures of a collected table; ``change_commits`` maps a ChangeStore sequence number to
    its snapshot's commit time (epoch ms)."""
    base = [f for p in collected.partitions for f in p.base]
    change = [c for p in collected.partitions for c in p.change]
    written = sum(f.records for f in base) + sum(c.records for c in change if not c.is_delete)
    deleted = sum(f.pos_delete_records for f in base) + sum(c.records for c in change if c.is_delete)
    delete_bytes = sum(f.data_file.file_size_in_bytes for f in collected.delete_files.values())
    oldest = min((c.sequence_number for c in change), default=None)
    return TableFigures(
        files=len(base) + len(collected.delete_files) + len(change),
        small_files=sum(1 for f in base if config.classify(f.size) is FileClass.FRAGMENT) + len(change),
        delete_ratio=round(deleted / written, 4) if written else 0.0,
        equality_delete_files=len({p for f in base for p in f.eq_delete_files}),
        oldest_unmerged_change_ms=None if oldest is None else change_commits.get(oldest),
        read_bytes=sum(f.size for f in base) + delete_bytes + sum(c.size for c in change),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetCheck:
    """One target against its figure (durations in seconds)."""

    key: str
    value: float
    target: float
    state: HealthState


@dataclass(frozen=True, slots=True, kw_only=True)
class TableHealth:
    """The score (0-100), the worst state of the targets set (green when none is), and each check."""

    score: int
    state: HealthState
    checks: tuple[TargetCheck, ...]

    @property
    def missed(self) -> tuple[TargetCheck, ...]:
        """The checks that are not green."""
        return tuple(c for c in self.checks if c.state is not HealthState.GREEN)


def _score(figures: TableFigures) -> int:
    small = figures.small_files / figures.files if figures.files else 0.0
    equality = figures.equality_delete_files / figures.files if figures.files else 0.0
    return max(0, round(100 - 40 * small - 30 * min(1.0, figures.delete_ratio) - 30 * equality))


def judge(figures: TableFigures, config: HealthConfig, *, now_ms: int) -> TableHealth:
    """Each target set in ``config`` against its figure: red beyond it, amber beyond
    ``amber_ratio`` of it, else green."""
    age = (
        None
        if figures.oldest_unmerged_change_ms is None
        else timedelta(milliseconds=max(0, now_ms - figures.oldest_unmerged_change_ms)).total_seconds()
    )
    pairs: list[tuple[str, float | None, float | None]] = [
        ("health.target.max-files", figures.files, config.max_files),
        ("health.target.max-small-files", figures.small_files, config.max_small_files),
        ("health.target.max-delete-ratio", figures.delete_ratio, config.max_delete_ratio),
        (
            "health.target.max-unmerged-change-age",
            age or 0.0,
            None if config.max_unmerged_change_age is None else config.max_unmerged_change_age.total_seconds(),
        ),
        ("health.target.max-read-bytes", figures.read_bytes, config.max_read_bytes),
    ]
    checks = []
    for key, value, target in pairs:
        if target is None or value is None:
            continue
        if value > target:
            state = HealthState.RED
        elif value > target * config.amber_ratio:
            state = HealthState.AMBER
        else:
            state = HealthState.GREEN
        checks.append(TargetCheck(key=key, value=value, target=target, state=state))
    worst = max((c.state for c in checks), key=lambda s: s.rank, default=HealthState.GREEN)
    return TableHealth(score=_score(figures), state=worst, checks=tuple(checks))
