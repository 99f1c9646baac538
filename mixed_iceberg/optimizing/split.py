"""Split one partition's task into several of at most ``self-optimizing.max-task-size-bytes``. Pure.

Without a split, a large partition is one task, run on one thread of one optimizer. The tasks
of one partition share its sequence range and commit together, so splitting changes who does
the work, never what is committed.

* **Keyed tables: by key space** (Amoro's ``TreeNodeTaskSplitter``). A key's rows are all in
  one tree node of every mask, so the files are grouped by their ancestor at the coarsest mask
  any of them has. Each group holds the base files to rewrite, the segments to probe and the
  change files of its keys alone. A file of the root node (written by another engine) holds
  keys of every node, so it forbids any split.
* **Unkeyed and Iceberg tables: by file** (Amoro's ``BinPackingTaskSplitter``).
* **Packing.** The groups are packed, largest first, into tasks of at most the limit. A group
  above the limit is a task alone.

A partition is not split when a delete file is shared across tasks: an equality delete, or
a position delete attached to data files of two groups (the optimizer's own position-delete
files are per tree node, so they stay within one group). A task retires a delete file only
when it rewrote every file the delete applies to, and a split would leave the shared delete
to no one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mixed_iceberg.format import DataTreeNode, parse_change
from mixed_iceberg.optimizing.model import BaseFile, ChangeFile, RewriteTask

__all__ = ["split_task"]


@dataclass(slots=True)
class _Group:
    rewrite: list[BaseFile] = field(default_factory=list)
    segments: list[BaseFile] = field(default_factory=list)
    change: list[ChangeFile] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.rewrite) + sum(f.size for f in self.change)


def _change_node(f: ChangeFile) -> DataTreeNode:
    return parse_change(f.path, f.sequence_number).node


def _shares_deletes(task: RewriteTask) -> bool:
    files = (*task.rewrite, *task.segments)
    return bool(task.drop_delete_files) or any(f.eq_delete_files for f in files)


def _spans_groups(groups: list[_Group]) -> bool:
    """Whether a position-delete file is attached to files of two groups."""
    owner: dict[str, int] = {}
    for number, group in enumerate(groups):
        for f in (*group.rewrite, *group.segments):
            for d in f.pos_delete_files:
                if owner.setdefault(d, number) != number:
                    return True
    return False


def _groups(task: RewriteTask, keyed: bool) -> list[_Group] | None:
    if not keyed:
        groups = [_Group(rewrite=[f]) for f in task.rewrite]
        if groups:
            groups[0].segments = list(task.segments)
        return groups
    nodes = [f.node for f in (*task.rewrite, *task.segments)] + [_change_node(c) for c in task.change]
    mask = min((n.mask for n in nodes), default=0)
    if mask == 0:
        return None
    by_node: dict[int, _Group] = {}
    for f in task.rewrite:
        by_node.setdefault(f.node.index & mask, _Group()).rewrite.append(f)
    for f in task.segments:
        by_node.setdefault(f.node.index & mask, _Group()).segments.append(f)
    for c in task.change:
        by_node.setdefault(_change_node(c).index & mask, _Group()).change.append(c)
    return [g for _, g in sorted(by_node.items())]


def split_task(task: RewriteTask, max_bytes: int, *, keyed: bool) -> list[RewriteTask]:
    """``task`` as tasks of at most ``max_bytes`` of input each (see the module docstring)."""
    if task.input_bytes <= max_bytes or _shares_deletes(task):
        return [task]
    groups = _groups(task, keyed)
    if groups is None or _spans_groups(groups):
        return [task]
    # A group with neither rewrites nor change has nothing to do: no change row can touch its segments.
    groups = [g for g in groups if g.rewrite or g.change]
    if len(groups) <= 1:
        return [task]
    bins: list[_Group] = []
    for group in sorted(groups, key=lambda g: -g.size):
        target = next((b for b in bins if b.size + group.size <= max_bytes), None)
        if target is None:
            bins.append(_Group(list(group.rewrite), list(group.segments), list(group.change)))
        else:
            target.rewrite += group.rewrite
            target.segments += group.segments
            target.change += group.change
    if len(bins) <= 1:
        return [task]
    combine = set(task.combine_deletes)
    return [
        RewriteTask(
            partition=task.partition,
            type=task.type,
            rewrite=tuple(b.rewrite),
            segments=tuple(b.segments),
            change=tuple(b.change),
            from_sequence=task.from_sequence,
            to_sequence=task.to_sequence,
            combine_deletes=tuple(f.path for f in b.segments if f.path in combine),
        )
        for b in bins
    ]
