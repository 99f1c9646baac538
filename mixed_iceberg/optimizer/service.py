"""``OptimizerService``: one optimizer of one group. It keeps the group's tables healthy, with nobody scheduling anything.

Several optimizers may serve one group: the threads of a local container, the subtasks of a
Flink job, or more jobs. They share the group's work through the system database and never
talk to each other. This module wires one optimizer's jobs together and runs their threads:

* **Heartbeat** (here). It renews this optimizer's heartbeat and its leases. If the optimizer
  was declared dead meanwhile, it registers again under a new id.
* **Discovery** (:mod:`.discovery`): the tables of the configured catalogs that the group
  serves, reading only what changed (one query per SQL catalog).
* **Coordination** (:mod:`.coordination`, the coordinator thread): which table is committed,
  planned or maintained, and when; an idle table costs its rounds nothing.
* **Execution** (:mod:`.execution`, ``threads`` executor threads): each takes the next task by
  the group's scheduling policy, runs it and records its output, or the error.
* **Bookkeeping** (:mod:`.bookkeeping`): what becomes of a process and its table: committed,
  failed, canceled, FAILED with a back-off.

The catalogs and the tables kept loaded (the last few used) are shared by all of them
(:mod:`.tables`), as is the optimizer's identity (:mod:`.context`).

A planning or commit error is recorded against the table (``last_error``, status FAILED). The
table is planned again after a back-off that doubles per consecutive failure (at most 1 h), so
a poisoned table never blocks its siblings and is never retried in a tight loop.

A damaged table (a metadata file, manifest list, manifest, data or delete file that is gone or
does not parse: ``CorruptTableError``) is one such table, wherever the damage is met:

* in discovery, its properties cannot be read, so its group cannot be either: it stays in the
  group that served it, and a table never served before is taken by the default group. It
  is then planned as any other, and fails there with the damage;
* a task that meets it fails its runs (``self-optimizing.execute.num-retries``), so its
  process fails, and the table with it;
* a commit or a maintenance run that meets it fails the table too.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from mixed_iceberg.catalog import MixedCatalog
from mixed_iceberg.exceptions import ConfigError
from mixed_iceberg.optimizer.bookkeeping import Bookkeeping
from mixed_iceberg.optimizer.config import GroupConfig, OptimizerConfig
from mixed_iceberg.optimizer.context import OptimizerContext
from mixed_iceberg.optimizer.coordination import Coordinator
from mixed_iceberg.optimizer.discovery import Discovery, Served
from mixed_iceberg.optimizer.execution import Executors
from mixed_iceberg.optimizer.sysdb.database import SystemDatabase
from mixed_iceberg.optimizer.tables import ServedTables
from mixed_iceberg.table import MixedTable

__all__ = ["OptimizerService"]

log = logging.getLogger(__name__)


class OptimizerService:
    """One optimizer of ``group``: ``start()`` runs it in background threads, ``stop()`` ends it.

    Args:
        config: the optimizer configuration (system database, catalogs, groups).
        group: the group served.
        threads: executor threads (the optimizer's share of the group's capacity).
        catalogs: catalogs by name, replacing those the configuration would open (tests).
        container: what runs it, as recorded in the system database.
    """

    def __init__(
        self,
        config: OptimizerConfig,
        group: str,
        *,
        threads: int = 1,
        catalogs: Mapping[str, MixedCatalog] | None = None,
        container: str | None = None,
    ) -> None:
        self.config = config
        unserved = sorted(set(catalogs or {}) - set(config.catalogs))
        if unserved:
            # Discovery looks at the config's catalogs only: a catalog handed in but not listed
            # there would never be served, silently.
            raise ConfigError(
                f"optimizer: catalogs {unserved} are handed in but not among the config's catalogs "
                f"{sorted(config.catalogs)}; list them under `catalogs`"
            )
        self.group: GroupConfig = config.group(group)
        self.threads = max(1, threads)
        self.container = container or self.group.container.value
        self.db = SystemDatabase(config.system_database)
        self.tables = ServedTables(config, catalogs)
        self.context = OptimizerContext(self.db, self.group, self.tables)
        discovery = Discovery(self.group.name, config.catalogs, self.tables.catalog, self._served_before)
        self.bookkeeping = Bookkeeping(self.context)
        self.executors = Executors(self.context, task_done=lambda table_id: self.coordinator.task_done(table_id))
        self.coordinator = Coordinator(self.context, discovery, self.bookkeeping, tasks_planned=self.executors.wake.set)
        self._workers: list[threading.Thread] = []

    @property
    def optimizer_id(self) -> str:
        """This optimizer's id in the system database ("" before :meth:`start`)."""
        return self.context.optimizer_id

    @optimizer_id.setter
    def optimizer_id(self, value: str) -> None:
        self.context.optimizer_id = value

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> OptimizerService:
        """Migrate the system database, register, and start the threads."""
        self.db.migrate()
        self.db.upsert_group(self.group.name, self.group.container.value, self.group.raw_properties)
        self.optimizer_id = self.db.register_optimizer(self.group.name, self.container, self.threads)
        log.info("optimizer %s serves group %s with %d thread(s)", self.optimizer_id, self.group.name, self.threads)
        self._spawn("heartbeat", self._heartbeat_loop)
        self._spawn("coordinator", self.coordinator.loop)
        for thread in range(self.threads):
            self._spawn(f"executor-{thread}", functools.partial(self.executors.loop, thread))
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the threads (a running task finishes first) and unregister: unfinished tasks go back."""
        self.request_stop()
        for worker in self._workers:
            worker.join(timeout)
        if self.optimizer_id:
            self.db.stop_optimizer(self.optimizer_id)
        self.db.dispose()

    @property
    def running(self) -> bool:
        """Started and not stopped (its threads restart themselves after an error)."""
        return bool(self.optimizer_id) and not self.context.stop.is_set()

    def request_stop(self) -> None:
        """Ask :meth:`run_forever` to stop (safe from a signal handler)."""
        self.context.stop.set()
        self.coordinator.wake.set()

    def run_forever(self) -> None:
        """Start and block until :meth:`request_stop` (another thread or a signal handler)."""
        self.start()
        try:
            while not self.context.stop.wait(1.0):
                pass
        finally:
            self.stop()

    def __enter__(self) -> OptimizerService:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        def guarded() -> None:
            while not self.context.stop.is_set():
                try:
                    target()
                    return
                except Exception:
                    log.exception("optimizer %s: %s thread failed; restarting it", self.optimizer_id, name)
                    self.context.stop.wait(1.0)

        worker = threading.Thread(target=guarded, name=f"optimizer-{name}", daemon=True)
        worker.start()
        self._workers.append(worker)

    # -- heartbeat ----------------------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        interval = self.group.properties.heartbeat_interval_ms / 1000
        while not self.context.stop.wait(interval):
            if not self.db.heartbeat(self.optimizer_id, self.context.lease()):
                old = self.optimizer_id
                self.optimizer_id = self.db.register_optimizer(self.group.name, self.container, self.threads)
                log.warning(
                    "optimizer %s was declared dead (no heartbeat in time); registered again as %s", old, self.optimizer_id
                )

    # -- the jobs, one step at a time (tests, benchmarks) ------------------------------------------

    def table(self, catalog: str, name: str) -> MixedTable:
        """The table, kept loaded among the last few used (:mod:`.tables`)."""
        return self.tables.table(catalog, name)

    def discover(self) -> list[Served]:
        """The configured catalogs' tables that this group serves now (damaged ones included,
        see the module docstring); only the tables whose metadata moved are loaded."""
        return self.coordinator.discover()

    def coordinate(self, planners: ThreadPoolExecutor | None = None, *, discover: bool = True) -> int | None:
        """One coordinator round (:meth:`.Coordinator.coordinate`); when the next table falls due."""
        return self.coordinator.coordinate(planners, discover=discover)

    def execute_one(self, thread: int = 0) -> bool:
        """Take the next task by the group's policy and run it; False when none waits."""
        return self.executors.execute_one(thread)

    def _served_before(self, table_id: str) -> tuple[str, float] | None:
        known = self.db.table(table_id)
        return (known.group_name, known.quota) if known is not None else None
