"""``health.*``: a table's health targets, declared in the option registry and parsed once.

Each target bounds one figure that metadata gives without reading a data file
(:mod:`mixed_iceberg.optimizing.health` computes the figures and judges them). A target is off
until set. A figure beyond its target is red; beyond ``health.amber-ratio`` of it, amber.

>>> config = HealthConfig.from_properties({"health.target.max-files": "100"})
>>> config.max_files, config.max_delete_ratio, config.amber_ratio
(100, None, 0.8)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from mixed_iceberg.config.option import Option, parse_duration
from mixed_iceberg.config.registry import declare as _declare

__all__ = ["HealthConfig"]

_OFF = ("", "off", "none")


def _count_or_off(raw: str) -> int | None:
    if raw.strip().lower() in _OFF:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError("expected a positive integer or off") from None
    if value < 1:
        raise ValueError("expected a positive integer or off")
    return value


def _ratio_or_off(raw: str) -> float | None:
    if raw.strip().lower() in _OFF:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        raise ValueError("expected a number between 0 and 1, or off") from None
    if not 0 <= value <= 1:
        raise ValueError("expected a number between 0 and 1, or off")
    return value


def _duration_or_off(raw: str) -> timedelta | None:
    if raw.strip().lower() in _OFF:
        return None
    try:
        return parse_duration(raw)
    except Exception:
        raise ValueError("expected a duration such as 30min, 12h or 2d, or off") from None


def _amber(raw: str) -> float:
    value = _ratio_or_off(raw)
    if value is None or value == 0:
        raise ValueError("expected a number above 0 and at most 1")
    return value


MAX_FILES = _declare(
    Option(
        key="health.target.max-files",
        parse=_count_or_off,
        default=None,
        spelled="off",
        doc="Health target: the most files a merged read opens (base data and delete files, unmerged change files).",
    )
)
MAX_SMALL_FILES = _declare(
    Option(
        key="health.target.max-small-files",
        parse=_count_or_off,
        default=None,
        spelled="off",
        doc="Health target: the most small files (base fragments and unmerged change files).",
    )
)
MAX_DELETE_RATIO = _declare(
    Option(
        key="health.target.max-delete-ratio",
        parse=_ratio_or_off,
        default=None,
        spelled="off",
        doc="Health target: the largest delete ratio (position and unmerged change deletes over rows written).",
    )
)
MAX_CHANGE_AGE = _declare(
    Option(
        key="health.target.max-unmerged-change-age",
        parse=_duration_or_off,
        default=None,
        spelled="off",
        doc="Health target: the oldest unmerged ChangeStore commit (a duration such as 30min).",
    )
)
MAX_READ_BYTES = _declare(
    Option(
        key="health.target.max-read-bytes",
        parse=_count_or_off,
        default=None,
        spelled="off",
        doc="Health target: the most bytes a full merged read opens (data, delete and unmerged change files); "
        "the merged read's cost estimate from metadata.",
    )
)
AMBER_RATIO = _declare(
    Option(
        key="health.amber-ratio",
        parse=_amber,
        default=0.8,
        doc="A figure beyond this share of its health target is amber (close); beyond the target, red.",
    )
)


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthConfig:
    """The ``health.*`` properties of one table, parsed; None: that target is off."""

    max_files: int | None
    max_small_files: int | None
    max_delete_ratio: float | None
    max_unmerged_change_age: timedelta | None
    max_read_bytes: int | None
    amber_ratio: float

    @property
    def any_target(self) -> bool:
        """Whether any target is set."""
        targets = (self.max_files, self.max_small_files, self.max_delete_ratio, self.max_unmerged_change_age, self.max_read_bytes)
        return any(t is not None for t in targets)

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], table: str = "") -> HealthConfig:
        """Parse once; raises ``PropertyError`` naming the key on a bad value."""
        return cls(
            max_files=MAX_FILES.read(properties, table),
            max_small_files=MAX_SMALL_FILES.read(properties, table),
            max_delete_ratio=MAX_DELETE_RATIO.read(properties, table),
            max_unmerged_change_age=MAX_CHANGE_AGE.read(properties, table),
            max_read_bytes=MAX_READ_BYTES.read(properties, table),
            amber_ratio=AMBER_RATIO.read(properties, table),
        )
