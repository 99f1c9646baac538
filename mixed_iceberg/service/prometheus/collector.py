"""Gathers one scrape: catalog pointers, cached table summaries, the optimizer's system database.

Built for thousands of tables: each scrape reads every served catalog's metadata pointers in
one query (:meth:`~mixed_iceberg.catalog.mixed_catalog.MixedCatalog.metadata_locations`) and
summarizes again (:func:`~mixed_iceberg.service.prometheus.summary.summarize`, which reads
manifests) only the tables whose pointers moved, for at most ``budget_seconds``: the tables
never summarized first, then the longest out of date; the rest keep their previous summary
(or none yet) and are counted in ``mixed_iceberg_metrics_summaries_stale`` until a later scrape
reaches them. The optimizer's figures are a fixed number of aggregate queries
(:mod:`mixed_iceberg.optimizer.sysdb.history`), whatever the number of tables.

The system database is the one of the optimizer config: ``$MIXED_ICEBERG_OPTIMIZER_CONFIG``,
else ``optimizer.yaml`` beside the served catalogs file; without one, only the tables' figures
are exported. It is read, never migrated.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from mixed_iceberg.exceptions import MixedIcebergError
from mixed_iceberg.optimizer.config import OptimizerConfig, load_optimizer_config
from mixed_iceberg.optimizer.report import group_queues, idle_optimizers
from mixed_iceberg.optimizer.sysdb.database import SystemDatabase, now_ms
from mixed_iceberg.service.catalogs import ServedCatalogs
from mixed_iceberg.service.prometheus.end_offsets import EndOffsets
from mixed_iceberg.service.prometheus.families import Scrape, SummarizedTable
from mixed_iceberg.service.prometheus.summary import TableSummary, summarize

__all__ = ["BUDGET_SECONDS", "MetricsCollector"]

log = logging.getLogger(__name__)

#: The longest one scrape spends summarizing tables whose metadata moved (Prometheus's default
#: scrape timeout is 10 s).
BUDGET_SECONDS = 5.0
#: The window of the groups' executor occupation.
_WINDOW_MS = 60_000

_Locations = tuple[str, str | None]  # base store, ChangeStore metadata file


@dataclass(frozen=True, slots=True)
class _Cached:
    locations: _Locations
    summary: TableSummary
    at: float  # monotonic time it was made


def _tables(locations: dict[str, str], separator: str) -> dict[str, _Locations]:
    """The catalog's tables with their stores' metadata files, ChangeStores folded in (as ``list_tables``)."""
    suffix = f"{separator}change{separator}"
    return {
        name: (location, locations.get(name + suffix))
        for name, location in locations.items()
        if not (name.endswith(suffix) and name.removesuffix(suffix) in locations)
    }


class MetricsCollector:
    """What ``GET /metrics`` reports for ``catalogs``; one per ``serve`` process, thread-safe."""

    def __init__(
        self,
        catalogs: ServedCatalogs,
        optimizer_config: Path | None = None,
        budget_seconds: float = BUDGET_SECONDS,
        kafka_bootstrap: str | None = None,
    ) -> None:
        self.catalogs = catalogs
        self.end_offsets = EndOffsets(kafka_bootstrap)  # the ingest lag: the source topics' end offsets
        env = os.environ.get("MIXED_ICEBERG_OPTIMIZER_CONFIG")
        self.optimizer_config = optimizer_config or (Path(env) if env else catalogs.path.parent / "optimizer.yaml")
        self.budget_seconds = budget_seconds
        self._cache: dict[tuple[str, str], _Cached] = {}
        self._db: tuple[OptimizerConfig, SystemDatabase] | None = None
        self._lock = threading.Lock()

    def scrape(self) -> Scrape:
        """Read everything one exposition needs (blocking I/O: call it off the event loop)."""
        with self._lock:
            tables, stale = self._summaries(time.monotonic() + self.budget_seconds)
            topics = {p.topic for t in tables if t.summary is not None for p in t.summary.ingest}
            ends = self.end_offsets.of(topics) if topics else None
            now = now_ms()
            opened = self._system_database()
            if opened is None:
                return Scrape(now_ms=now, tables=tables, stale=stale, end_offsets=ends)
            config, db = opened
            try:
                runtimes = tuple(db.table_stats(window_ms=_WINDOW_MS))
                totals = db.process_totals()
                groups = group_queues(db, config, window_ms=_WINDOW_MS)
                idle = idle_optimizers(db, config)
            except (SQLAlchemyError, MixedIcebergError) as exc:
                log.warning("metrics: the system database %s did not answer: %s", db, exc)
                return Scrape(now_ms=now, tables=tables, stale=stale, end_offsets=ends)
            return Scrape(
                now_ms=now,
                tables=tables,
                stale=stale,
                runtimes=runtimes,
                process_totals=totals,
                groups=groups,
                idle_optimizers=idle,
                end_offsets=ends,
            )

    def known(self) -> tuple[tuple[SummarizedTable, ...], int]:
        """Every served table with the summary earlier scrapes left (None: not summarized yet) and
        how many are stale, summarizing none: one pointer query per catalog (the dashboard's list)."""
        with self._lock:
            return self._summaries(time.monotonic())

    def system_database(self) -> tuple[OptimizerConfig, SystemDatabase] | None:
        """The optimizer config and its system database (None: no optimizer config, or it does not parse)."""
        with self._lock:
            return self._system_database()

    def _system_database(self) -> tuple[OptimizerConfig, SystemDatabase] | None:
        if self._db is None and self.optimizer_config.is_file():
            try:
                config = load_optimizer_config(self.optimizer_config)
                self._db = (config, SystemDatabase(config.system_database))
            except MixedIcebergError as exc:
                log.warning("metrics: no optimizer figures: %s", exc)
        return self._db

    def _summaries(self, deadline: float) -> tuple[tuple[SummarizedTable, ...], int]:
        current: dict[tuple[str, str], _Locations] = {}
        for served in self.catalogs.catalogs.values():
            try:
                catalog = served.mixed()
                locations = catalog.metadata_locations()
            except (MixedIcebergError, SQLAlchemyError, OSError) as exc:
                log.warning("metrics: catalog %s not read: %s", served.name, exc)
                continue
            for name, pair in _tables(locations or {}, catalog.separator).items():
                current[served.name, name] = pair
        for key in [k for k in self._cache if k not in current]:  # dropped tables
            del self._cache[key]
        due = sorted(
            (key for key, pair in current.items() if key not in self._cache or self._cache[key].locations != pair),
            key=lambda key: self._cache[key].at if key in self._cache else float("-inf"),
        )
        for key in due:
            if time.monotonic() >= deadline:
                break
            self._summarize(key)
        stale = sum(1 for key, pair in current.items() if key not in self._cache or self._cache[key].locations != pair)
        tables = tuple(
            SummarizedTable(catalog, name, found.summary if (found := self._cache.get((catalog, name))) else None)
            for catalog, name in sorted(current)
        )
        return tables, stale

    def _summarize(self, key: tuple[str, str]) -> None:
        catalog, name = key
        try:
            table = self.catalogs.get(catalog).mixed().load_table(name)
            summary = summarize(table.handle)
        except (MixedIcebergError, OSError) as exc:
            log.warning("metrics: table %s.%s not summarized: %s", catalog, name, exc)
            return
        change = table.change_store.metadata_location if table.change_store is not None else None
        self._cache[key] = _Cached((table.base_store.metadata_location, change), summary, time.monotonic())
