"""Mixed-Iceberg tables in users' own PyFlink pipelines (docs/flink.md): a changelog sink, and a
table's merged view as a bounded Flink table.

Kept to re-exports so that the sink and the source each add theirs.
"""

from __future__ import annotations

from mixed_iceberg.flink.sink import ChangelogSink, SinkOptions, latest_checkpoint, sink
from mixed_iceberg.flink.source import read_table

__all__ = ["ChangelogSink", "SinkOptions", "latest_checkpoint", "read_table", "sink"]
