"""What every route reads: the served catalogs, a committer and a metrics store per catalog."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from mixed_iceberg.caching import LruCache
from mixed_iceberg.service.catalogs import ServedCatalog, ServedCatalogs
from mixed_iceberg.service.commits import Committer
from mixed_iceberg.service.metrics import MetricsReports
from mixed_iceberg.service.settings import ServiceConfig

__all__ = ["ServiceState"]


@dataclass(slots=True)
class ServiceState:
    """The process-wide state of ``serve`` (no table state: the catalogs hold it)."""

    config: ServiceConfig
    catalogs: ServedCatalogs
    #: The JSON body of a full load, by catalog and metadata file (files are immutable, so is the body).
    load_bodies: LruCache[tuple[str, str], bytes] = field(default_factory=lambda: LruCache(64 * 1024 * 1024, sizeof=len))
    _committers: dict[str, Committer] = field(default_factory=dict)
    _metrics: dict[str, MetricsReports] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def committer(self, served: ServedCatalog) -> Committer:
        """The committer of ``served`` (opens the catalog)."""
        with self._lock:
            found = self._committers.get(served.name)
        if found is None:
            found = Committer(served.sql(), served.warehouse)
            with self._lock:
                found = self._committers.setdefault(served.name, found)
        return found

    def metrics(self, served: ServedCatalog) -> MetricsReports:
        """The metrics-report store of ``served`` (a table in its catalog database)."""
        with self._lock:
            found = self._metrics.get(served.name)
        if found is None:
            found = MetricsReports(served.sql().engine, served.name)
            with self._lock:
                found = self._metrics.setdefault(served.name, found)
        return found
