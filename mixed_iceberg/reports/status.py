"""What a table's metadata says about what a reader pays, without reading a data file: the
figures of ``mixed-iceberg status --json`` and of the dashboard's table page.

The merged view's row count is known from metadata only when nothing is left to merge: no
unmerged ChangeStore file and no equality delete. Otherwise ``records`` is None and
``records_at_most`` bounds it (a merged row is a live base row or an unmerged change insert);
which base rows the change deletes hit, only a read can say. The delete ratio counts both kinds
of delete (position deletes and unmerged change deletes) against all rows written.
"""

from __future__ import annotations

import time
from typing import Any

from mixed_iceberg.config.kinds import FileClass
from mixed_iceberg.optimizing.collect import CollectedTable, collect
from mixed_iceberg.optimizing.health import TableFigures, change_commit_times, figures_of, judge
from mixed_iceberg.reports.describe import kind_of
from mixed_iceberg.table import MixedTable

__all__ = ["health_of", "status_of"]


def health_of(mixed: MixedTable, collected: CollectedTable) -> tuple[TableFigures, dict[str, Any]]:
    """The table's figures and its health (score, state, each check against its ``health.target.*``).

    Raises:
        PropertyError: a ``health.*`` property holds a bad value.
    """
    change = mixed.change_store.metadata if mixed.change_store else None
    figures = figures_of(collected, mixed.config.optimizing, change_commit_times(change))
    health = judge(figures, mixed.config.health, now_ms=int(time.time() * 1000))
    checks = [{"key": c.key, "value": c.value, "target": c.target, "state": c.state.value} for c in health.checks]
    return figures, {"score": health.score, "state": health.state.value, "checks": checks}


def status_of(mixed: MixedTable, catalog: str, collected: CollectedTable | None = None) -> dict[str, Any]:
    """The status figures of ``mixed`` (``collected``: its files, when the caller has them already)."""
    config = mixed.config.optimizing
    collected = collected if collected is not None else collect(mixed.handle)
    evaluation = mixed.optimizing.evaluate()
    classes = {c.value: 0 for c in FileClass}
    base = [f for p in collected.partitions for f in p.base]
    change = [c for p in collected.partitions for c in p.change]
    for file in base:
        classes[config.classify(file.size).value] += 1
    base_records = sum(f.records for f in base)
    position_deleted = sum(f.pos_delete_records for f in base)
    change_inserts = sum(c.records for c in change if not c.is_delete)
    change_deletes = sum(c.records for c in change if c.is_delete)
    equality_deletes = {p for f in base for p in f.eq_delete_files}
    written = base_records + change_inserts
    live_base = base_records - position_deleted
    exact = not change and not equality_deletes
    figures, health = health_of(mixed, collected)
    return {
        "table": mixed.name,
        "catalog": catalog,
        "kind": kind_of(mixed),
        "format": mixed.format.value,
        "keyed": mixed.is_keyed,
        "records": live_base if exact else None,
        "records_at_most": live_base + change_inserts,
        "base_files": classes,
        "base_bytes": sum(f.size for f in base),
        "base_delete_files": len(collected.delete_files),
        "equality_delete_files": len(equality_deletes),
        "change_files_unmerged": len(collected.change_files),
        "change_bytes_unmerged": sum(c.size for c in change),
        "base_records": base_records,
        "base_position_deleted_records": position_deleted,
        "change_insert_records_unmerged": change_inserts,
        "change_delete_records_unmerged": change_deletes,
        "delete_ratio": round((position_deleted + change_deletes) / written, 4) if written else 0.0,
        "files_read": figures.files,
        "small_files": figures.small_files,
        "read_bytes": figures.read_bytes,
        "oldest_unmerged_change_ms": figures.oldest_unmerged_change_ms,
        "health": health,
        "optimizing_enabled": config.enabled,
        "optimizer_group": config.group,
        "pending": evaluation.type.value if evaluation.type else None,
        "partitions": [
            {"partition": p.path or "<unpartitioned>", "pending": p.type.value if p.type else None, "reason": p.reason}
            for p in evaluation.partitions
        ],
    }
