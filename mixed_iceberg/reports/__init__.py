"""What operators read about one table, as plain JSON-ready dicts: the figures ``mixed-iceberg
describe`` and ``status`` print and the dashboard shows (``mixed-iceberg serve``), computed once here
for both.

* :mod:`.describe`: the definition (schema, primary key, partition spec, merge engine, stores, properties);
* :mod:`.status`: what a merged read pays, the health against its targets, what optimizing is due;
* :mod:`.files`: live files by partition with their class, and both stores' snapshots.

A report takes a loaded :class:`~mixed_iceberg.table.MixedTable` (the caller opens its catalog
its own way: the CLI by name, ``serve`` from its served catalogs) and reads metadata only.
"""

from __future__ import annotations

from mixed_iceberg.reports.describe import KIND_TEXT, describe_report, kind_of
from mixed_iceberg.reports.files import files_report, snapshots_report
from mixed_iceberg.reports.status import health_of, status_of

__all__ = ["KIND_TEXT", "describe_report", "files_report", "health_of", "kind_of", "snapshots_report", "status_of"]
