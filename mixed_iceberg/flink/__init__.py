"""Mixed-Iceberg tables in users' own PyFlink pipelines (docs/flink.md): a changelog sink (and
``INSERT INTO ... SELECT`` through it), a table's merged view as a bounded Flink table, and its
LogStore as an unbounded changelog.

Kept to re-exports so that the sink and the sources each add theirs.
"""

from __future__ import annotations

from mixed_iceberg.flink.changelog import read_changelog
from mixed_iceberg.flink.sink import ChangelogSink, SinkOptions, latest_checkpoint, sink
from mixed_iceberg.flink.source import read_table
from mixed_iceberg.flink.sql import execute_insert

__all__ = ["ChangelogSink", "SinkOptions", "execute_insert", "latest_checkpoint", "read_changelog", "read_table", "sink"]
