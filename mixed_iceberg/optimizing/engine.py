"""``table.optimizing``: evaluate, plan and run self-optimizing on one table.

>>> result = table.optimizing.run()          # doctest: +SKIP
>>> result.type, result.files_in, result.files_out      # doctest: +SKIP
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from pyiceberg.expressions import BooleanExpression
from pyiceberg.transforms import VoidTransform

from mixed_iceberg.config.optimizing import OptimizingConfig
from mixed_iceberg.exceptions import CommitConflictError, PropertyError
from mixed_iceberg.format import WriterIdentity
from mixed_iceberg.optimizing.collect import CollectedTable, collect
from mixed_iceberg.optimizing.commit import commit_outputs
from mixed_iceberg.optimizing.evaluate import evaluate_table
from mixed_iceberg.optimizing.execute import TaskOutput, execute_task, execute_unit
from mixed_iceberg.optimizing.model import ChangeFile, OptimizingResult, OptimizingType, RewriteTask, TableEvaluation
from mixed_iceberg.optimizing.partial import incomplete_partitions
from mixed_iceberg.optimizing.plan import plan_tasks
from mixed_iceberg.store.damage import CHANGE_FILE, ExpectedFile, expected, locating
from mixed_iceberg.table_properties import optimizing_filter
from mixed_iceberg.typedef import Clock

if TYPE_CHECKING:
    from mixed_iceberg.handle import Refresh, TableHandle

__all__ = ["Deferred", "PlannedRun", "TableOptimizing", "competitors", "crosses_partitions", "execute_run", "partition_filter"]

log = logging.getLogger(__name__)


def crosses_partitions(table: TableHandle) -> bool:
    """Whether a keyed table is partitioned by a column outside its key (a key can move); a
    ``void`` field puts every row in one value, so it moves nothing."""
    if not table.is_keyed:
        return False
    spec = table.base_store.spec()
    schema = table.schema()
    return any(
        schema.find_column_name(f.source_id) not in table.primary_key and not isinstance(f.transform, VoidTransform)
        for f in spec.fields
    )


def _as_type(value: OptimizingType | str | None) -> OptimizingType | None:
    return OptimizingType(value) if isinstance(value, str) else value


def partition_filter(table: TableHandle) -> BooleanExpression | None:
    """The table's ``self-optimizing.filter``, parsed (None when unset); the parser and checks
    create_table and update_properties apply to the property."""
    return optimizing_filter(table.base_store.properties, table.schema(), table.name)


def competitors(table: TableHandle, collected: CollectedTable) -> list[ChangeFile]:
    """Change files a cross-partition run leaves visible below its cut: those of partitions
    that ``self-optimizing.filter`` excludes. Their rows compete for their keys (a newer one
    hides what the run would write) but are neither written nor merged."""
    if not table.config.optimizing.filter:
        return []
    inside = {p.path for p in collected.partitions}
    found = [c for p in collect(table).partitions if p.path not in inside for c in p.change]
    if found and not table.merge_config.is_default:
        raise PropertyError(
            f"table {table.name}: self-optimizing.filter on a table partitioned by a non-key column needs "
            f"merge-engine=deduplicate without sequence.field (found {table.merge_config.engine.value}): "
            "the change it leaves out would be applied out of order"
        )
    return found


def _plan(
    table: TableHandle, collected: CollectedTable, evaluation: TableEvaluation, requested: OptimizingType | None
) -> list[RewriteTask]:
    return plan_tasks(
        collected.partitions,
        evaluation,
        table.config.optimizing,
        keyed=table.is_keyed,
        requested=requested,
        cross_partition=crosses_partitions(table),
        drop_dangling_deletes=table.config.maintenance.clean_dangling_deletes,
    )


@dataclass(frozen=True, slots=True)
class Deferred:
    """Nothing planned: the table was optimized within ``self-optimizing.min-plan-interval``;
    it may be planned from ``due_ms`` (epoch milliseconds) on."""

    due_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedRun:
    """One optimizing, planned: the table as planned, what was read, the type and its tasks.

    ``unit``: the table is partitioned by a column outside its key, so the tasks run as one
    merge (:func:`~mixed_iceberg.optimizing.execute.execute_unit`)."""

    table: TableHandle
    collected: CollectedTable
    evaluation: TableEvaluation
    kind: OptimizingType
    tasks: tuple[RewriteTask, ...]
    unit: bool


def execute_run(
    table: TableHandle,
    collected: CollectedTable,
    tasks: Sequence[RewriteTask],
    *,
    unit: bool,
    writer: WriterIdentity,
    parallelism: int = 1,
) -> list[TaskOutput]:
    """Execute planned ``tasks`` (as one merge when ``unit``); nothing is committed.

    Raises:
        CorruptFileError: an input file does not parse, or is gone (``MissingFileError``).
    """
    base = table.base_store
    with locating(base.io, lambda: _base_inputs(collected, tasks)):
        if table.change_store is None:
            return _execute(table, collected, tasks, unit=unit, writer=writer, parallelism=parallelism)
        with locating(table.change_store.io, lambda: _change_inputs(collected, tasks)):
            return _execute(table, collected, tasks, unit=unit, writer=writer, parallelism=parallelism)


def _base_inputs(collected: CollectedTable, tasks: Sequence[RewriteTask]) -> list[ExpectedFile]:
    """The base data and delete files ``tasks`` read, as their manifests describe them."""
    found: list[ExpectedFile] = []
    for task in tasks:
        for file in (*task.rewrite, *task.segments):
            deletes = (*file.pos_delete_files, *file.eq_delete_files, *task.drop_delete_files)
            lives = (collected.data_files.get(file.path), *(collected.delete_files.get(d) for d in deletes))
            found.extend(expected(live.data_file) for live in lives if live is not None)
    return found


def _change_inputs(collected: CollectedTable, tasks: Sequence[RewriteTask]) -> list[ExpectedFile]:
    """The change files ``tasks`` merge, as their manifests describe them."""
    lives = (collected.change_files.get(c.path) for task in tasks for c in task.change)
    return [expected(live.data_file, CHANGE_FILE) for live in lives if live is not None]


def _execute(
    table: TableHandle,
    collected: CollectedTable,
    tasks: Sequence[RewriteTask],
    *,
    unit: bool,
    writer: WriterIdentity,
    parallelism: int,
) -> list[TaskOutput]:
    if unit:
        return execute_unit(table, collected, tasks, writer, competitors(table, collected))
    if parallelism <= 1 or len(tasks) <= 1:
        return [execute_task(table, collected, t, writer) for t in tasks]
    with ThreadPoolExecutor(max_workers=parallelism) as pool:
        return list(pool.map(lambda t: execute_task(table, collected, t, writer), tasks))


class TableOptimizing:
    """Self-optimizing of one table.

    Args:
        refresh: reloads the table and returns its fresh handle (``MixedTable.refreshed``);
            called before every evaluation, so each attempt sees the latest commits.
        clock: current time in epoch seconds, injectable for trigger tests.
    """

    def __init__(self, refresh: Refresh, clock: Clock = time.time) -> None:
        self._refresh = refresh
        self.clock = clock
        self._table: TableHandle | None = None

    @property
    def table(self) -> TableHandle:
        """The table as of the last refresh (refreshed now if it never was)."""
        if self._table is None:
            self._table = self._refresh()
        return self._table

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    @property
    def config(self) -> OptimizingConfig:
        """The ``self-optimizing.*`` settings as of the last refresh."""
        return self.table.config.optimizing

    def _state(self, *, refreshed: bool = False) -> tuple[CollectedTable, TableEvaluation]:
        if not refreshed:
            self._table = self._refresh()
        collected = collect(self.table, partition_filter(self.table))
        evaluation = evaluate_table(
            self.table.name,
            collected.partitions,
            self.config,
            keyed=self.table.is_keyed,
            now_ms=self._now_ms(),
            last_full_ms=collected.last_full_ms,
        )
        return collected, evaluation

    def evaluate(self) -> TableEvaluation:
        """Which optimizing type is due now, per partition (from metadata only)."""
        return self._state()[1]

    def plan(self, type: OptimizingType | str | None = None) -> list[RewriteTask]:
        """The tasks a run would execute now (``type`` forces one type on every partition)."""
        collected, evaluation = self._state()
        return _plan(self.table, collected, evaluation, _as_type(type))

    def plan_run(self, type: OptimizingType | str | None = None, *, first_attempt: bool = True) -> PlannedRun | None:
        """Refresh, evaluate and plan; None when nothing is due (or, on a first attempt without a
        requested type, the table was optimized within ``self-optimizing.min-plan-interval``)."""
        planned = self.plan_or_defer(type, first_attempt=first_attempt)
        return planned if isinstance(planned, PlannedRun) else None

    def plan_or_defer(
        self, type: OptimizingType | str | None = None, *, first_attempt: bool = True
    ) -> PlannedRun | Deferred | None:
        """:meth:`plan_run`, telling a table with nothing due (None) from one that
        ``min-plan-interval`` holds back: that one is :class:`Deferred` to when it may be planned."""
        requested = _as_type(type)
        self._table = self._refresh()
        if requested is None and not self.config.enabled:
            return None  # before collecting: a disabled table costs no manifest reads
        collected, evaluation = self._state(refreshed=True)
        since = self._now_ms() - collected.last_optimized_ms
        interval_ms = self.config.min_plan_interval // timedelta(milliseconds=1)
        if requested is None and first_attempt and since < interval_ms:
            log.debug("%s: last optimized %d ms ago (< self-optimizing.min-plan-interval)", self.table.name, since)
            return Deferred(collected.last_optimized_ms + interval_ms)
        tasks = _plan(self.table, collected, evaluation, requested)
        if not tasks:
            return None
        kind = requested or max((t.type for t in tasks), key=lambda t: t.rank)
        return PlannedRun(
            table=self.table,
            collected=collected,
            evaluation=evaluation,
            kind=kind,
            tasks=tuple(tasks),
            unit=crosses_partitions(self.table),
        )

    def _execute(self, planned: PlannedRun, parallelism: int) -> tuple[list[TaskOutput], list[tuple[RewriteTask, Exception]]]:
        """The outputs of the run's tasks, and the tasks that failed with their errors.

        Without ``self-optimizing.allow-partial-commit`` (or when the tasks merge as one unit), a
        task that fails fails the run. With it, the other tasks' outputs are kept, except those
        of a partition whose change a failed task would have merged (:mod:`~mixed_iceberg.optimizing.partial`).

        Raises:
            Exception: a task's error, when the run cannot commit without it.
        """
        if planned.unit or not self.config.allow_partial_commit:
            outputs = execute_run(
                planned.table,
                planned.collected,
                planned.tasks,
                unit=planned.unit,
                writer=WriterIdentity(),
                parallelism=parallelism,
            )
            return outputs, []

        def attempt(task: RewriteTask) -> list[TaskOutput] | Exception:
            try:
                return execute_run(planned.table, planned.collected, [task], unit=False, writer=WriterIdentity())
            except Exception as exc:  # a task's boundary, as in the optimizer service: the run goes on without it
                return exc

        if parallelism <= 1 or len(planned.tasks) <= 1:
            results = [attempt(task) for task in planned.tasks]
        else:
            with ThreadPoolExecutor(max_workers=parallelism) as pool:
                results = list(pool.map(attempt, planned.tasks))
        failed = [(task, r) for task, r in zip(planned.tasks, results, strict=True) if isinstance(r, Exception)]
        outputs = [o for r in results if not isinstance(r, Exception) for o in r]
        if not failed:
            return outputs, []
        left_out = incomplete_partitions([o.task for o in outputs], planned.collected.partitions)
        outputs = [o for o in outputs if o.task.partition not in left_out]
        if not outputs:
            raise failed[0][1]
        log.warning(
            "%s: %d of %d task(s) failed; self-optimizing.allow-partial-commit commits %d (partitions left out: %s); first error: %s",
            self.table.name,
            len(failed),
            len(planned.tasks),
            len(outputs),
            sorted(left_out),
            failed[0][1],
        )
        return outputs, failed

    def run(self, type: OptimizingType | str | None = None, *, parallelism: int = 1) -> OptimizingResult:
        """Evaluate, plan, execute and commit; re-plans when the commit loses a race.

        A task that fails fails the run, unless ``self-optimizing.allow-partial-commit`` is true:
        then the tasks that succeeded are committed (``tasks_failed`` of the result counts the
        others), except in a partition whose change a failed task would have merged.

        Raises:
            CommitConflictError: still conflicting after ``self-optimizing.execute.num-retries``.
            Exception: a task's error (every task's, with ``allow-partial-commit``).
        """
        started = time.monotonic()
        requested = _as_type(type)
        attempt = 0
        while True:
            attempt += 1
            # Planning refreshes the table; the retry budget is read from that refresh (read
            # before it, a new TableOptimizing refreshed the table twice per run).
            planned = self.plan_run(requested, first_attempt=attempt == 1)
            if planned is None:
                return OptimizingResult.idle(self.table.name, time.monotonic() - started)
            attempts = self.config.num_retries + 1
            kind = planned.kind
            outputs, failed = self._execute(planned, max(1, parallelism))
            tasks = tuple(o.task for o in outputs) if failed else planned.tasks
            try:
                outcome = commit_outputs(self.table, kind, outputs, self._now_ms())
            except CommitConflictError as exc:
                if attempt >= attempts:
                    raise
                log.warning("%s: %s; re-planning (attempt %d/%d)", self.table.name, exc, attempt + 1, attempts)
                continue
            result = OptimizingResult(
                table=self.table.name,
                type=kind,
                tasks=len(tasks),
                files_in=sum(len(o.removed_data) + len(o.task.change) for o in outputs),
                files_out=sum(len(o.added_data) for o in outputs),
                delete_files_out=sum(len(o.added_deletes) for o in outputs),
                bytes_in=sum(t.input_bytes for t in tasks),
                bytes_out=sum(o.bytes_out for o in outputs),
                rows_in=sum(o.rows_in for o in outputs),
                rows_out=sum(o.rows_out for o in outputs),
                duration_s=time.monotonic() - started,
                committed=True,
                snapshot_id=outcome.snapshot_id,
                tasks_failed=len(failed),
            )
            log.info(
                "%s: %s optimizing: %d task(s), files %d -> %d (+%d delete files), rows %d -> %d in %.2f s",
                self.table.name,
                kind.value,
                result.tasks,
                result.files_in,
                result.files_out,
                result.delete_files_out,
                result.rows_in,
                result.rows_out,
                result.duration_s,
            )
            return result
