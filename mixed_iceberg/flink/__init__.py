"""Mixed-Iceberg tables in users' own PyFlink pipelines: a changelog sink (docs/flink.md).

Kept to re-exports so that the sink and the source each add theirs.
"""

from __future__ import annotations

from mixed_iceberg.flink.sink import ChangelogSink, SinkOptions, latest_checkpoint, sink

__all__ = ["ChangelogSink", "SinkOptions", "latest_checkpoint", "sink"]
