"""Is optimizing due, and which type? Amoro's trigger rules, per partition. Pure.

See ``shared/research/amoro.md`` §3.2-3.3. Keyed tables count every change insert file as a
fragment and every change delete file as a delete; ``base.file-index.hash-bucket`` raises the
minor file-count threshold, as in ``MixedIcebergPartitionPlan``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from mixed_iceberg.config.optimizing import OptimizingConfig
from mixed_iceberg.optimizing.model import (
    BaseFile,
    FileClass,
    OptimizingType,
    PartitionEvaluation,
    PartitionFiles,
    TableEvaluation,
)
from mixed_iceberg.optimizing.tiers import combine_threshold, fragments_to_merge, undersized_to_merge

__all__ = ["evaluate_partition", "evaluate_table", "needs_rewrite"]


def _ms(interval: timedelta) -> int:
    return interval // timedelta(milliseconds=1)


def needs_rewrite(file: BaseFile, config: OptimizingConfig) -> bool:
    """A segment whose position-deleted share exceeds the duplicate ratio (Amoro's ``fileShouldRewrite``)."""
    return file.pos_delete_records > file.records * config.major_duplicate_ratio


def _age(ms: int) -> str:
    """A rough age for people (``42s``, ``17min``, ``3h``, ``2d``)."""
    seconds = ms // 1000
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(0, seconds)}s"


def _idle_reason(
    config: OptimizingConfig,
    *,
    keyed: bool,
    small: int,
    has_change: bool,
    since_optimized_ms: int,
    since_full_ms: int,
    undersized: int,
) -> str:
    """Why nothing is due: each trigger evaluated, with its value and its threshold, so that an
    operator who expected a run sees which one would have to move."""
    threshold = max(config.layout.base_buckets + 1, config.minor_file_count) if keyed else config.minor_file_count
    checks = [f"{small} small file(s) < minor.trigger.file-count {threshold}"]
    interval = _age(_ms(config.minor_interval))
    if keyed and not has_change:
        checks.append("no unmerged change data")
    elif since_optimized_ms <= _ms(config.minor_interval):
        checks.append(f"{_age(since_optimized_ms)} since the last optimizing (or creation) <= minor.trigger.interval {interval}")
    else:
        checks.append(f"minor.trigger.interval {interval} reached but nothing to merge")
    checks.append(f"no segment over major.trigger.duplicate-ratio {config.major_duplicate_ratio}")
    if undersized:
        checks.append(f"{undersized} undersized segment(s) hold less than a target file")
    if config.full_interval is None:
        checks.append("full.trigger.interval off")
    elif since_full_ms <= _ms(config.full_interval):
        checks.append(f"{_age(since_full_ms)} since the last full <= full.trigger.interval {_age(_ms(config.full_interval))}")
    else:
        checks.append(f"full.trigger.interval {_age(_ms(config.full_interval))} reached but nothing to rewrite")
    return "healthy: " + "; ".join(checks)


def evaluate_partition(
    part: PartitionFiles,
    config: OptimizingConfig,
    *,
    keyed: bool,
    now_ms: int,
    last_full_ms: int,
) -> PartitionEvaluation:
    """The optimizing type ``part`` needs now (``None`` when it is healthy)."""
    classes = {f.path: config.classify(f.size) for f in part.base}
    fragments = [f for f in part.base if classes[f.path] is FileClass.FRAGMENT]
    undersized = [f for f in part.base if classes[f.path] is FileClass.UNDERSIZED]
    segments = [f for f in part.base if classes[f.path] is FileClass.SEGMENT]
    inserts = [c for c in part.change if not c.is_delete]
    deletes = [c for c in part.change if c.is_delete]
    eq_delete_files = {p for f in part.base for p in f.eq_delete_files}
    has_change = bool(part.change)
    any_delete = bool(deletes or eq_delete_files or any(f.pos_delete_files for f in part.base))
    combine_pos = [f for f in segments if len(f.pos_delete_files) >= combine_threshold(config)]
    rewrite_segments = [f for f in segments + undersized if needs_rewrite(f, config)]
    # Fragments of a tier not yet full are settled: counting them would call for runs that
    # find nothing to merge.
    small = len(fragments_to_merge(fragments, config)) + len(inserts) + len(deletes) + len(eq_delete_files)
    minor_interval_due = now_ms - part.last_optimized_ms > _ms(config.minor_interval)
    full_due = config.full_interval is not None and now_ms - last_full_ms > _ms(config.full_interval)

    kind: OptimizingType | None = None
    reason = "healthy"
    if full_due and (
        any_delete
        or has_change
        or len(fragments) > (config.layout.base_buckets if keyed else 1)
        or len(undersized) >= 2
        or rewrite_segments
    ):
        kind, reason = OptimizingType.FULL, "full.trigger.interval reached"
    elif rewrite_segments:
        kind, reason = OptimizingType.MAJOR, f"{len(rewrite_segments)} segment(s) over major.trigger.duplicate-ratio"
    elif undersized_to_merge(undersized, config):
        kind, reason = OptimizingType.MAJOR, f"{len(undersized)} undersized segments hold a target file of content"
    elif keyed:
        threshold = max(config.layout.base_buckets + 1, config.minor_file_count)
        refresh = config.base_refresh_interval
        refresh_due = refresh is not None and now_ms - part.last_optimized_ms > _ms(refresh)
        if small >= threshold:
            kind, reason = OptimizingType.MINOR, f"{small} small files >= {threshold}"
        elif (small > config.layout.base_buckets or has_change) and minor_interval_due:
            kind, reason = OptimizingType.MINOR, "minor.trigger.interval reached with change data"
        elif has_change and refresh_due:
            kind, reason = OptimizingType.MINOR, "base.refresh-interval reached"
        elif combine_pos:
            kind, reason = OptimizingType.MINOR, f"{len(combine_pos)} segment(s) with several position-delete files"
    elif small >= config.minor_file_count:
        kind, reason = OptimizingType.MINOR, f"{small} small files >= {config.minor_file_count}"
    elif small > 1 and minor_interval_due:
        kind, reason = OptimizingType.MINOR, "minor.trigger.interval reached"
    elif combine_pos:
        kind, reason = OptimizingType.MINOR, f"{len(combine_pos)} segment(s) with several position-delete files"

    if kind is None:
        reason = _idle_reason(
            config,
            keyed=keyed,
            small=small,
            has_change=has_change,
            since_optimized_ms=now_ms - part.last_optimized_ms,
            since_full_ms=now_ms - last_full_ms,
            undersized=len(undersized),
        )
    return PartitionEvaluation(
        path=part.path,
        type=kind,
        reason=reason,
        fragments=len(fragments) + len(inserts),
        undersized=len(undersized),
        segments=len(segments),
        change_files=len(part.change),
        delete_files=len(deletes) + len(eq_delete_files) + len({p for f in part.base for p in f.pos_delete_files}),
        pos_delete_records=sum(f.pos_delete_records for f in part.base),
        records=sum(f.records for f in part.base),
    )


def evaluate_table(
    name: str,
    partitions: Sequence[PartitionFiles],
    config: OptimizingConfig,
    *,
    keyed: bool,
    now_ms: int,
    last_full_ms: int,
) -> TableEvaluation:
    """Every partition's evaluation; disabled tables are always idle."""
    if not config.enabled:
        return TableEvaluation(name, ())
    return TableEvaluation(
        name,
        tuple(evaluate_partition(p, config, keyed=keyed, now_ms=now_ms, last_full_ms=last_full_ms) for p in partitions),
    )
