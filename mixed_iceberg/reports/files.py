"""A table's live files by partition, each with its class, and the snapshots of both stores.

File classes (as the dashboard shows them): a base data file is a ``fragment``, an
``undersized-segment`` or a ``segment`` by its size (``self-optimizing.fragment-ratio`` and
``min-target-size-ratio``, :meth:`~mixed_iceberg.config.table.OptimizingConfig.classify`); an
unmerged ChangeStore file is a ``change-insert`` or a ``change-delete``; a base delete file is a
``position-delete`` or an ``equality-delete``. Metadata only: no data file is opened.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pyiceberg.manifest import DataFileContent
from pyiceberg.table import Table

from mixed_iceberg.optimizing.collect import OPTIMIZING_TYPE, CollectedTable
from mixed_iceberg.optimizing.model import PartitionFiles
from mixed_iceberg.table import MixedTable

__all__ = ["FILE_CLASSES", "SIZE_BUCKETS", "files_report", "snapshots_report"]

#: Every class a live file can have, in the order pages list them.
FILE_CLASSES = (
    "fragment",
    "undersized-segment",
    "segment",
    "change-insert",
    "change-delete",
    "position-delete",
    "equality-delete",
)
#: Upper bounds (bytes) of the file-size distribution's buckets; the last bucket is open.
SIZE_BUCKETS = (1 << 20, 4 << 20, 16 << 20, 64 << 20, 128 << 20, 256 << 20, 512 << 20)


def _bucket(size: int) -> int:
    return next((i for i, bound in enumerate(SIZE_BUCKETS) if size <= bound), len(SIZE_BUCKETS))


def _deletes_of(p: PartitionFiles) -> tuple[str, ...]:
    """The delete files of a partition: those its base files reference, and those it lists."""
    found = dict.fromkeys(path for f in p.base for path in (*f.pos_delete_files, *f.eq_delete_files))
    found.update(dict.fromkeys(p.delete_files))
    return tuple(found)


def files_report(mixed: MixedTable, collected: CollectedTable, *, max_files: int = 2000) -> dict[str, Any]:
    """Per partition: counts and bytes by class, and its files (at most ``max_files`` in all,
    ``truncated`` says when more exist); the size distribution of every live data file."""
    config = mixed.config.optimizing
    partitions: list[dict[str, Any]] = []
    listed = 0
    distribution = [0] * (len(SIZE_BUCKETS) + 1)
    placed: set[str] = set()
    groups = [(p.path or "<unpartitioned>", p.base, p.change, _deletes_of(p)) for p in collected.partitions]
    for _, _, _, deletes in groups:
        placed.update(deletes)
    unplaced = tuple(path for path in collected.delete_files if path not in placed)
    if unplaced:  # referenced by no live data file (maintenance drops them): listed apart
        groups.append(("<unreferenced deletes>", (), (), unplaced))
    for name, base, change, deletes in groups:
        files: list[dict[str, Any]] = []
        for f in base:
            live = collected.data_files.get(f.path)
            files.append(
                {
                    "path": f.path,
                    "class": config.classify(f.size).value,
                    "size": f.size,
                    "records": f.records,
                    "sequence": live.sequence_number if live else None,
                    "snapshot_id": live.snapshot_id if live else None,
                }
            )
        for c in change:
            live = collected.change_files.get(c.path)
            files.append(
                {
                    "path": c.path,
                    "class": "change-delete" if c.is_delete else "change-insert",
                    "size": c.size,
                    "records": c.records,
                    "sequence": c.sequence_number,
                    "snapshot_id": live.snapshot_id if live else None,
                }
            )
        for path in deletes:
            found = collected.delete_files.get(path)
            if found is None:
                continue
            content = found.data_file.content
            files.append(
                {
                    "path": path,
                    "class": "equality-delete" if content == DataFileContent.EQUALITY_DELETES else "position-delete",
                    "size": found.data_file.file_size_in_bytes,
                    "records": found.data_file.record_count,
                    "sequence": found.sequence_number,
                    "snapshot_id": found.snapshot_id,
                }
            )
        for entry in files:
            if entry["class"] in ("fragment", "undersized-segment", "segment", "change-insert"):
                distribution[_bucket(entry["size"])] += 1
        classes = Counter(f["class"] for f in files)
        kept = files[: max(0, max_files - listed)]
        listed += len(kept)
        partitions.append(
            {
                "partition": name,
                "classes": {k: classes.get(k, 0) for k in FILE_CLASSES},
                "files": len(files),
                "bytes": sum(f["size"] for f in files),
                "records": sum(f["records"] for f in files if not f["class"].endswith("delete")),
                "listed": kept,
            }
        )
    return {
        "partitions": partitions,
        "truncated": listed < sum(p["files"] for p in partitions),
        "size_buckets": list(SIZE_BUCKETS),
        "size_distribution": distribution,
    }


def _int(summary: dict[str, str], key: str) -> int | None:
    value = summary.get(key)
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


def _store_snapshots(store: Table, name: str) -> list[dict[str, Any]]:
    found = []
    for s in store.metadata.snapshots:
        summary = dict(s.summary.additional_properties) if s.summary is not None else {}
        found.append(
            {
                "store": name,
                "snapshot_id": s.snapshot_id,
                "parent_id": s.parent_snapshot_id,
                "sequence_number": s.sequence_number,
                "timestamp_ms": s.timestamp_ms,
                "operation": s.summary.operation.value if s.summary is not None else None,
                "optimizing": summary.get(OPTIMIZING_TYPE),
                "data_files": _int(summary, "total-data-files"),
                "delete_files": _int(summary, "total-delete-files"),
                "records": _int(summary, "total-records"),
                "bytes": _int(summary, "total-files-size"),
                "added_files": _int(summary, "added-data-files"),
            }
        )
    return found


def snapshots_report(mixed: MixedTable) -> list[dict[str, Any]]:
    """Every retained snapshot of both stores, oldest first, with the totals its summary records
    (files, records, bytes: the trend charts)."""
    found = _store_snapshots(mixed.base_store, "base")
    if mixed.change_store is not None:
        found += _store_snapshots(mixed.change_store, "change")
    return sorted(found, key=lambda s: (s["timestamp_ms"], s["store"]))
