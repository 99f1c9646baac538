"""The tables a group serves (``table_runtime``): discovery's record, planning, failures, maintenance.

Every verb that changes a table's state is conditional on its lease (the optimizer that
claimed it) and, where it matters, on it having no process in flight, so a late writer never
overwrites the state another optimizer set since.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.engine import Connection

from mixed_iceberg.optimizer.sysdb.connection import Connected
from mixed_iceberg.optimizer.sysdb.records import TableRuntime, now_ms, record
from mixed_iceberg.optimizer.sysdb.schema import TABLES
from mixed_iceberg.optimizer.sysdb.states import TABLE, TableStatus, backoff_ms

__all__ = ["TableRuntimes", "record_failure"]


def record_failure(c: Connection, table_id: str, *, error: str, base_backoff_ms: int, now: int, process_id: int | None) -> bool:
    """The table failed (a planning, a commit, a process): FAILED, its consecutive failures
    counted, planned again after :func:`~mixed_iceberg.optimizer.sysdb.states.backoff_ms`.
    Only while the table's process is still ``process_id`` (None: no process in flight)."""
    row = c.execute(select(TABLES.c.failures).where(TABLES.c.table_id == table_id)).first()
    if row is None:
        return False
    failures = int(row.failures) + 1
    return bool(
        c.execute(
            update(TABLES)
            .where(TABLES.c.table_id == table_id, _process_is(process_id), TABLES.c.status.in_(TABLE.fail.sources))
            .values(
                status=TABLE.fail.target,
                process_id=None,
                failures=failures,
                next_plan_ms=now + backoff_ms(base_backoff_ms, failures),
                last_error=error,
                last_error_ms=now,
                updated_ms=now,
            )
        ).rowcount
    )


def _process_is(process_id: int | None) -> ColumnElement[bool]:
    return TABLES.c.process_id.is_(None) if process_id is None else TABLES.c.process_id == process_id


class TableRuntimes(Connected):
    """The verbs on ``table_runtime``."""

    def sync_tables(self, group: str, tables: Iterable[tuple[str, str, str, float]]) -> None:
        """Record the group's tables as discovered now: ``(table_id, catalog, name, quota)``.

        New tables start IDLE; a table that moved to this group follows. A table no longer
        discovered (disabled, dropped, moved away) is removed unless a process is in flight.
        """
        now = now_ms()
        found = {t[0]: t for t in tables}
        with self._write("sync_tables") as c:
            existing = {row.table_id: row for row in c.execute(select(TABLES).where(TABLES.c.group_name == group))}
            for table_id, catalog, name, quota in found.values():
                if table_id in existing:
                    if existing[table_id].quota != quota:
                        c.execute(update(TABLES).where(TABLES.c.table_id == table_id).values(quota=quota, updated_ms=now))
                    continue
                moved = c.execute(
                    update(TABLES).where(TABLES.c.table_id == table_id).values(group_name=group, quota=quota, updated_ms=now)
                ).rowcount
                if not moved:
                    c.execute(
                        TABLES.insert().values(
                            table_id=table_id,
                            catalog=catalog,
                            table_name=name,
                            group_name=group,
                            status=TableStatus.IDLE,
                            quota=quota,
                            failures=0,
                            next_plan_ms=0,
                            updated_ms=now,
                        )
                    )
            gone = [t for t in existing if t not in found and existing[t].process_id is None]
            if gone:
                c.execute(TABLES.delete().where(TABLES.c.table_id.in_(gone)))

    def tables(self, group: str | None = None) -> list[TableRuntime]:
        query = select(TABLES).order_by(TABLES.c.table_id)
        if group is not None:
            query = query.where(TABLES.c.group_name == group)
        with self._read("tables") as c:
            return [record(TableRuntime, row) for row in c.execute(query)]

    def table(self, table_id: str) -> TableRuntime | None:
        with self._read("table") as c:
            row = c.execute(select(TABLES).where(TABLES.c.table_id == table_id)).first()
        return record(TableRuntime, row) if row is not None else None

    def begin_planning(self, table_id: str, optimizer_id: str) -> bool:
        """PLANNING, if ``optimizer_id`` holds the table's lease and no process is in flight;
        whether it began (False: read before another optimizer's process began, not ours)."""
        plan = TABLE.plan
        with self._write("begin_planning") as c:
            return bool(
                c.execute(
                    update(TABLES)
                    .where(
                        TABLES.c.table_id == table_id,
                        TABLES.c.owner == optimizer_id,
                        TABLES.c.process_id.is_(None),
                        TABLES.c.status.in_(plan.sources),
                    )
                    .values(status=plan.target, updated_ms=now_ms())
                ).rowcount
            )

    def defer_table(self, table_id: str, optimizer_id: str, *, next_plan_ms: int) -> None:
        """Nothing to plan now: IDLE until ``next_plan_ms``, and the lease goes."""
        defer = TABLE.defer
        with self._write("defer_table") as c:
            c.execute(
                update(TABLES)
                .where(TABLES.c.table_id == table_id, TABLES.c.owner == optimizer_id, TABLES.c.process_id.is_(None))
                .values(
                    status=defer.target,
                    pending_type=None,
                    next_plan_ms=next_plan_ms,
                    owner=None,
                    lease_ms=None,
                    updated_ms=now_ms(),
                )
            )

    def fail_table(self, table_id: str, optimizer_id: str, *, error: str, base_backoff_ms: int) -> bool:
        """A planning or maintenance of a table with no process in flight failed: FAILED with
        the back-off (:func:`record_failure`), and the lease goes. Whether it was recorded."""
        with self._write("fail_table") as c:
            held = c.execute(
                select(TABLES.c.table_id).where(TABLES.c.table_id == table_id, TABLES.c.owner == optimizer_id)
            ).first()
            failed = held is not None and record_failure(
                c, table_id, error=error, base_backoff_ms=base_backoff_ms, now=now_ms(), process_id=None
            )
            c.execute(
                update(TABLES)
                .where(TABLES.c.table_id == table_id, TABLES.c.owner == optimizer_id)
                .values(owner=None, lease_ms=None)
            )
        return failed

    def forget_process(self, table_id: str, process_id: int) -> None:
        """The table's process row is gone (deleted by hand): IDLE with no process, if it still names it."""
        with self._write("forget_process") as c:
            c.execute(
                update(TABLES)
                .where(TABLES.c.table_id == table_id, TABLES.c.process_id == process_id)
                .values(status=TABLE.cancel.target, process_id=None, updated_ms=now_ms())
            )

    def record_maintenance(self, table_id: str, *, error: str | None) -> None:
        """The table's maintenance ran now (``error``: why it failed; None: it succeeded)."""
        with self._write("record_maintenance") as c:
            c.execute(
                update(TABLES).where(TABLES.c.table_id == table_id).values(last_maintenance_ms=now_ms(), maintenance_error=error)
            )
