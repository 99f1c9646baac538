"""The per-partition optimized sequence of a BaseStore (Amoro >= 0.6 layout).

``optimized-sequence`` maps a partition path to the largest ChangeStore data sequence number
already merged into the BaseStore; change files at or below it are invisible to readers
(DESIGN.md invariant 3). Amoro keeps it, with ``base-optimized-time``, as JSON blobs in a
Puffin statistics file attached to the base snapshot, flagged in the snapshot summary.
The legacy ``table.partition-properties`` property (``max-txId``) is read as a fallback.
"""

from __future__ import annotations

import json
import struct
import uuid
from collections.abc import Mapping

from pyiceberg.table import Table, Transaction
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.puffin import PuffinFile
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.table.statistics import BlobMetadata, StatisticsFile

from mixed_iceberg.exceptions import CorruptTableError

__all__ = [
    "BASE_OPTIMIZED_TIME",
    "OPTIMIZED_SEQUENCE",
    "read_optimized_sequence",
    "stage_optimized_sequence",
    "summary_flags",
]

OPTIMIZED_SEQUENCE = "optimized-sequence"
BASE_OPTIMIZED_TIME = "base-optimized-time"
_MAGIC = b"PFA1"
_LEGACY_PROPERTY = "table.partition-properties"


def summary_flags() -> dict[str, str]:
    """Summary entries of a base snapshot that carries the statistics file."""
    return {f"{OPTIMIZED_SEQUENCE}.exist": "true", f"{BASE_OPTIMIZED_TIME}.exist": "true"}


def _puffin_bytes(
    blobs: list[tuple[str, bytes]], snapshot_id: int, sequence_number: int
) -> tuple[bytes, int, list[BlobMetadata]]:
    body = bytearray(_MAGIC)
    entries = []
    metadata = []
    for blob_type, payload in blobs:
        entries.append(
            {
                "type": blob_type,
                "fields": [],
                "snapshot-id": snapshot_id,
                "sequence-number": sequence_number,
                "offset": len(body),
                "length": len(payload),
                "properties": {},
            }
        )
        metadata.append(
            BlobMetadata(  # widened to any blob type by mixed_iceberg.compat
                type=blob_type,  # type: ignore[arg-type]
                snapshot_id=snapshot_id,
                sequence_number=sequence_number,
                fields=[],
                properties={},
            )
        )
        body += payload
    footer_payload = json.dumps({"blobs": entries, "properties": {"created-by": "mixed-iceberg"}}).encode()
    footer = _MAGIC + footer_payload + struct.pack("<i", len(footer_payload)) + b"\x00\x00\x00\x00" + _MAGIC
    return bytes(body + footer), len(footer), metadata


def stage_optimized_sequence(
    txn: Transaction,
    snapshot_id: int,
    sequences: Mapping[str, int],
    optimized_times: Mapping[str, int],
) -> None:
    """Write the Puffin file for ``snapshot_id`` and stage it as the snapshot's statistics."""
    metadata = txn.table_metadata
    sequence_number = metadata.next_sequence_number()
    payloads = [
        (OPTIMIZED_SEQUENCE, json.dumps(dict(sequences), sort_keys=True).encode()),
        (BASE_OPTIMIZED_TIME, json.dumps(dict(optimized_times), sort_keys=True).encode()),
    ]
    data, footer_size, blobs = _puffin_bytes(payloads, snapshot_id, sequence_number)
    path = f"{metadata.location.rstrip('/')}/data/puffin/{snapshot_id}-{uuid.uuid4()}.puffin"
    with txn._table.io.new_output(path).create(overwrite=True) as stream:
        stream.write(data)
    statistics = StatisticsFile(
        snapshot_id=snapshot_id,
        statistics_path=path,
        file_size_in_bytes=len(data),
        file_footer_size_in_bytes=footer_size,
        blob_metadata=blobs,
    )
    with txn.update_statistics() as update:
        update.set_statistics(statistics)


def _flagged_snapshot(metadata: TableMetadata, snapshot: Snapshot | None) -> Snapshot | None:
    while snapshot is not None:
        if snapshot.summary is not None and snapshot.summary.get(f"{OPTIMIZED_SEQUENCE}.exist") == "true":
            return snapshot
        parent = snapshot.parent_snapshot_id
        snapshot = metadata.snapshot_by_id(parent) if parent is not None else None
    return None


def read_optimized_sequence(base: Table, snapshot: Snapshot | None, blob_type: str = OPTIMIZED_SEQUENCE) -> dict[str, int]:
    """Partition path -> optimized sequence as of ``snapshot`` (empty when never optimized).

    Raises:
        CorruptTableError: a snapshot is flagged but its statistics file is missing or unreadable.
    """
    metadata = base.metadata
    flagged = _flagged_snapshot(metadata, snapshot)
    if flagged is None:
        return _legacy(metadata.properties, blob_type)
    stats = [s for s in metadata.statistics if s.snapshot_id == flagged.snapshot_id]
    if not stats:
        raise CorruptTableError(
            f"{'.'.join(base.name())}: snapshot {flagged.snapshot_id} is flagged {blob_type}.exist but has no statistics file"
        )
    with base.io.new_input(stats[0].statistics_path).open() as stream:
        puffin = PuffinFile(stream.read())
    for blob in puffin.footer.blobs:
        if blob.type == blob_type:
            payload = json.loads(puffin.get_blob_payload(blob))
            return {str(k): int(v) for k, v in payload.items()}
    return {}


def _legacy(properties: Mapping[str, str], blob_type: str) -> dict[str, int]:
    raw = properties.get(_LEGACY_PROPERTY)
    if not raw:
        return {}
    key = "max-txId" if blob_type == OPTIMIZED_SEQUENCE else "base-op-time"
    return {path: int(values[key]) for path, values in json.loads(raw).items() if key in values}
