"""Chaos at the system database's connection: it drops, then stalls, at every step of a process.

Amoro's most reported stuck states (a process left COMMITTING or RUNNING after a database
hiccup: apache/amoro #3365, #4172, #4235) are what this guards against. A real optimizer
service optimizes a real table while its database connection fails at the first transaction
of each step (plan, claim, ack, complete, commit bookkeeping) and stalls at the second, past
the task-ack timeout (one process meets the drops, the next the stalls). Afterwards no table, process or task is stuck, every in-flight state
went back to a schedulable one within its deadline (sampled throughout by a second,
fault-free connection), and the merged view is what it was. On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from mixed_iceberg import MixedCatalog
from mixed_iceberg.optimizer.config import parse_optimizer_config
from mixed_iceberg.optimizer.service import OptimizerService
from mixed_iceberg.optimizer.sysdb.database import ProcessStatus, SystemDatabase, TableStatus, TaskStatus
from tests.support.db_faults import ConnectionFaults, Fault
from tests.support.optimizer import DUE, churn, wait_for
from tests.support.tables import ORDERS_SCHEMA, changes, local_catalog, rows_of

#: The steps of one process, in the order it passes them.
STEPS = (
    "begin_planning",  # plan
    "create_process",
    "claim_task",  # claim
    "ack_task",  # ack
    "complete_task",  # complete
    "begin_commit",  # commit bookkeeping
    "finish_process",
    "release_table",
)
ACK_TIMEOUT_S = 1.0
EXECUTE_TIMEOUT_S = 4.0
HEARTBEAT_TIMEOUT_S = 3.0
REFRESH_S = 0.3
#: How long each in-flight state may last: its deadline, plus the round that acts on it and a
#: margin for a loaded machine.
SLACK_S = 4.0
DEADLINES_S = {
    ("task", TaskStatus.SCHEDULED): ACK_TIMEOUT_S,
    ("task", TaskStatus.ACKED): EXECUTE_TIMEOUT_S,
    ("table", TableStatus.PLANNING): HEARTBEAT_TIMEOUT_S,
    ("table", TableStatus.COMMITTING): HEARTBEAT_TIMEOUT_S,
    ("process", ProcessStatus.COMMITTING): HEARTBEAT_TIMEOUT_S,
}


class StateWatch:
    """Samples the in-flight rows every 50 ms; the longest each stayed in one state."""

    def __init__(self, db: SystemDatabase) -> None:
        self.db = db
        self.since: dict[tuple[str, object, object], float] = {}
        self.longest: dict[tuple[str, object], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            now = time.monotonic()
            states: set[tuple[str, object, object]] = set()
            states.update(("task", (t.process_id, t.task_id), t.status) for t in self.db.tasks())
            states.update(("table", t.table_id, t.status) for t in self.db.tables())
            states.update(("process", p.process_id, p.status) for p in self.db.processes())
            for key in list(self.since):
                if key not in states:
                    del self.since[key]
            for key in states:
                start = self.since.setdefault(key, now)
                kind, _, status = key
                if (kind, status) in DEADLINES_S:
                    self.longest[(kind, status)] = max(self.longest.get((kind, status), 0.0), now - start)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def test_a_process_survives_its_database_connection_dropping_and_stalling_at_every_step(db_url: str, tmp_path: Path) -> None:
    url = db_url
    catalog: MixedCatalog = local_catalog(tmp_path / "catalog")
    table = catalog.create_table("db.chaos", ORDERS_SCHEMA, primary_key=["id"], properties=DUE)
    table.bulk_load(changes([("+I", k, "a", k, 1.0) for k in range(200)]).drop_columns(["_change_action"]))
    churn(table, 4)
    before = sorted(rows_of(table.scan().to_arrow()))
    config = parse_optimizer_config(
        {
            "system-database": url,
            "optimizer_groups": [
                {
                    "name": "default",
                    "properties": {
                        "refresh-interval": f"{int(REFRESH_S * 1000)}ms",
                        "heartbeat-interval": "200ms",
                        "heartbeat-timeout": f"{int(HEARTBEAT_TIMEOUT_S * 1000)}ms",
                        "task-ack-timeout": f"{int(ACK_TIMEOUT_S * 1000)}ms",
                        "task-execute-timeout": f"{int(EXECUTE_TIMEOUT_S * 1000)}ms",
                        "maintenance-interval": "0",
                        "failure-backoff": "200ms",
                    },
                }
            ],
        }
    )
    service = OptimizerService(config, "default", threads=1, catalogs={"local": catalog})
    drops = ConnectionFaults(service.db.engine, [Fault(step, 1, "fail") for step in STEPS])
    stalls: ConnectionFaults | None = None
    observer = SystemDatabase(url)
    service.start()  # migrates the database the watch reads
    watch = StateWatch(observer)
    try:
        wait_for(
            lambda: _successes(observer) >= 1 and {f.step for f in drops.fired} >= set(STEPS),
            timeout=120,
            what="a successful process after a dropped connection at every step",
        )
        drops.remove()
        # More change: the next process passes every step again, and each step's first
        # transaction stalls past the task-ack timeout.
        stalls = ConnectionFaults(service.db.engine, [Fault(step, 1, "stall", ACK_TIMEOUT_S * 1.5) for step in STEPS])
        churn(table, 4)
        before = sorted(rows_of(table.refresh().scan().to_arrow()))
        wait_for(
            lambda: _successes(observer) >= 2 and {f.step for f in stalls.fired} >= set(STEPS),
            timeout=120,
            what="a second successful process after a stalled connection at every step",
        )
        # Then nothing in flight anywhere.
        wait_for(lambda: _settled(observer, table_id="local.db.chaos"), timeout=60, what="no table, process or task in flight")
    finally:
        drops.remove()
        if stalls is not None:
            stalls.remove()
        service.stop()
        watch.stop()
    assert {f.step for f in drops.fired} == set(STEPS), "a step was renamed: the test no longer reaches it"
    assert {f.step for f in stalls.fired} == set(STEPS)
    runtime = observer.table("local.db.chaos")
    assert runtime is not None
    assert runtime.status in (TableStatus.IDLE, TableStatus.FAILED)
    assert runtime.process_id is None
    assert runtime.last_minor_ms is not None
    # The stalls held each in-flight state long enough for the watch to see it.
    assert set(DEADLINES_S) <= watch.longest.keys()
    for kind_status, longest in watch.longest.items():
        assert longest <= DEADLINES_S[kind_status] + SLACK_S, f"{kind_status} lasted {longest:.1f} s"
    observer.dispose()
    table.refresh()
    assert sorted(rows_of(table.scan().to_arrow())) == before
    assert table.optimizing.evaluate().type is None, "every change was optimized"


def _successes(db: SystemDatabase) -> int:
    return sum(p.status is ProcessStatus.SUCCESS for p in db.processes("local.db.chaos"))


def _settled(db: SystemDatabase, *, table_id: str) -> bool:
    if any(t.status not in (*TaskStatus.done(), TaskStatus.CANCELED) for t in db.tasks()):
        return False
    if any(p.status not in ProcessStatus.ended() for p in db.processes()):
        return False
    runtime = db.table(table_id)
    return runtime is not None and runtime.process_id is None and runtime.status in (TableStatus.IDLE, TableStatus.FAILED)
