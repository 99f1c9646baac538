"""The per-partition optimized sequence of a BaseStore (Amoro >= 0.6 layout), kept twice.

``optimized-sequence`` maps a partition path to the largest ChangeStore data sequence number
already merged into the BaseStore; change files at or below it are invisible to readers
(DESIGN.md invariant 3). Amoro keeps it, with ``base-optimized-time``, as JSON blobs in a
Puffin statistics file attached to the base snapshot, flagged in the snapshot summary
(``optimized-sequence.exist``); readers walk the parent chain to the newest flagged snapshot.
The legacy ``table.partition-properties`` property (``max-txId``) is read as a fallback.

Iceberg allows one statistics file per snapshot, and other engines own that slot too: Spark's
``CALL system.compute_table_stats`` *replaces* the snapshot's statistics file with its own
(theta sketches), dropping our blobs while the flag stays. Read naively, the table then looks
never optimized: merged change rows come back (old versions) and the next minor writes them
into the BaseStore again (duplicates). So each snapshot we flag also carries a copy of both
maps in its summary (``mixed-iceberg.optimized-sequence``, ``mixed-iceberg.base-optimized-time``:
compact JSON). A snapshot summary is immutable, and no engine rewrites an existing snapshot's
summary; the copy is staged in the same commit as the Puffin file, so it holds exactly what the
Puffin file held. Amoro's readers still find their Puffin file and flags, unchanged.

On read, the newest flagged snapshot decides (the same walk as Amoro's), and:

* Puffin blob and summary copy agree: that map.
* The summary copy is there but the Puffin blob is not (statistics file replaced, removed or
  unreadable): the summary copy, with a warning. Safe: it is the same commit's record, and
  the next optimizing commit writes both records again on its new snapshot (the repair; the
  replaced statistics of the old snapshot, which now belong to the other engine, are left).
  :func:`repair_optimized_sequence` does that at once, for Amoro's readers, which know only
  the Puffin file.
* Both are there and disagree: :class:`OptimizedSequenceMismatchError`, since nothing says
  which one is right.
* No summary copy (a snapshot Amoro, or an older mixed-iceberg, flagged) and no Puffin blob:
  :class:`OptimizedSequenceMismatchError`; never "never optimized".

The cost of the copy: its size grows with the partitions ever optimized (about 30 bytes per
partition, per flagged snapshot, in the table's metadata JSON); snapshot expiry bounds the
number of flagged snapshots kept.
"""

from __future__ import annotations

import json
import logging
import struct
import uuid
from collections.abc import Mapping

from pyiceberg.table import Table, Transaction
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.puffin import PuffinFile
from pyiceberg.table.snapshots import Operation, Snapshot
from pyiceberg.table.statistics import BlobMetadata, StatisticsFile

from mixed_iceberg._pyiceberg.row_delta import add_snapshot_properties
from mixed_iceberg._pyiceberg.transaction import transaction_table
from mixed_iceberg.exceptions import CommitConflictError, CorruptTableError, OptimizedSequenceMismatchError
from mixed_iceberg.store.ancestry import ancestors
from mixed_iceberg.store.commit import CommitOutcome, commit_files

__all__ = [
    "BASE_OPTIMIZED_TIME",
    "OPTIMIZED_SEQUENCE",
    "OPTIMIZED_SINCE",
    "REPAIRED_FROM",
    "SUMMARY_COPY",
    "merged_through",
    "read_optimized_sequence",
    "repair_optimized_sequence",
    "stage_optimized_sequence",
    "summary_flags",
]

OPTIMIZED_SEQUENCE = "optimized-sequence"
BASE_OPTIMIZED_TIME = "base-optimized-time"
#: Blob type -> the snapshot-summary key of its copy.
SUMMARY_COPY = {
    OPTIMIZED_SEQUENCE: "mixed-iceberg.optimized-sequence",
    BASE_OPTIMIZED_TIME: "mixed-iceberg.base-optimized-time",
}
#: BaseStore property: the sequence number of the first snapshot that recorded an optimized
#: sequence. A snapshot at or after it whose ancestry holds no flagged snapshot lost it to
#: another engine's snapshot expiry (the record itself cannot outlive its snapshot).
OPTIMIZED_SINCE = "mixed-iceberg.optimized-since-sequence"
#: Summary key of a repair snapshot: the id of the snapshot whose summary copy it restored.
REPAIRED_FROM = "mixed-iceberg.optimized-sequence.repaired-from"
_MAGIC = b"PFA1"
_LEGACY_PROPERTY = "table.partition-properties"

