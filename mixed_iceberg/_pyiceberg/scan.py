"""The evaluators of a pyiceberg 0.12 scan plan, for planning over manifest entries we cache.

``ManifestGroupPlanner`` builds the per-spec manifest and partition evaluators and the metrics
evaluator in private methods (``_build_manifest_evaluator``, ``_build_partition_evaluator``,
``_build_metrics_evaluator``); :mod:`mixed_iceberg.store.manifests.live_files` applies them to manifest
entries it keeps between scans, which pyiceberg's own planning re-reads every time.
"""

from __future__ import annotations

from collections.abc import Callable

from pyiceberg.expressions import BooleanExpression
from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFile, ManifestFile
from pyiceberg.table import ManifestGroupPlanner
from pyiceberg.table.metadata import TableMetadata

__all__ = ["ScanEvaluators"]


class ScanEvaluators:
    """Which manifests and files a filter keeps: per partition spec (built once each), and by metrics.

    ``partition_filter`` (default: ``row_filter``) prunes manifests and partitions; ``row_filter``
    prunes files by their column metrics.
    """

    def __init__(
        self,
        metadata: TableMetadata,
        io: FileIO,
        row_filter: BooleanExpression,
        partition_filter: BooleanExpression | None = None,
        case_sensitive: bool = True,
    ) -> None:
        scoping = row_filter if partition_filter is None else partition_filter
        self._planner = ManifestGroupPlanner(metadata, io, scoping, case_sensitive)
        metrics_planner = (
            self._planner if partition_filter is None else ManifestGroupPlanner(metadata, io, row_filter, case_sensitive)
        )
        self.metrics: Callable[[DataFile], bool] = metrics_planner._build_metrics_evaluator()
        self._manifest: dict[int, Callable[[ManifestFile], bool]] = {}
        self._partition: dict[int, Callable[[DataFile], bool]] = {}

    def manifest(self, spec_id: int) -> Callable[[ManifestFile], bool]:
        """Whether a manifest of spec ``spec_id`` may hold matching files."""
        if spec_id not in self._manifest:
            self._manifest[spec_id] = self._planner._build_manifest_evaluator(spec_id)
        return self._manifest[spec_id]

    def partition(self, spec_id: int) -> Callable[[DataFile], bool]:
        """Whether a file of spec ``spec_id`` is in a matching partition."""
        if spec_id not in self._partition:
            self._partition[spec_id] = self._planner._build_partition_evaluator(spec_id)
        return self._partition[spec_id]
