"""Every kind mixed-iceberg names, as an enum: never a bare string, never ``-1``.

The persisted ones (statuses in the system database, ``merge-engine`` in table properties,
``container`` and ``scheduling-policy`` in ``optimizer.yaml``) keep the spelling users and
the database see as their value. Statuses are :class:`enum.StrEnum`, so a row read back from
the database compares equal to its member (``TaskStatus.FAILED == "FAILED"``).

>>> TaskStatus("ACKED") in TaskStatus.in_flight()
True
>>> MergeEngine("partial-update").name
'PARTIAL_UPDATE'
"""

from __future__ import annotations

import enum

__all__ = [
    "Container",
    "FileClass",
    "HealthState",
    "MergeEngine",
    "OptimizingType",
    "ProcessStatus",
    "SchedulingPolicy",
    "TableStatus",
    "TaskStatus",
]


class MergeEngine(enum.Enum):
    """``merge-engine`` (Paimon's names): how a key's rows combine."""

    DEDUPLICATE = "deduplicate"
    PARTIAL_UPDATE = "partial-update"
    AGGREGATION = "aggregation"
    FIRST_ROW = "first-row"


class HealthState(enum.Enum):
    """A table's health against its targets (``health.target.*``): met, close, or missed."""

    GREEN = "green"
    AMBER = "amber"
    RED = "red"

    @property
    def rank(self) -> int:
        return list(HealthState).index(self)


class OptimizingType(enum.Enum):
    """Amoro's optimizing types, ordered by how much they rewrite."""

    MINOR = "minor"
    MAJOR = "major"
    FULL = "full"

    @property
    def rank(self) -> int:
        return {"minor": 1, "major": 2, "full": 3}[self.value]


class FileClass(enum.Enum):
    """Size classes of base files (Amoro's ``CommonPartitionEvaluator``)."""

    FRAGMENT = "fragment"
    UNDERSIZED = "undersized-segment"
    SEGMENT = "segment"


class SchedulingPolicy(enum.StrEnum):
    """An optimizer group's ``scheduling-policy`` (Amoro's): which table's task goes next."""

    #: a table's ``self-optimizing.quota`` bounds its share of the group's threads
    QUOTA = "quota"
    #: the table optimized least recently first
    BALANCED = "balanced"


class Container(enum.Enum):
    """Where a group's executors run: one Python process (Amoro's LOCAL) or a PyFlink job."""

    LOCAL = "local"
    FLINK = "flink"


class TaskStatus(enum.StrEnum):
    """A task's state: PLANNED -> SCHEDULED -> ACKED -> SUCCESS | FAILED; CANCELED with its process."""

    PLANNED = "PLANNED"
    SCHEDULED = "SCHEDULED"
    ACKED = "ACKED"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    CANCELED = "CANCELED"

    @classmethod
    def in_flight(cls) -> frozenset[TaskStatus]:
        """Held by an optimizer under a lease (given back when the lease runs out)."""
        return frozenset({cls.SCHEDULED, cls.ACKED})

    @classmethod
    def done(cls) -> frozenset[TaskStatus]:
        """Finished runs: a process commits (or fails) once all its tasks are here."""
        return frozenset({cls.SUCCESS, cls.FAILED})


class ProcessStatus(enum.StrEnum):
    """An optimizing process's state: RUNNING -> COMMITTING -> SUCCESS | FAILED | CANCELED."""

    RUNNING = "RUNNING"
    COMMITTING = "COMMITTING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    CANCELED = "CANCELED"

    @classmethod
    def ended(cls) -> frozenset[ProcessStatus]:
        """A process in one of these never changes again."""
        return frozenset({cls.SUCCESS, cls.FAILED, cls.CANCELED})


class TableStatus(enum.StrEnum):
    """A table's optimizing state in its group (the optimizing type while a process runs)."""

    IDLE = "IDLE"
    PLANNING = "PLANNING"
    MINOR = "MINOR"
    MAJOR = "MAJOR"
    FULL = "FULL"
    COMMITTING = "COMMITTING"
    FAILED = "FAILED"

    @classmethod
    def optimizing(cls, kind: OptimizingType) -> TableStatus:
        """The status of a table whose process of ``kind`` runs."""
        return cls(kind.value.upper())
