"""Which partitions a partial commit may take (``self-optimizing.allow-partial-commit``). Pure.

A commit advances each partition's optimized sequence to its tasks' ``to_sequence``, and a
reader then takes every change file at or below it as merged. A partition split into several
tasks by key space (:mod:`mixed_iceberg.optimizing.split`) whose tasks did not all succeed must
therefore not be committed: the change files of the failed task would be hidden, never merged.
The rule is exact: a partition commits when the tasks committed merge every change file it
had in their sequence range. A failed task without change files (a rewrite of base files only)
leaves the rows where they are, so its siblings still commit.
"""

from __future__ import annotations

from collections.abc import Sequence

from mixed_iceberg.optimizing.model import PartitionFiles, RewriteTask

__all__ = ["incomplete_partitions"]


def incomplete_partitions(tasks: Sequence[RewriteTask], partitions: Sequence[PartitionFiles]) -> set[str]:
    """Partitions of ``tasks`` holding a change file in their sequence range that no task merges.

    Args:
        tasks: the tasks whose outputs would be committed (the succeeded ones).
        partitions: the partitions as planned (their visible change files).

    Example:
        >>> incomplete_partitions([], [])
        set()
    """
    merged: dict[str, set[str]] = {}
    upto: dict[str, int] = {}
    for task in tasks:
        merged.setdefault(task.partition, set()).update(c.path for c in task.change)
        upto[task.partition] = max(upto.get(task.partition, task.to_sequence), task.to_sequence)
    incomplete = set()
    for part in partitions:
        if part.path not in upto:
            continue
        due = {c.path for c in part.change if c.sequence_number <= upto[part.path]}
        if due - merged[part.path]:
            incomplete.add(part.path)
    return incomplete
