"""Where the dashboard's lists come from: the catalogs' pointers, cached summaries and the system database.

The table list and the overview never load every table. They read each served catalog's
metadata pointers (one query per catalog), the summaries the metrics collector keeps per pair
of metadata locations (:mod:`mixed_iceberg.service.prometheus.collector`), and the optimizer's
system database (a fixed number of aggregate queries). A request that finds stale summaries
starts one background scrape (at most one at a time), which summarizes the tables whose
metadata moved within the collector's time budget; the page shows how many are still stale.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from sqlalchemy.exc import SQLAlchemyError

from mixed_iceberg.exceptions import MixedIcebergError
from mixed_iceberg.optimizer.config import OptimizerConfig
from mixed_iceberg.optimizer.report import group_queues, idle_optimizers
from mixed_iceberg.optimizer.sysdb.database import SystemDatabase
from mixed_iceberg.optimizer.sysdb.records import GroupQueue, TableState
from mixed_iceberg.service.prometheus.collector import MetricsCollector
from mixed_iceberg.service.prometheus.families import SummarizedTable

__all__ = ["Known", "Source"]

log = logging.getLogger(__name__)

#: The window of a table's and a group's executor time (as the metrics use).
WINDOW_MS = 60_000


@dataclass(frozen=True, slots=True)
class Known:
    """What the lists show, read without loading a table."""

    tables: tuple[SummarizedTable, ...]
    stale: int
    #: Per table id (``catalog.db.table``), its runtime in its group (absent: no optimizer serves it).
    runtimes: dict[str, TableState]
    groups: dict[str, GroupQueue]
    idle: dict[str, int]
    #: The system database answered (False: none configured, or it failed; ``error`` says which).
    system_database: bool
    error: str | None = None


class Source:
    """The dashboard's reads over ``collector`` (one per ``serve`` process, thread-safe)."""

    def __init__(self, collector: MetricsCollector) -> None:
        self.collector = collector
        self._refreshing = threading.Lock()

    def database(self) -> tuple[OptimizerConfig, SystemDatabase] | None:
        return self.collector.system_database()

    def known(self) -> Known:
        """Every served table with its cached figures and its runtime; starts a background
        refresh when some figures are stale (blocking I/O: call it off the event loop)."""
        tables, stale = self.collector.known()
        if stale:
            self.refresh_in_background()
        opened = self.database()
        if opened is None:
            return Known(tables, stale, {}, {}, {}, False, "no optimizer config beside the catalogs file")
        config, db = opened
        try:
            runtimes = {s.table_id: s for s in db.table_states()}
            groups = group_queues(db, config, window_ms=WINDOW_MS)
            idle = idle_optimizers(db, config)
        except (SQLAlchemyError, MixedIcebergError) as exc:
            log.warning("dashboard: the system database %s did not answer: %s", db, exc)
            return Known(tables, stale, {}, {}, {}, False, f"the system database did not answer: {exc}")
        return Known(tables, stale, runtimes, groups, idle, True)

    def refresh_in_background(self) -> bool:
        """Start one scrape in a daemon thread unless one runs; whether one was started."""
        if not self._refreshing.acquire(blocking=False):
            return False

        def run() -> None:
            try:
                self.collector.scrape()
            except Exception:  # a background thread's boundary: log, the next request retries
                log.exception("dashboard: refreshing the table summaries failed")
            finally:
                self._refreshing.release()

        threading.Thread(target=run, name="dashboard-refresh", daemon=True).start()
        return True
