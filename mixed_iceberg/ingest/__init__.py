"""Streaming CDC ingestion: parse CDC messages, commit them exactly once, double-write the LogStore.

:mod:`~mixed_iceberg.ingest.cdc` (parsing, pure), :mod:`~mixed_iceberg.ingest.writer` (one
source partition's exactly-once ingestor), :mod:`~mixed_iceberg.ingest.runtime` (resume plan,
ingestors of a writer subtask), :mod:`~mixed_iceberg.ingest.flink` (the PyFlink pipeline, the
only module importing PyFlink) and :mod:`~mixed_iceberg.ingest.job` (the entry point behind
``jobs/ingest_cdc.py``).
"""

from __future__ import annotations

from mixed_iceberg.ingest.cdc import CdcFormat, CdcParser, DeadLetters, ParsedChanges
from mixed_iceberg.ingest.metrics import IngestMetrics
from mixed_iceberg.ingest.writer import PartitionIngestor, committed_offsets

__all__ = ["CdcFormat", "CdcParser", "DeadLetters", "IngestMetrics", "ParsedChanges", "PartitionIngestor", "committed_offsets"]
