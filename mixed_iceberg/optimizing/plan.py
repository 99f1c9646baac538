"""Turn an evaluation into rewrite tasks. Pure: file metadata in, tasks out.

Per partition: which change files to merge (a sequence prefix bounded by
``self-optimizing.max-file-count`` that keeps transaction order), which base files to rewrite
(by type), and which segments only get position deletes. Base files whose transaction id is
above the merged range are never rewritten: their rows would otherwise take a lower LSN.
Fragments are merged by size tier and position-delete files combined in batches
(:mod:`mixed_iceberg.optimizing.tiers`); full optimizing rewrites regardless. A partition's
task above ``self-optimizing.max-task-size-bytes`` is split by key space
(:mod:`mixed_iceberg.optimizing.split`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import groupby

from mixed_iceberg.config.optimizing import OptimizingConfig
from mixed_iceberg.optimizing.evaluate import needs_rewrite
from mixed_iceberg.optimizing.model import (
    BaseFile,
    ChangeFile,
    FileClass,
    OptimizingType,
    PartitionFiles,
    RewriteTask,
    TableEvaluation,
)
from mixed_iceberg.optimizing.split import split_task
from mixed_iceberg.optimizing.tiers import by_node, combine_threshold, fragments_to_merge, undersized_to_merge

__all__ = ["change_prefix", "plan_tasks"]


def change_prefix(files: Sequence[ChangeFile], limit: int) -> list[ChangeFile]:
    """The longest whole-sequence prefix with at most ``limit`` files, backed off until every
    transaction id taken is below every one left (Amoro's ``getMaxSequenceKeepingTxIdInOrder``)."""
    ordered = sorted(files, key=lambda f: (f.sequence_number, f.path))
    groups = [list(g) for _, g in groupby(ordered, key=lambda f: f.sequence_number)]
    taken: list[list[ChangeFile]] = []
    count = 0
    for group in groups:
        if taken and count + len(group) > limit:
            break
        taken.append(group)
        count += len(group)
    rest = [f for group in groups[len(taken) :] for f in group]
    while taken and rest and max(f.transaction_id for g in taken for f in g) >= min(f.transaction_id for f in rest):
        rest = taken.pop() + rest
    return [f for group in taken for f in group]


def _rewrite_set(part: PartitionFiles, kind: OptimizingType, config: OptimizingConfig) -> list[BaseFile]:
    if any(f.eq_delete_files for f in part.base):
        # Equality deletes (from other engines) are only retired by rewriting every file they
        # may apply to; the rewritten files get newer sequence numbers, so the deletes dangle.
        return list(part.base)
    classes = {f.path: config.classify(f.size) for f in part.base}
    if kind is OptimizingType.FULL:
        if config.full_rewrite_all:
            return list(part.base)
        return [f for f in part.base if classes[f.path] is not FileClass.SEGMENT or f.pos_delete_files or f.eq_delete_files]
    all_fragments = [f for f in part.base if classes[f.path] is FileClass.FRAGMENT]
    fragments = [*fragments_to_merge(all_fragments, config)]
    merged = {f.path for f in fragments}
    fragments += [f for f in all_fragments if f.path not in merged and needs_rewrite(f, config)]
    if kind is OptimizingType.MINOR:
        return fragments
    undersized = [f for f in part.base if classes[f.path] is FileClass.UNDERSIZED]
    heavy = [f for f in part.base if classes[f.path] is not FileClass.FRAGMENT and needs_rewrite(f, config)]
    merge = undersized_to_merge(undersized, config)
    chosen = {f.path: f for f in [*fragments, *heavy, *merge]}
    return list(chosen.values())


def _worth_rewriting(files: list[BaseFile]) -> list[BaseFile]:
    """Without change data to merge, a node's lone clean file would only be copied: skip it."""
    return [f for group in by_node(files).values() for f in group if len(group) > 1 or f.pos_delete_files or f.eq_delete_files]


def _sharing(seeds: list[BaseFile], files: list[BaseFile]) -> set[str]:
    """Paths of ``seeds`` and of every file of ``files`` linked to one by a shared position-delete file."""
    holders: dict[str, list[BaseFile]] = {}
    for f in files:
        for d in f.pos_delete_files:
            holders.setdefault(d, []).append(f)
    found = {f.path for f in seeds}
    todo = list(seeds)
    while todo:
        for d in todo.pop().pos_delete_files:
            for other in holders.get(d, ()):
                if other.path not in found:
                    found.add(other.path)
                    todo.append(other)
    return found


def plan_partition(
    part: PartitionFiles,
    kind: OptimizingType,
    config: OptimizingConfig,
    *,
    keyed: bool,
    merged_up_to: int = 0,
    drop_dangling_deletes: bool = True,
) -> RewriteTask | None:
    """The task for one partition, or ``None`` when there is nothing to rewrite.

    ``merged_up_to``: every change at or below this sequence is merged wherever it is (a
    cross-partition table's last cut), so this partition's files written up to it may be
    rewritten too, even where its own optimized sequence is older.

    ``drop_dangling_deletes`` (``clean-dangling-delete-files.enabled``): a task that rewrites
    every file of the partition removes its equality delete files, which then apply to no live
    file; without it they stay (reads skip them: the rewritten files are newer)."""
    change = change_prefix(part.change, config.max_file_count) if keyed else []
    to_sequence = max((c.sequence_number for c in change), default=max(part.optimized_sequence, merged_up_to))
    rewrite = _rewrite_set(part, kind, config)
    if keyed:
        rewrite = [f for f in rewrite if f.transaction_id <= to_sequence]
    if not change:
        rewrite = _worth_rewriting(rewrite)
    chosen = {f.path for f in rewrite}
    # Any change row may retire a segment's row of its key (a newer insert replaces it too).
    has_change = bool(change)
    combine_at = combine_threshold(config)
    kept = [f for f in part.base if f.path not in chosen]
    # A segment whose next position-delete file would reach the threshold is combined now,
    # with every segment it shares a position-delete file with (a file goes only when all
    # the live files it holds rows of are combined or rewritten).
    combine = _sharing([f for f in kept if len(f.pos_delete_files) + (1 if has_change else 0) >= combine_at], kept)
    if not change and not rewrite and not combine:
        return None
    segments = [f for f in kept if has_change or f.path in combine]
    everything = len(rewrite) == len(part.base)
    dangling = sorted({p for f in part.base for p in f.eq_delete_files}) if everything and drop_dangling_deletes else []
    return RewriteTask(
        partition=part.path,
        type=kind,
        rewrite=tuple(rewrite),
        segments=tuple(segments),
        combine_deletes=tuple(f.path for f in segments if f.path in combine),
        change=tuple(change),
        from_sequence=part.optimized_sequence,
        to_sequence=to_sequence,
        drop_delete_files=tuple(dangling),
    )


def plan_tasks(
    partitions: Sequence[PartitionFiles],
    evaluation: TableEvaluation,
    config: OptimizingConfig,
    *,
    keyed: bool,
    requested: OptimizingType | None = None,
    cross_partition: bool = False,
    drop_dangling_deletes: bool = True,
) -> list[RewriteTask]:
    """Tasks for every partition that needs optimizing (or all, at ``requested`` type).

    ``cross_partition`` (a keyed table partitioned by a non-key column, where a key can move
    between partitions): the change to merge is one prefix of the whole table's change, cut at
    one sequence (at most ``max_sequence``), and every partition holding change below the cut is
    merged in the same run. Merged rows take the transaction id of their run; with one cut, every
    change row left visible anywhere is newer than it, as a partition's own prefix guarantees
    within the partition.
    """
    by_path = {p.path: p for p in evaluation.partitions}
    cut: int | None = None
    merged_up_to = 0
    if keyed and cross_partition:
        prefix = change_prefix([c for p in partitions for c in p.change], config.max_file_count)
        cut = max((c.sequence_number for c in prefix), default=None)
        # Each run merges one cut across all partitions and its outputs take the cut as their
        # transaction id, also in partitions without change of their own, whose optimized
        # sequence then stays older than their files. The newest partition's sequence is a
        # cut every partition is merged up to.
        merged_up_to = max([cut or 0, *(p.optimized_sequence for p in partitions)])
    tasks = []
    for part in partitions:
        kind = (requested or by_path[part.path].type) if part.path in by_path else requested
        if keyed and cross_partition:
            merged = tuple(c for c in part.change if cut is not None and c.sequence_number <= cut)
            part = replace(part, change=merged)
            if kind is None and merged:
                kind = OptimizingType.MINOR
        if kind is None:
            continue
        task = plan_partition(
            part, kind, config, keyed=keyed, merged_up_to=merged_up_to, drop_dangling_deletes=drop_dangling_deletes
        )
        if task is None:
            continue
        if cross_partition:  # one merge across partitions (execute_unit): never split
            tasks.append(task)
        else:
            tasks += split_task(task, config.max_task_size, keyed=keyed)
    return tasks
