"""``OptimizerService``: one optimizer of one group. It keeps the group's tables healthy, with nobody scheduling anything.

Several optimizers may serve one group: the threads of a local container, the subtasks of a
Flink job, or more jobs. They share the group's work through the system database and never
talk to each other. Each optimizer runs three kinds of threads.

* **Heartbeat.** It renews this optimizer's heartbeat and its leases. If the optimizer was
  declared dead meanwhile, it registers again under a new id.
* **Coordinator.** It runs a round every ``refresh-interval``, when a task finishes, and when a
  table's ``self-optimizing.min-plan-interval`` runs out (a due table waits for no refresh).
  A round does the following:
  1. Gives back what dead optimizers held.
  2. On the refresh interval, discovers the tables of the configured catalogs whose
     ``self-optimizing.enabled`` is true and whose ``self-optimizing.group`` is this group.
  3. For every table whose lease it can take, in the group's policy order:
     * commits a finished process, or ends a failed one;
     * or plans a table that is due. Planning runs on ``max-planning-parallelism`` threads, and
       one round plans up to ``max-input-file-size-per-thread`` x threads of input;
     * or runs the table's maintenance when ``maintenance-interval`` is due.
* **Executors** (``threads`` of them). Each one takes the next task by the group's scheduling
  policy (:mod:`mixed_iceberg.optimizer.scheduling`), executes it and records its output, or
  the error.

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
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from mixed_iceberg.catalog import MixedCatalog, load_catalog
from mixed_iceberg.exceptions import (
    CommitConflictError,
    CorruptTableError,
    TableBusyError,
)
from mixed_iceberg.optimizer.codec import decode_result, decode_tasks
from mixed_iceberg.optimizer.config import GroupConfig, OptimizerConfig
from mixed_iceberg.optimizer.discovery import Discovery, Served
from mixed_iceberg.optimizer.scheduling import TableLoad, pick_table, table_order
from mixed_iceberg.optimizer.sysdb.database import (
    ProcessRecord,
    ProcessStatus,
    SystemDatabase,
    TableRuntime,
    TableStatus,
    TaskStatus,
    now_ms,
)
from mixed_iceberg.optimizer.work import commit_process, plan_process, run_task
from mixed_iceberg.options import OPT_PARTIAL
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
        self.group: GroupConfig = config.group(group)
        self.threads = max(1, threads)
        self.container = container or self.group.container.value
        self.db = SystemDatabase(config.system_database)
        self._catalogs: dict[str, MixedCatalog] = dict(catalogs or {})
        self._stop = threading.Event()
        self._wake = threading.Event()  # wakes the coordinator (a task finished)
        self._executor_wake = threading.Event()  # wakes idle executors (tasks were planned)
        self._workers: list[threading.Thread] = []
        self.optimizer_id = ""
        self._tables: dict[str, MixedTable] = {}
        self._tables_lock = threading.Lock()
        self._discovery = Discovery(self.group.name, config.catalogs, self._catalog, self._served_before)

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> OptimizerService:
        """Migrate the system database, register, and start the threads."""
        self.db.migrate()
        self.db.upsert_group(self.group.name, self.group.container.value, self.group.raw_properties)
        self.optimizer_id = self.db.register_optimizer(self.group.name, self.container, self.threads)
        log.info("optimizer %s serves group %s with %d thread(s)", self.optimizer_id, self.group.name, self.threads)
        self._spawn("heartbeat", self._heartbeat_loop)
        self._spawn("coordinator", self._coordinator_loop)
        for thread in range(self.threads):
            self._spawn(f"executor-{thread}", functools.partial(self._executor_loop, thread))
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the threads (a running task finishes first) and unregister: unfinished tasks go back."""
        self._stop.set()
        self._wake.set()
        for worker in self._workers:
            worker.join(timeout)
        if self.optimizer_id:
            self.db.stop_optimizer(self.optimizer_id)
        self.db.dispose()

    @property
    def running(self) -> bool:
        """Started and not stopped (its threads restart themselves after an error)."""
        return bool(self.optimizer_id) and not self._stop.is_set()

    def request_stop(self) -> None:
        """Ask :meth:`run_forever` to stop (safe from a signal handler)."""
        self._stop.set()
        self._wake.set()

    def run_forever(self) -> None:
        """Start and block until :meth:`request_stop` (another thread or a signal handler)."""
        self.start()
        try:
            while not self._stop.wait(1.0):
                pass
        finally:
            self.stop()

    def __enter__(self) -> OptimizerService:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        def guarded() -> None:
            while not self._stop.is_set():
                try:
                    target()
                    return
                except Exception:
                    log.exception("optimizer %s: %s thread failed; restarting it", self.optimizer_id, name)
                    self._stop.wait(1.0)

        worker = threading.Thread(target=guarded, name=f"optimizer-{name}", daemon=True)
        worker.start()
        self._workers.append(worker)

    def _lease(self) -> int:
        return now_ms() + self.group.properties.heartbeat_timeout_ms

    # -- heartbeat ----------------------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        interval = self.group.properties.heartbeat_interval_ms / 1000
        while not self._stop.wait(interval):
            if not self.db.heartbeat(self.optimizer_id, self._lease()):
                old = self.optimizer_id
                self.optimizer_id = self.db.register_optimizer(self.group.name, self.container, self.threads)
                log.warning(
                    "optimizer %s was declared dead (no heartbeat in time); registered again as %s", old, self.optimizer_id
                )

    # -- tables -------------------------------------------------------------------------------------

    def _catalog(self, name: str) -> MixedCatalog:
        if name not in self._catalogs:
            self._catalogs[name] = load_catalog(
                name, config_path=self.config.catalog_config, **self.config.catalogs.get(name, {})
            )
        return self._catalogs[name]

    def table(self, catalog: str, name: str) -> MixedTable:
        """The table, loaded once per optimizer and refreshed by each use."""
        key = f"{catalog}.{name}"
        with self._tables_lock:
            found = self._tables.get(key)
        if found is None:
            found = self._catalog(catalog).load_table(name)
            with self._tables_lock:
                self._tables[key] = found
        return found

    def discover(self) -> list[Served]:
        """The configured catalogs' tables that this group serves now (damaged ones included,
        see the module docstring); only the tables whose metadata moved are loaded
        (:mod:`mixed_iceberg.optimizer.discovery`)."""
        return self._discovery.round().served

    def _served_before(self, table_id: str) -> tuple[str, float] | None:
        known = self.db.table(table_id)
        return (known.group_name, known.quota) if known is not None else None

    # -- coordinator ----------------------------------------------------------------------------------

    def _coordinator_loop(self) -> None:
        """Rounds on every refresh interval (discovering tables), when a task finishes, and when
        a table's ``min-plan-interval`` runs out: a due table waits for no refresh round."""
        refresh = self.group.properties.refresh_interval_ms / 1000
        discovered = -refresh
        with ThreadPoolExecutor(
            max_workers=self.group.properties.planning_parallelism, thread_name_prefix="optimizer-planner"
        ) as planners:
            while not self._stop.is_set():
                discover = time.monotonic() - discovered >= refresh
                if discover:
                    discovered = time.monotonic()
                next_due_ms = self.coordinate(planners, discover=discover)
                until_refresh = discovered + refresh - time.monotonic()
                until_due = (next_due_ms - now_ms()) / 1000 if next_due_ms is not None else until_refresh
                self._wake.wait(max(0.0, min(until_refresh, until_due)))
                self._wake.clear()

    def coordinate(self, planners: ThreadPoolExecutor | None = None, *, discover: bool = True) -> int | None:
        """One coordinator round (see the module docstring); when the next table falls due
        (epoch ms; None: none waits for a time). ``discover``: look for the group's tables first
        (without, the tables recorded in the system database are served)."""
        props = self.group.properties
        self.db.reset_expired(
            self.group.name,
            heartbeat_timeout_ms=props.heartbeat_timeout_ms,
            ack_timeout_ms=props.task_ack_timeout_ms,
        )
        if discover:
            served = self.discover()
            self.db.sync_tables(self.group.name, [(s.table_id, s.catalog, s.name, s.quota) for s in served])
        runtimes = {t.table_id: t for t in self.db.tables(self.group.name)}
        threads = self.db.group_threads(self.group.name, props.heartbeat_timeout_ms)
        loads = [TableLoad(t.table_id, t.quota, 0, 0, t.last_optimized_ms, True) for t in runtimes.values()]
        order = [load.table_id for load in table_order(props.policy, loads, window_ms=props.quota_look_back_ms, threads=threads)]
        budget = props.max_input_per_thread * threads
        to_plan: list[TableRuntime] = []
        for table_id in order:
            runtime = runtimes[table_id]
            if runtime.process_id is not None:
                if self._advance(runtime) is ProcessStatus.SUCCESS:
                    # Planned again in this round: the table's next change waits no refresh interval.
                    refreshed = self.db.table(table_id)
                    if refreshed is not None and refreshed.process_id is None:
                        to_plan.append(refreshed)
            elif runtime.next_plan_ms <= now_ms():
                to_plan.append(runtime)
        planned_bytes = 0
        jobs = []
        for runtime in to_plan:
            if planned_bytes >= budget or self._stop.is_set():
                break
            if not self.db.claim_table(runtime.table_id, self.optimizer_id, self._lease()):
                continue
            if planners is None:
                planned_bytes += self._plan(runtime)
            else:
                jobs.append(planners.submit(self._plan, runtime))
        for job in jobs:
            planned_bytes += job.result()
        self._maintain()
        waiting = [t.next_plan_ms for t in self.db.tables(self.group.name) if t.process_id is None and t.next_plan_ms > now_ms()]
        return min(waiting, default=None)

    def _plan(self, runtime: TableRuntime) -> int:
        """Plan one claimed table; the input bytes planned (0: nothing due, or an error recorded)."""
        if not self.db.begin_planning(runtime.table_id, self.optimizer_id):
            # Read before another optimizer's process began: that process is not ours to touch.
            self.db.release_table(runtime.table_id, self.optimizer_id)
            return 0
        try:
            table = self.table(runtime.catalog, runtime.table_name)
            planned = plan_process(
                table, self.db, table_id=runtime.table_id, group=self.group.name, optimizer_id=self.optimizer_id
            )
        except TableBusyError as exc:  # another optimizer's process is in flight: it is not ours to touch
            log.info("%s", exc)
            self.db.release_table(runtime.table_id, self.optimizer_id)
            return 0
        except Exception as exc:
            log.warning("%s: planning failed: %s", runtime.table_id, exc)
            self._fail_table(runtime, f"planning failed: {type(exc).__name__}: {exc}")
            return 0
        if not isinstance(planned, int):
            # Held back by min-plan-interval: planned the moment it runs out. Nothing due:
            # evaluated again on the next refresh, not on every round other tables cause.
            due = planned.due_ms if planned is not None else now_ms() + self.group.properties.refresh_interval_ms
            self.db.defer_table(runtime.table_id, self.optimizer_id, next_plan_ms=due)
            return 0
        process = self.db.process(planned)
        self._wake_executors()
        return process.bytes_in if process is not None else 0

    def _fail_table(self, runtime: TableRuntime, error: str) -> None:
        """The table failed with no process in flight: FAILED with the group's back-off; its lease goes."""
        self.db.fail_table(
            runtime.table_id, self.optimizer_id, error=error, base_backoff_ms=self.group.properties.failure_backoff_ms
        )

    def _advance(self, runtime: TableRuntime) -> ProcessStatus | None:
        """A process in flight: commit it when its tasks are done, end it when one failed for good;
        the status it ended with (None: still running, or another optimizer holds the table)."""
        assert runtime.process_id is not None
        process = self.db.process(runtime.process_id)
        if process is None:
            self.db.forget_process(runtime.table_id, runtime.process_id)
            return ProcessStatus.CANCELED
        tasks = self.db.tasks(process.process_id)
        failed = [t for t in tasks if t.status is TaskStatus.FAILED]
        succeeded = [t for t in tasks if t.status is TaskStatus.SUCCESS]
        if len(succeeded) + len(failed) < len(tasks):
            return None  # still running
        if not self.db.claim_table(runtime.table_id, self.optimizer_id, self._lease()):
            return None  # another optimizer holds it
        # Read again under the lease: another optimizer may have ended this process since
        # ``runtime`` was read (and planned the table's next one).
        current, process = self.db.table(runtime.table_id), self.db.process(process.process_id)
        if (
            current is None
            or process is None
            or current.process_id != process.process_id
            or process.status in ProcessStatus.ended()
        ):
            self.db.release_table(runtime.table_id, self.optimizer_id)
            return None
        try:
            table = self.table(runtime.catalog, runtime.table_name)
            partial = OPT_PARTIAL.read(table.properties, runtime.table_name)
        except Exception as exc:  # the table cannot be loaded (damaged, dropped): the process cannot commit
            log.warning("%s: process %d cannot be committed: %s", runtime.table_id, process.process_id, exc)
            self._finish(process, ProcessStatus.FAILED, error=f"commit failed: {type(exc).__name__}: {exc}")
            return ProcessStatus.FAILED
        if failed and not (partial and succeeded and not process.unit):
            error = failed[0].error or "a task failed"
            self._finish(process, ProcessStatus.FAILED, error=f"{len(failed)} task(s) failed after their retries; first: {error}")
            return ProcessStatus.FAILED
        if not self.db.begin_commit(process, self.optimizer_id):  # the lease ran out meanwhile
            self.db.release_table(runtime.table_id, self.optimizer_id)
            return None
        try:
            outcome = commit_process(table, process, succeeded)
        except CommitConflictError as exc:
            log.info("%s: process %d lost a race and is planned again: %s", runtime.table_id, process.process_id, exc)
            self._finish(process, ProcessStatus.CANCELED, error=str(exc))
            return ProcessStatus.CANCELED
        except Exception as exc:
            log.warning("%s: commit of process %d failed: %s", runtime.table_id, process.process_id, exc)
            self._finish(process, ProcessStatus.FAILED, error=f"commit failed: {type(exc).__name__}: {exc}")
            return ProcessStatus.FAILED
        results = [decode_result(t.output or "[]") for t in succeeded]
        files_in = sum(r.files_in for r in results)
        files_in += sum(len(r.change) for t in succeeded for r in decode_tasks(t.input))
        files_out = sum(r.files_out for r in results)
        self._finish(process, ProcessStatus.SUCCESS, snapshot_id=outcome.snapshot_id, files_in=files_in, files_out=files_out)
        return ProcessStatus.SUCCESS

    def _finish(
        self,
        process: ProcessRecord,
        status: ProcessStatus,
        *,
        error: str | None = None,
        snapshot_id: int | None = None,
        files_in: int = 0,
        files_out: int = 0,
    ) -> None:
        """End ``process`` with the group's failure back-off and let its table go."""
        self.db.finish_process(
            process,
            status,
            error=error,
            snapshot_id=snapshot_id,
            backoff_ms=self.group.properties.failure_backoff_ms,
            files_in=files_in,
            files_out=files_out,
        )
        self.db.release_table(process.table_id, self.optimizer_id)

    def _maintain(self) -> None:
        """Maintenance of the tables due for it that have no process in flight (read afresh)."""
        interval = self.group.properties.maintenance_interval_ms
        if interval <= 0:
            return
        for runtime in self.db.tables(self.group.name):
            if self._stop.is_set() or runtime.process_id is not None:
                continue
            if runtime.last_maintenance_ms is not None and now_ms() - runtime.last_maintenance_ms < interval:
                continue
            if not self.db.claim_table(runtime.table_id, self.optimizer_id, self._lease()):
                continue
            error = None
            damaged = False
            try:
                self.table(runtime.catalog, runtime.table_name).maintenance.run()
            except Exception as exc:
                error, damaged = f"{type(exc).__name__}: {exc}", isinstance(exc, CorruptTableError)
                log.warning("%s: maintenance failed: %s", runtime.table_id, error)
            self.db.record_maintenance(runtime.table_id, error=error)
            if damaged and runtime.status is not TableStatus.FAILED:  # a table failed already keeps its back-off
                self._fail_table(runtime, f"maintenance failed: {error}")  # releases the table
            else:
                self.db.release_table(runtime.table_id, self.optimizer_id)

    # -- executors -----------------------------------------------------------------------------------

    def _wake_executors(self) -> None:
        self._executor_wake.set()

    def _executor_loop(self, thread: int) -> None:
        idle = 0.2
        while not self._stop.is_set():
            if self.execute_one(thread):
                idle = 0.2
                self._wake.set()  # the coordinator may commit the process now
                continue
            self._executor_wake.wait(idle)
            self._executor_wake.clear()
            idle = min(2.0, idle * 2)

    def execute_one(self, thread: int = 0) -> bool:
        """Take the next task by the group's policy and run it; False when none waits."""
        props = self.group.properties
        threads = self.db.group_threads(self.group.name, props.heartbeat_timeout_ms)
        loads = self.db.table_loads(self.group.name, now_ms() - props.quota_look_back_ms)
        table_id = pick_table(
            props.policy, loads, window_ms=props.quota_look_back_ms, threads=threads, break_quota=props.break_quota
        )
        if table_id is None:
            return False
        task = self.db.claim_task(table_id, self.optimizer_id, thread, now_ms() + props.task_ack_timeout_ms)
        if task is None or not self.db.ack_task(task, self.optimizer_id, now_ms() + props.task_execute_timeout_ms):
            return task is not None
        process = self.db.process(task.process_id)
        runtime = self.db.table(table_id)
        started = time.monotonic()
        try:
            if process is None or runtime is None:
                raise LookupError(f"task {task.process_id}/{task.task_id}: its process or table is gone")
            table = self.table(runtime.catalog, runtime.table_name)
            result = run_task(table, process, task)
        except Exception as exc:
            duration = int((time.monotonic() - started) * 1000)
            status = self.db.fail_task(task, self.optimizer_id, error=f"{type(exc).__name__}: {exc}", duration_ms=duration)
            log.warning("%s: task %d/%d failed (%s): %s", table_id, task.process_id, task.task_id, status, exc)
            return True
        duration = int((time.monotonic() - started) * 1000)
        if not self.db.complete_task(
            task,
            self.optimizer_id,
            output=result.output,
            rows_in=result.rows_in,
            rows_out=result.rows_out,
            bytes_out=result.bytes_out,
            duration_ms=duration,
        ):
            log.warning(
                "%s: task %d/%d was taken back while it ran; its files are left to orphan cleaning",
                table_id,
                task.process_id,
                task.task_id,
            )
        return True
