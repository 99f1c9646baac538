"""Coordination: which table of the group is committed, planned or maintained, and when.

The coordinator thread runs a full round every ``refresh-interval``. Between them it runs
rounds over the tables with something to do alone: those a poll found with new commits (every
:data:`POLL_INTERVAL_S` it reads the SQL catalogs' metadata locations, one query each,
:mod:`.discovery`), those whose task finished here, and those due at a time
(``self-optimizing.min-plan-interval`` running out, a back-off ending): a due table waits for
no refresh, and such a round reads only its tables. A full round does the following:

1. Gives back what dead optimizers held.
2. On the refresh interval, discovers the tables of the configured catalogs whose
   ``self-optimizing.enabled`` is true and whose ``self-optimizing.group`` is this group
   (loading only the tables whose metadata moved), and records them.
3. For every table with something to do whose lease it can take, in the group's policy order
   (a round between refreshes does this step alone, over its tables):

   * commits a finished process, or ends a failed one (:mod:`.bookkeeping`);
   * or plans a table that is due, or that received a commit since it was last evaluated.
     Planning runs on ``max-planning-parallelism`` threads, and one round plans up to
     ``max-input-file-size-per-thread`` x threads of input;
   * or runs the table's maintenance when ``maintenance-interval`` is due.

   The tables with nothing in flight go to the planner threads first; the commits run while
   they plan, and a table just committed is planned after them: a due table never waits
   behind another table's commit.

A table with nothing due is evaluated again on the next refresh, unless it is *settled*
(:func:`~mixed_iceberg.optimizer.work.settled`: no trigger interval running out can make it
due, only a commit can): then it is evaluated again when it receives a commit, and otherwise
only after 50 to 100 refresh intervals (:data:`SETTLED_RECHECK_REFRESHES`), when damage to its
files shows. An idle table costs a round no load and no evaluation.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor

from mixed_iceberg.exceptions import CorruptTableError, TableBusyError
from mixed_iceberg.optimizer.bookkeeping import Bookkeeping
from mixed_iceberg.optimizer.context import OptimizerContext
from mixed_iceberg.optimizer.discovery import Discovery, Served
from mixed_iceberg.optimizer.scheduling import TableLoad, table_order
from mixed_iceberg.optimizer.sysdb.database import ProcessStatus, TableRuntime, TableStatus, now_ms
from mixed_iceberg.optimizer.work import plan_process, settled
from mixed_iceberg.table import MixedTable

__all__ = ["POLL_INTERVAL_S", "SETTLED_RECHECK_REFRESHES", "Coordinator"]

log = logging.getLogger(__name__)

#: How often the coordinator looks for commits to its tables (at most the refresh interval).
POLL_INTERVAL_S = 0.5
#: A settled table is evaluated again after this many refresh intervals, up to twice as many
#: (spread by table id), if no commit made it due before: its files are read again then, so
#: damage to an idle table shows within that time, and no move is missed for good.
SETTLED_RECHECK_REFRESHES = 50


class Coordinator:
    """The coordinator of one optimizer.

    Args:
        context: the optimizer.
        discovery: the group's discovery.
        bookkeeping: records what becomes of processes and tables.
        tasks_planned: called when a round planned tasks (wakes idle executors).
    """

    def __init__(
        self,
        context: OptimizerContext,
        discovery: Discovery,
        bookkeeping: Bookkeeping,
        tasks_planned: Callable[[], None],
    ) -> None:
        self.context = context
        self.discovery = discovery
        self.bookkeeping = bookkeeping
        self._tasks_planned = tasks_planned
        self.wake = threading.Event()  # a task finished, or the optimizer stops
        self._changed: set[str] = set()  # served tables with commits not yet evaluated
        self._deferred: dict[str, int] = {}  # tables this optimizer deferred, to when (min-plan-interval)
        self._due: dict[str, int] = {}  # when each table with nothing in flight is due, as last read
        self._finished: set[str] = set()  # tables whose task finished here since the last round
        self._lock = threading.Lock()

    def loop(self) -> None:
        """A full round on every refresh interval (discovering tables); between them, rounds over
        the tables with something to do alone: a commit found by a poll, a task of theirs that
        finished here, a time they were due at (``min-plan-interval``, a back-off)."""
        props = self.context.group.properties
        stop = self.context.stop
        refresh = props.refresh_interval_ms / 1000
        poll = min(POLL_INTERVAL_S, refresh)
        discovered = polled = -refresh
        with ThreadPoolExecutor(max_workers=props.planning_parallelism, thread_name_prefix="optimizer-planner") as planners:
            while not stop.is_set():
                self.wake.clear()
                if time.monotonic() - discovered >= refresh:
                    discovered = polled = time.monotonic()
                    self.coordinate(planners, discover=True)
                else:
                    if time.monotonic() - polled >= poll:
                        polled = time.monotonic()
                        self.poll()
                    wanted = self._wanted()
                    if wanted:
                        self.coordinate(planners, discover=False, only=wanted)
                next_due_ms = min(self._due.values(), default=None)
                until_refresh = discovered + refresh - time.monotonic()
                until_poll = polled + poll - time.monotonic()
                until_due = (next_due_ms - now_ms()) / 1000 if next_due_ms is not None else until_refresh
                self.wake.wait(max(0.0, min(until_refresh, until_poll, until_due)))

    def task_done(self, table_id: str) -> None:
        """A task of ``table_id`` finished here: its process may be committed now (any thread)."""
        with self._lock:
            self._finished.add(table_id)
        self.wake.set()

    def _wanted(self) -> set[str]:
        """The tables a round between refreshes looks at: new commits, tasks done, due times."""
        with self._lock:
            finished, self._finished = self._finished, set()
        now = now_ms()
        return finished | self._changed | {t for t, due in self._due.items() if due <= now}

    def discover(self) -> list[Served]:
        """The configured catalogs' tables that this group serves now (damaged ones included,
        see :mod:`mixed_iceberg.optimizer.service`); only those whose metadata moved are loaded."""
        found = self.discovery.round()
        self._changed |= found.moved
        return found.served

    def poll(self) -> bool:
        """Look for commits and group changes in the catalogs that list metadata locations;
        whether a table moved, joined or left."""
        found = self.discovery.round(poll=True)
        self._changed |= found.moved
        if found.regrouped:
            self._record(found.served)
        return bool(found.moved) or found.regrouped

    def _record(self, served: list[Served]) -> None:
        self.context.db.sync_tables(self.context.group.name, [(s.table_id, s.catalog, s.name, s.quota) for s in served])

    def coordinate(
        self, planners: ThreadPoolExecutor | None = None, *, discover: bool = True, only: Collection[str] | None = None
    ) -> int | None:
        """One round (see the module docstring); when the next table falls due (epoch ms; None:
        none waits for a time). ``discover``: look for the group's tables first (without, the
        tables recorded in the system database are served). ``only``: a round over these
        tables alone (new commits, tasks done, due times), without maintenance."""
        ctx = self.context
        db, props = ctx.db, ctx.group.properties
        db.reset_expired(
            ctx.group.name,
            heartbeat_timeout_ms=props.heartbeat_timeout_ms,
            ack_timeout_ms=props.task_ack_timeout_ms,
        )
        if discover:
            self._record(self.discover())
        now = now_ms()
        tables = self._runtimes(only)
        if only is None:
            served = {t.table_id for t in tables}
            self._changed &= served
            for table_id in [t for t, due in self._deferred.items() if due <= now or t not in served]:
                del self._deferred[table_id]
        # Only the tables with something to do are ordered: the policies order tables one by one.
        runtimes = {t.table_id: t for t in tables if t.process_id is not None or t.next_plan_ms <= now or self._wants_plan(t)}
        threads = db.group_threads(ctx.group.name, props.heartbeat_timeout_ms)
        loads = [TableLoad(t.table_id, t.quota, 0, 0, t.last_optimized_ms, True) for t in runtimes.values()]
        order = [load.table_id for load in table_order(props.policy, loads, window_ms=props.quota_look_back_ms, threads=threads)]
        budget = props.max_input_per_thread * threads
        # Tables with nothing in flight are planned first (on the planner threads), and the
        # processes in flight advanced (committed) meanwhile: a due table never waits behind
        # another table's commit. A table committed here is planned again in this round, after.
        waiting = [runtimes[t] for t in order if runtimes[t].process_id is None]
        jobs, planned_bytes = self._start_planning(waiting, planners, budget, 0)
        again: list[TableRuntime] = []
        for table_id in order:
            runtime = runtimes[table_id]
            if runtime.process_id is None:
                continue
            self._changed.discard(table_id)  # its commit is seen when the process ends
            if self.bookkeeping.advance(runtime) is ProcessStatus.SUCCESS:
                # Planned again in this round: the table's next change waits no refresh interval.
                refreshed = db.table(table_id)
                if refreshed is not None and refreshed.process_id is None:
                    again.append(refreshed)
        planned_bytes += sum(job.result() for job in jobs)
        jobs, planned_bytes = self._start_planning(again, planners, budget, planned_bytes)
        planned_bytes += sum(job.result() for job in jobs)
        if only is None:
            self._maintain()
        if runtimes:  # read again: what this round planned, committed or failed waits until a new time
            tables = self._runtimes(only)
        now = now_ms()
        if only is None:
            self._due.clear()
        else:
            for table_id in only:
                self._due.pop(table_id, None)
        self._due.update((t.table_id, t.next_plan_ms) for t in tables if t.process_id is None and t.next_plan_ms > now)
        return min(self._due.values(), default=None)

    def _start_planning(
        self, runtimes: list[TableRuntime], planners: ThreadPoolExecutor | None, budget: int, planned_bytes: int
    ) -> tuple[list[Future[int]], int]:
        """Claim and plan ``runtimes`` in order while the round's input ``budget`` lasts: on the
        ``planners`` (the jobs returned, their bytes counted when they end) or here, in turn
        (their bytes counted in the total returned)."""
        ctx = self.context
        jobs: list[Future[int]] = []
        for runtime in runtimes:
            if planned_bytes >= budget or ctx.stop.is_set():
                break
            if not ctx.db.claim_table(runtime.table_id, ctx.optimizer_id, ctx.lease()):
                continue
            if planners is None:
                planned_bytes += self._plan(runtime)
            else:
                jobs.append(planners.submit(self._plan, runtime))
        return jobs, planned_bytes

    def _runtimes(self, only: Collection[str] | None) -> list[TableRuntime]:
        """The group's tables as the system database has them (``only`` those of these ids)."""
        db, group = self.context.db, self.context.group.name
        if only is None:
            return db.tables(group)
        found = (db.table(table_id) for table_id in sorted(only))
        return [t for t in found if t is not None and t.group_name == group]

    def _wants_plan(self, runtime: TableRuntime) -> bool:
        """An idle table that received a commit since it was last evaluated, unless this
        optimizer deferred it (``min-plan-interval``): planned at that time, with the commit."""
        if runtime.table_id not in self._changed:
            return False
        if runtime.status is not TableStatus.IDLE or runtime.table_id in self._deferred:
            self._changed.discard(runtime.table_id)  # failed: its back-off holds; deferred: planned when due
            return False
        return True

    def _plan(self, runtime: TableRuntime) -> int:
        """Plan one claimed table; the input bytes planned (0: nothing due, or an error recorded)."""
        ctx = self.context
        db = ctx.db
        self._changed.discard(runtime.table_id)  # evaluated now, with every commit so far
        self._deferred.pop(runtime.table_id, None)
        if not db.begin_planning(runtime.table_id, ctx.optimizer_id):
            # Read before another optimizer's process began: that process is not ours to touch.
            db.release_table(runtime.table_id, ctx.optimizer_id)
            return 0
        try:
            table = ctx.tables.table(runtime.catalog, runtime.table_name)
            planned = plan_process(table, db, table_id=runtime.table_id, group=ctx.group.name, optimizer_id=ctx.optimizer_id)
        except TableBusyError as exc:  # another optimizer's process is in flight: it is not ours to touch
            log.info("%s", exc)
            db.release_table(runtime.table_id, ctx.optimizer_id)
            return 0
        except Exception as exc:
            log.warning("%s: planning failed: %s", runtime.table_id, exc)
            self.bookkeeping.fail_table(runtime, f"planning failed: {type(exc).__name__}: {exc}")
            return 0
        if not isinstance(planned, int):
            # Held back by min-plan-interval: planned the moment it runs out. Nothing due:
            # evaluated again on the next refresh, or, settled, when a commit arrives.
            if planned is not None:
                due = self._deferred[runtime.table_id] = planned.due_ms
            else:
                due = self._idle_until(runtime.table_id, table)
            db.defer_table(runtime.table_id, ctx.optimizer_id, next_plan_ms=due)
            return 0
        process = db.process(planned)
        self._tasks_planned()
        return process.bytes_in if process is not None else 0

    def _idle_until(self, table_id: str, table: MixedTable) -> int:
        """When a table with nothing due is evaluated again if no commit comes first."""
        try:
            waits_for_a_commit = settled(table)
        except Exception as exc:  # its damage shows at its next plan
            log.info("%s: evaluated again on the next refresh: %s", table_id, exc)
            waits_for_a_commit = False
        refresh_ms = self.context.group.properties.refresh_interval_ms
        if not waits_for_a_commit:
            return now_ms() + refresh_ms
        recheck_ms = refresh_ms * SETTLED_RECHECK_REFRESHES
        return now_ms() + recheck_ms + zlib.crc32(table_id.encode()) % recheck_ms

    def _maintain(self) -> None:
        """Maintenance of the tables due for it that have no process in flight (read afresh)."""
        ctx = self.context
        db = ctx.db
        interval = ctx.group.properties.maintenance_interval_ms
        if interval <= 0:
            return
        for runtime in db.tables(ctx.group.name):
            if ctx.stop.is_set() or runtime.process_id is not None:
                continue
            if runtime.last_maintenance_ms is not None and now_ms() - runtime.last_maintenance_ms < interval:
                continue
            if not db.claim_table(runtime.table_id, ctx.optimizer_id, ctx.lease()):
                continue
            error = None
            damaged = False
            try:
                ctx.tables.table(runtime.catalog, runtime.table_name).maintenance.run()
            except Exception as exc:
                error, damaged = f"{type(exc).__name__}: {exc}", isinstance(exc, CorruptTableError)
                log.warning("%s: maintenance failed: %s", runtime.table_id, error)
            db.record_maintenance(runtime.table_id, error=error)
            if damaged and runtime.status is not TableStatus.FAILED:  # a table failed already keeps its back-off
                self.bookkeeping.fail_table(runtime, f"maintenance failed: {error}")  # releases the table
            else:
                db.release_table(runtime.table_id, ctx.optimizer_id)