log = logging.getLogger(__name__)


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
            BlobMetadata(  # widened to any blob type by mixed_iceberg._pyiceberg.patches
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


def _compact_json(values: Mapping[str, int]) -> str:
    return json.dumps({str(k): int(v) for k, v in values.items()}, sort_keys=True, separators=(",", ":"))


def stage_optimized_sequence(
    txn: Transaction,
    snapshot_id: int,
    sequences: Mapping[str, int],
    optimized_times: Mapping[str, int],
) -> None:
    """Record both maps for ``snapshot_id``, already staged on ``txn``: a Puffin file staged as
    the snapshot's statistics, and the same maps copied into the snapshot's summary.

    Give the snapshot :func:`summary_flags` too (Amoro's readers look for them).

    Raises:
        ValueError: ``txn`` stages no snapshot ``snapshot_id``.
    """
    metadata = txn.table_metadata
    staged = metadata.snapshot_by_id(snapshot_id)
    if staged is None:
        raise ValueError(f"expected snapshot {snapshot_id} staged on the transaction, found none")
    # The snapshot's own sequence number (Amoro's writer uses it too).
    sequence_number = staged.sequence_number or 0
    payloads = [
        (OPTIMIZED_SEQUENCE, json.dumps(dict(sequences), sort_keys=True).encode()),
        (BASE_OPTIMIZED_TIME, json.dumps(dict(optimized_times), sort_keys=True).encode()),
    ]
    data, footer_size, blobs = _puffin_bytes(payloads, snapshot_id, sequence_number)
    path = f"{metadata.location.rstrip('/')}/data/puffin/{snapshot_id}-{uuid.uuid4()}.puffin"
    with transaction_table(txn).io.new_output(path).create(overwrite=True) as stream:
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
    if OPTIMIZED_SINCE not in metadata.properties:
        txn.set_properties({OPTIMIZED_SINCE: str(sequence_number)})
    add_snapshot_properties(
        txn,
        snapshot_id,
        {
            SUMMARY_COPY[OPTIMIZED_SEQUENCE]: _compact_json(sequences),
            SUMMARY_COPY[BASE_OPTIMIZED_TIME]: _compact_json(optimized_times),
        },
    )


def _flagged_snapshot(metadata: TableMetadata, snapshot: Snapshot | None) -> Snapshot | None:
    if snapshot is None:
        return None
    for ancestor in ancestors(metadata, snapshot):
        if ancestor.summary is not None and ancestor.summary.get(f"{OPTIMIZED_SEQUENCE}.exist") == "true":
            return ancestor
    return None


def merged_through(change: Table, optimized: Mapping[str, int]) -> int:
    """The sequence at or below which no ChangeStore file is visible in any partition, or -1.

    Only an unpartitioned ChangeStore has one: a partition the optimizer has not yet recorded
    may hold older, unmerged files. Manifests written at or below it need not be read.
    """
    if any(spec.fields for spec in change.metadata.partition_specs):
        return -1
    return optimized.get("", -1)


def read_optimized_sequence(base: Table, snapshot: Snapshot | None, blob_type: str = OPTIMIZED_SEQUENCE) -> dict[str, int]:
    """Partition path -> optimized sequence as of ``snapshot`` (empty when never optimized).

    ``blob_type`` :data:`BASE_OPTIMIZED_TIME` gives the commit times instead. The Puffin blob is
    checked against the snapshot summary's copy; see the module docstring for the rules.

    Raises:
        OptimizedSequenceMismatchError: the flagged snapshot's Puffin blob is missing and it has
            no summary copy, or the two disagree.
        CorruptTableError: a summary copy does not parse.
    """
    if blob_type not in SUMMARY_COPY:
        raise ValueError(f"expected a blob type in {sorted(SUMMARY_COPY)}, found {blob_type!r}")
    metadata = base.metadata
    flagged = _flagged_snapshot(metadata, snapshot)
    name = ".".join(base.name())
    if flagged is None:
        since = metadata.properties.get(OPTIMIZED_SINCE)
        if since is not None and snapshot is not None and (snapshot.sequence_number or 0) >= int(since):
            raise OptimizedSequenceMismatchError(
                f"{name}: snapshot {snapshot.snapshot_id} (sequence {snapshot.sequence_number}): expected a snapshot "
                f"flagged {OPTIMIZED_SEQUENCE}.exist in its ancestry (the table was optimized since sequence {since}), "
                "found none; another engine probably expired it (e.g. Spark's expire_snapshots)"
            )
        return _legacy(metadata.properties, blob_type)
    raw_copy = flagged.summary.get(SUMMARY_COPY[blob_type]) if flagged.summary is not None else None
    copy = _parse_copy(raw_copy, name, flagged.snapshot_id, blob_type) if raw_copy is not None else None
    blob, why_missing = _puffin_blob(base, metadata, flagged.snapshot_id, blob_type)
    if blob is None:
        if copy is None:
            raise OptimizedSequenceMismatchError(
                f"{name}: snapshot {flagged.snapshot_id} is flagged {blob_type}.exist; expected its {blob_type} "
                f"Puffin blob or a summary copy, found neither ({why_missing}); the statistics file was "
                "probably replaced by another engine (e.g. Spark's compute_table_stats)"
            )
        log.warning(
            "%s: snapshot %s: %s; using the copy in its summary (the next optimizing commit writes both again)",
            name,
            flagged.snapshot_id,
            why_missing,
        )
        return copy
    if copy is not None and copy != blob:
        raise OptimizedSequenceMismatchError(
            f"{name}: snapshot {flagged.snapshot_id}: expected its {blob_type} Puffin blob to equal the summary "
            f"copy {copy}, found {blob}"
        )
    return blob


def _parse_copy(raw: str, name: str, snapshot_id: int, blob_type: str) -> dict[str, int]:
    try:
        values = json.loads(raw)
        return {str(k): int(v) for k, v in values.items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise CorruptTableError(
            f"{name}: snapshot {snapshot_id}: expected a JSON object of integers in {SUMMARY_COPY[blob_type]}, found {raw!r}"
        ) from exc


def _puffin_blob(base: Table, metadata: TableMetadata, snapshot_id: int, blob_type: str) -> tuple[dict[str, int] | None, str]:
    """The blob's map from the snapshot's statistics file, or None and why it is missing."""
    stats = [s for s in metadata.statistics if s.snapshot_id == snapshot_id]
    if not stats:
        return None, "it has no statistics file"
    path = stats[0].statistics_path
    try:  # the file's footer decides, not the blob list in the table metadata
        with base.io.new_input(path).open() as stream:
            puffin = PuffinFile(stream.read())
        for blob in puffin.footer.blobs:
            if blob.type == blob_type:
                payload = json.loads(puffin.get_blob_payload(blob))
                return {str(k): int(v) for k, v in payload.items()}, ""
    except (OSError, ValueError, TypeError, AttributeError) as exc:  # missing or malformed file
        return None, f"its statistics file {path} is unreadable ({type(exc).__name__}: {exc})"
    return None, f"its statistics file {path} has no {blob_type} blob"


def repair_optimized_sequence(base: Table, *, table_name: str = "") -> CommitOutcome | None:
    """Put the optimized sequence back into a Puffin file after another engine dropped it.

    When the newest flagged snapshot's Puffin blobs are gone but its summary copy is not, this
    commits one empty ``replace`` snapshot that carries both maps again (Puffin file, flags,
    summary copy, and :data:`REPAIRED_FROM`), so Amoro's readers, which read only the Puffin
    file, see the table as optimized again. The other engine's statistics file stays where it
    is. Idempotent: a table whose newest flagged snapshot has its blobs is left alone.

    Returns:
        The repair commit, or None when there was nothing to repair.

    Raises:
        OptimizedSequenceMismatchError: as :func:`read_optimized_sequence` (no copy to repair from,
            or the records disagree).
        CommitConflictError: the optimized sequence moved while repairing.
    """
    base.refresh()
    name = table_name or ".".join(base.name())
    snapshot = base.current_snapshot()
    sequences = read_optimized_sequence(base, snapshot)
    times = read_optimized_sequence(base, snapshot, BASE_OPTIMIZED_TIME)
    flagged = _flagged_snapshot(base.metadata, snapshot)
    if flagged is None:
        return None
    if all(_puffin_blob(base, base.metadata, flagged.snapshot_id, t)[0] is not None for t in SUMMARY_COPY):
        return None

    def validate(current: Table) -> None:
        now = _flagged_snapshot(current.metadata, current.current_snapshot())
        if now is None or now.snapshot_id != flagged.snapshot_id:
            found = None if now is None else now.snapshot_id
            raise CommitConflictError(
                f"{name}: optimized sequence moved while repairing; expected snapshot {flagged.snapshot_id} "
                f"to carry it, found {found}"
            )

    def stage(txn: Transaction, snapshot_id: int) -> None:
        stage_optimized_sequence(txn, snapshot_id, sequences, times)

    outcome = commit_files(
        base,
        added=[],
        summary={**summary_flags(), REPAIRED_FROM: str(flagged.snapshot_id)},
        stage=stage,
        validate=validate,
        table_name=name,
        operation=Operation.REPLACE,
    )
    log.info("%s: optimized sequence of snapshot %s written again as snapshot %s", name, flagged.snapshot_id, outcome.snapshot_id)
    return outcome


def _legacy(properties: Mapping[str, str], blob_type: str) -> dict[str, int]:
    raw = properties.get(_LEGACY_PROPERTY)
    if not raw:
        return {}
    key = "max-txId" if blob_type == OPTIMIZED_SEQUENCE else "base-op-time"
    return {path: int(values[key]) for path, values in json.loads(raw).items() if key in values}
