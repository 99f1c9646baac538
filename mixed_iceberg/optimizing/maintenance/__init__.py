"""Table maintenance: snapshot expiry, change-data TTL, manifest rewriting, orphan cleaning.

Modules, one concern each:

- the settings, parsed once from table properties: :mod:`mixed_iceberg.config.maintenance`.
- ``expire``: which snapshots of a store may go, and the expiry commit.
- ``change_ttl``: ChangeStore files already merged into base and older than the TTL.
- ``manifests``: the rewrite-manifests snapshot pyiceberg 0.12 lacks.
- ``orphans``: unreferenced files under the stores' folders.
- ``dangling``: delete files that apply to no live data file any more.
- ``reachability`` / ``storage``: what snapshots reference; listing and deleting files.
- ``facade``: :class:`TableMaintenance`, the entry point.
"""

from __future__ import annotations

from mixed_iceberg.config.maintenance import MaintenanceConfig, parse_duration
from mixed_iceberg.optimizing.maintenance.facade import TableMaintenance
from mixed_iceberg.optimizing.maintenance.results import (
    ChangeTtlResult,
    DanglingDeleteResult,
    ExpireResult,
    MaintenanceResult,
    ManifestRewriteResult,
    OrphanResult,
)
from mixed_iceberg.typedef import Clock

__all__ = [
    "ChangeTtlResult",
    "Clock",
    "DanglingDeleteResult",
    "ExpireResult",
    "MaintenanceConfig",
    "MaintenanceResult",
    "ManifestRewriteResult",
    "OrphanResult",
    "TableMaintenance",
    "parse_duration",
]
