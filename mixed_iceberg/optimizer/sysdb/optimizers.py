"""Groups, optimizers and leases: who is alive, and who holds which table.

* An optimizer registers and then heartbeats; each heartbeat renews the leases on the tables
  it holds. An optimizer whose heartbeat is older than the group's ``heartbeat-timeout`` is
  dead (:meth:`~mixed_iceberg.optimizer.sysdb.tasks.ProcessesAndTasks.reset_expired` stops it).
* A table is planned and committed only by the optimizer holding its lease
  (:meth:`OptimizersAndLeases.claim_table`): a conditional ``UPDATE`` that succeeds for one
  optimizer only. :func:`release_owner` is the one place an optimizer's work is given back.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Mapping

from sqlalchemy import or_, select, update
from sqlalchemy.engine import Connection

from mixed_iceberg.optimizer.sysdb.connection import Connected
from mixed_iceberg.optimizer.sysdb.records import GroupRecord, OptimizerRecord, now_ms, record
from mixed_iceberg.optimizer.sysdb.schema import GROUPS, OPTIMIZERS, TABLES, TASKS
from mixed_iceberg.optimizer.sysdb.states import TABLE, TASK, TableStatus

__all__ = ["OptimizersAndLeases", "release_owner"]


def release_owner(c: Connection, optimizer_id: str) -> int:
    """Give back what ``optimizer_id`` holds (it stopped, or was declared dead): its in-flight
    tasks go back to PLANNED (not a retry), its table leases end, and a table it was planning
    shows IDLE again. Returns how many tasks went back."""
    give_back = TASK.give_back
    tasks = c.execute(
        update(TASKS)
        .where(TASKS.c.owner == optimizer_id, TASKS.c.status.in_(give_back.sources))
        .values(status=give_back.target, owner=None, thread=None, lease_ms=None)
    ).rowcount
    c.execute(
        update(TABLES)
        .where(TABLES.c.owner == optimizer_id, TABLES.c.status.in_(TABLE.unstick.sources), TABLES.c.process_id.is_(None))
        .values(status=TABLE.unstick.target)
    )
    c.execute(update(TABLES).where(TABLES.c.owner == optimizer_id).values(owner=None, lease_ms=None))
    return int(tasks)


class OptimizersAndLeases(Connected):
    """The verbs on groups, optimizers and table leases."""

    def upsert_group(self, name: str, container: str, properties: Mapping[str, str]) -> None:
        """Record the group as started now (its container and properties as written)."""
        text = json.dumps(dict(properties), sort_keys=True)
        with self._write("upsert_group") as c:
            changed = c.execute(
                update(GROUPS).where(GROUPS.c.name == name).values(container=container, properties=text, updated_ms=now_ms())
            ).rowcount
            if changed == 0:
                c.execute(GROUPS.insert().values(name=name, container=container, properties=text, updated_ms=now_ms()))

    def groups(self) -> list[GroupRecord]:
        with self._read("groups") as c:
            return [record(GroupRecord, row) for row in c.execute(select(GROUPS).order_by(GROUPS.c.name))]

    def register_optimizer(self, group: str, container: str, threads: int) -> str:
        """A fresh optimizer id, alive as of now."""
        optimizer_id = f"{socket.gethostname()[:32]}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        now = now_ms()
        with self._write("register_optimizer") as c:
            c.execute(
                OPTIMIZERS.insert().values(
                    optimizer_id=optimizer_id,
                    group_name=group,
                    container=container,
                    threads=threads,
                    host=socket.gethostname()[:255],
                    pid=os.getpid(),
                    started_ms=now,
                    heartbeat_ms=now,
                    stopped_ms=None,
                )
            )
        return optimizer_id

    def heartbeat(self, optimizer_id: str, lease_ms: int) -> bool:
        """Renew ``optimizer_id``'s heartbeat and the leases on its tables until ``lease_ms``.

        A running task's deadline is its own (``task-execute-timeout``, set when it is acked):
        a heartbeat does not extend it, so a task that hangs is taken back even while its
        optimizer lives. Returns False when the optimizer was declared dead meanwhile (it must
        stop its work: its tasks and tables went to others).
        """
        with self._write("heartbeat") as c:
            alive = c.execute(
                update(OPTIMIZERS)
                .where(OPTIMIZERS.c.optimizer_id == optimizer_id, OPTIMIZERS.c.stopped_ms.is_(None))
                .values(heartbeat_ms=now_ms())
            ).rowcount
            if not alive:
                return False
            c.execute(update(TABLES).where(TABLES.c.owner == optimizer_id).values(lease_ms=lease_ms))
        return True

    def stop_optimizer(self, optimizer_id: str) -> None:
        """Unregister: its tables' leases end and its unfinished tasks go back to PLANNED (not a retry)."""
        with self._write("stop_optimizer") as c:
            c.execute(update(OPTIMIZERS).where(OPTIMIZERS.c.optimizer_id == optimizer_id).values(stopped_ms=now_ms()))
            release_owner(c, optimizer_id)

    def live_optimizers(self, group: str | None, timeout_ms: int) -> list[OptimizerRecord]:
        """Optimizers (of ``group``, or all) that heartbeat within ``timeout_ms`` and did not stop."""
        query = select(OPTIMIZERS).where(OPTIMIZERS.c.stopped_ms.is_(None), OPTIMIZERS.c.heartbeat_ms >= now_ms() - timeout_ms)
        if group is not None:
            query = query.where(OPTIMIZERS.c.group_name == group)
        with self._read("live_optimizers") as c:
            return [record(OptimizerRecord, row) for row in c.execute(query.order_by(OPTIMIZERS.c.started_ms))]

    def optimizers(self, group: str | None = None) -> list[OptimizerRecord]:
        """Every optimizer ever registered (of ``group``, or all), oldest first, stopped ones included."""
        query = select(OPTIMIZERS).order_by(OPTIMIZERS.c.started_ms)
        if group is not None:
            query = query.where(OPTIMIZERS.c.group_name == group)
        with self._read("optimizers") as c:
            return [record(OptimizerRecord, row) for row in c.execute(query)]

    def group_threads(self, group: str, timeout_ms: int) -> int:
        """Executor threads of the group's live optimizers (at least 1, as Amoro counts them)."""
        return max(1, sum(o.threads for o in self.live_optimizers(group, timeout_ms)))

    def claim_table(self, table_id: str, optimizer_id: str, lease_ms: int) -> bool:
        """Take (or keep) ``table_id``'s lease until ``lease_ms``: only its holder plans and commits it."""
        with self._write("claim_table") as c:
            won = c.execute(
                update(TABLES)
                .where(
                    TABLES.c.table_id == table_id,
                    or_(TABLES.c.owner.is_(None), TABLES.c.owner == optimizer_id, TABLES.c.lease_ms < now_ms()),
                )
                .values(owner=optimizer_id, lease_ms=lease_ms)
            ).rowcount
        return bool(won)

    def release_table(self, table_id: str, optimizer_id: str) -> None:
        """Let ``table_id``'s lease go, if ``optimizer_id`` holds it; a table left PLANNING shows IDLE."""
        with self._write("release_table") as c:
            mine = (TABLES.c.table_id == table_id, TABLES.c.owner == optimizer_id)
            c.execute(
                update(TABLES)
                .where(*mine, TABLES.c.status == TableStatus.PLANNING, TABLES.c.process_id.is_(None))
                .values(status=TABLE.unstick.target, updated_ms=now_ms())
            )
            c.execute(update(TABLES).where(*mine).values(owner=None, lease_ms=None))
