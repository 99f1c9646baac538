"""The system database: migrations from empty and from the previous version, exclusive claims, and
nothing in flight without a live owner. Each test runs on SQLite and on a real PostgreSQL server.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from mixed_iceberg.exceptions import SystemDatabaseError, TableBusyError
from mixed_iceberg.optimizer.sysdb.database import HEAD, SystemDatabase, now_ms
from mixed_iceberg.optimizer.sysdb.schema import METADATA
from mixed_iceberg.optimizer.sysdb.states import (
    PROCESS,
    TABLE,
    TASK,
    ProcessStatus,
    TableStatus,
    TaskStatus,
    Transition,
    backoff_ms,
)
from mixed_iceberg.optimizing.model import OptimizingType

FAR = 10**15  # a lease that does not run out within a test


@pytest.fixture
def db(db_url: str) -> Iterator[SystemDatabase]:
    database = SystemDatabase(db_url)
    database.migrate()
    yield database
    database.dispose()


def _plan(db: SystemDatabase, table_id: str = "local.db.t", tasks: int = 3, group: str = "g", max_retries: int = 5) -> int:
    db.sync_tables(group, [(table_id, "local", table_id.split(".", 1)[1], 0.5)])
    return db.create_process(
        table_id=table_id,
        group=group,
        type=OptimizingType.MINOR,
        planned_by="planner",
        base_metadata="base.metadata.json",
        change_metadata=None,
        unit=False,
        tasks=[(f'[{{"n":{i}}}]', 100 + i) for i in range(tasks)],
        max_retries=max_retries,
    )


def test_an_empty_database_migrates_to_the_schema_the_code_declares(db_url: str) -> None:
    db = SystemDatabase(db_url)
    assert db.schema_version() is None
    db.migrate()
    assert db.schema_version() == HEAD
    with db.engine.connect() as c:
        assert compare_metadata(MigrationContext.configure(c), METADATA) == []
    db.migrate()  # idempotent
    assert db.schema_version() == HEAD
    db.dispose()


def test_the_previous_schema_version_migrates_with_its_rows(db_url: str) -> None:
    db = SystemDatabase(db_url)
    db.migrate("0001")
    assert "last_maintenance_ms" not in {c["name"] for c in inspect(db.engine).get_columns("table_runtime")}
    with db.engine.begin() as c:
        c.execute(
            text(
                "INSERT INTO table_runtime (table_id, catalog, table_name, group_name, status, quota, failures, next_plan_ms, updated_ms) "
                "VALUES ('local.db.old', 'local', 'db.old', 'g', 'IDLE', 0.3, 0, 0, 1)"
            )
        )
    db.migrate()
    assert db.schema_version() == HEAD
    (old,) = db.tables("g")
    assert (old.table_id, old.quota, old.last_maintenance_ms) == ("local.db.old", 0.3, None)
    db.dispose()


def test_an_optimizer_starting_while_another_writes_a_fresh_sqlite_database_waits_for_it(tmp_path: Path) -> None:
    """Turning WAL on fails at once ("database is locked", no busy wait) while another connection
    holds a write transaction begun before WAL was on: two optimizers starting together on a fresh
    database (the PyFlink job's subtasks in thread mode) met it. The second one waits instead."""
    path = tmp_path / "system.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE other_writer (x INTEGER)")
    release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    release.start()
    db = SystemDatabase(f"sqlite:///{path}")
    started = time.monotonic()
    try:
        db.migrate()
    finally:
        release.join()
        other.close()
    assert time.monotonic() - started >= 0.4, "it waited for the other writer"
    assert db.schema_version() == HEAD
    db.dispose()


def test_a_table_lease_has_one_holder_until_it_runs_out(db: SystemDatabase) -> None:
    db.sync_tables("g", [("local.db.t", "local", "db.t", 0.5)])
    assert db.claim_table("local.db.t", "a", FAR)
    assert not db.claim_table("local.db.t", "b", FAR)
    assert db.claim_table("local.db.t", "a", FAR)  # the holder renews
    db.release_table("local.db.t", "a")
    assert db.claim_table("local.db.t", "b", now_ms() + 50)
    time.sleep(0.1)
    assert db.claim_table("local.db.t", "a", FAR)  # b's lease ran out


def test_racing_executors_schedule_each_task_once(db: SystemDatabase) -> None:
    process_id = _plan(db, tasks=20)
    claimed: list[tuple[int, int, str]] = []
    lock = threading.Lock()

    def executor(name: str) -> None:
        while (task := db.claim_task("local.db.t", name, 0, FAR)) is not None:
            with lock:
                claimed.append((task.process_id, task.task_id, name))

    threads = [threading.Thread(target=executor, args=(f"e{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted((p, t) for p, t, _ in claimed) == [(process_id, i) for i in range(20)]
    assert {t.status for t in db.tasks(process_id)} == {"SCHEDULED"}


def test_a_dead_optimizers_work_goes_back_without_counting_a_retry(db: SystemDatabase) -> None:
    dead = db.register_optimizer("g", "local", 1)
    alive = db.register_optimizer("g", "local", 1)
    process_id = _plan(db)
    assert db.claim_table("local.db.t", dead, FAR)
    task = db.claim_task("local.db.t", dead, 0, FAR)
    assert task is not None
    assert db.ack_task(task, dead, FAR)
    time.sleep(0.3)
    assert db.heartbeat(alive, FAR)
    assert db.reset_expired("g", heartbeat_timeout_ms=200, ack_timeout_ms=10**9) == 1
    (back,) = [t for t in db.tasks(process_id) if t.task_id == task.task_id]
    assert (back.status, back.owner, back.retries, back.runs) == ("PLANNED", None, 0, 1)
    assert db.table("local.db.t").owner is None  # type: ignore[union-attr]
    assert [o.optimizer_id for o in db.live_optimizers("g", 10**9)] == [alive]
    assert not db.heartbeat(dead, FAR)  # it learns it was declared dead


def test_a_task_never_acked_is_scheduled_again_and_a_late_one_is_a_failed_run(db: SystemDatabase) -> None:
    me = db.register_optimizer("g", "local", 2)
    process_id = _plan(db, tasks=2)
    unacked = db.claim_task("local.db.t", me, 0, FAR)
    late = db.claim_task("local.db.t", me, 1, FAR)
    assert unacked is not None
    assert late is not None
    assert db.ack_task(late, me, now_ms() + 50)  # its execute lease runs out at once
    time.sleep(0.2)
    db.reset_expired("g", heartbeat_timeout_ms=10**9, ack_timeout_ms=100)
    states = {t.task_id: (t.status, t.retries) for t in db.tasks(process_id)}
    assert states == {unacked.task_id: ("PLANNED", 0), late.task_id: ("PLANNED", 1)}


def test_a_task_out_of_retries_fails_and_the_table_backs_off(db: SystemDatabase) -> None:
    me = db.register_optimizer("g", "local", 1)
    process_id = _plan(db, tasks=1, max_retries=2)
    for expected in ("PLANNED", "PLANNED", "FAILED"):
        task = db.claim_task("local.db.t", me, 0, FAR)
        assert task is not None
        assert db.ack_task(task, me, FAR)
        assert db.fail_task(task, me, error="boom", duration_ms=5) == expected
    process = db.process(process_id)
    assert process is not None
    before = now_ms()
    db.finish_process(process, "FAILED", error="1 task failed: boom", backoff_ms=1000)
    after = now_ms()
    runtime = db.table("local.db.t")
    assert runtime is not None
    assert (runtime.status, runtime.failures, runtime.process_id, runtime.last_error) == (
        "FAILED",
        1,
        None,
        "1 task failed: boom",
    )
    # The first failure waits one backoff from the moment it was recorded (timed around the
    # call: measured after the reads that follow, a slow machine made it look too short).
    assert before + 1000 <= runtime.next_plan_ms <= after + 1000
    (task_row,) = db.tasks(process_id)
    assert (task_row.status, task_row.retries, task_row.runs, task_row.duration_ms) == ("FAILED", 3, 3, 15)


def test_a_completed_task_records_its_output_and_counts_toward_its_tables_executor_time(db: SystemDatabase) -> None:
    me = db.register_optimizer("g", "local", 1)
    process_id = _plan(db, tasks=1)
    task = db.claim_task("local.db.t", me, 0, FAR)
    assert task is not None
    assert db.ack_task(task, me, FAR)
    assert db.complete_task(task, me, output="[]", rows_in=10, rows_out=7, bytes_out=99, duration_ms=1234)
    assert not db.complete_task(task, me, output="[]", rows_in=1, rows_out=1, bytes_out=1, duration_ms=1)  # once
    (load,) = db.table_loads("g", 0)
    assert (load.executor_ms, load.running, load.waiting) == (1234, 0, False)
    process = db.process(process_id)
    assert process is not None
    db.finish_process(process, "SUCCESS", snapshot_id=42)
    done = db.process(process_id)
    assert done is not None
    assert (done.status, done.snapshot_id, done.rows_in, done.rows_out, done.bytes_out) == ("SUCCESS", 42, 10, 7, 99)
    assert db.table("local.db.t").last_minor_ms is not None  # type: ignore[union-attr]


def test_an_executor_reads_the_loads_of_the_tables_with_a_waiting_task_alone(db: SystemDatabase) -> None:
    # What an idle executor polls: with thousands of idle tables in the group, none is read.
    db.sync_tables("g", [("local.db.idle", "local", "db.idle", 0.5)])
    assert db.table_loads("g", 0, waiting_only=True) == []
    _plan(db, "local.db.t", tasks=1)
    db.sync_tables("g", [("local.db.t", "local", "db.t", 0.5), ("local.db.idle", "local", "db.idle", 0.5)])
    assert [(load.table_id, load.waiting) for load in db.table_loads("g", 0, waiting_only=True)] == [("local.db.t", True)]
    assert sorted(load.table_id for load in db.table_loads("g", 0)) == ["local.db.idle", "local.db.t"]


def test_a_process_ends_once_and_a_late_second_end_leaves_the_tables_next_process_alone(db: SystemDatabase) -> None:
    # Two optimizers read the table while process 1 was in flight; the first ends it and
    # plans process 2; the second, late, must neither end process 1 again nor detach process 2.
    first = _plan(db, tasks=1)
    stale = db.process(first)
    assert stale is not None
    assert db.finish_process(stale, "SUCCESS", snapshot_id=1)
    ended = db.process(first)
    assert ended is not None
    second = _plan(db, tasks=1)
    assert db.table("local.db.t").process_id == second  # type: ignore[union-attr]
    assert not db.finish_process(stale, "SUCCESS", snapshot_id=1)
    assert db.table("local.db.t").process_id == second  # type: ignore[union-attr]
    again = db.process(first)
    assert again is not None
    assert again.finished_ms == ended.finished_ms
    assert [t.status for t in db.tasks(second)] == ["PLANNED"]


def test_a_table_with_a_process_in_flight_gets_no_second_one(db: SystemDatabase) -> None:
    first = _plan(db, tasks=1)
    with pytest.raises(TableBusyError, match="a process is in flight"):
        _plan(db, tasks=1)
    assert db.claim_table("local.db.t", "planner", FAR)
    assert not db.begin_planning("local.db.t", "planner")
    assert [p.process_id for p in db.processes("local.db.t")] == [first]
    assert db.table("local.db.t").status == "MINOR"  # type: ignore[union-attr]


def test_a_task_whose_lease_runs_out_retries_by_its_tables_num_retries_not_the_default(db: SystemDatabase) -> None:
    # The table allows no retry (execute.num-retries = 0): one run that outlives its lease fails
    # the task for good. Before schema 3 every lapsed lease counted against the default of 5.
    me = db.register_optimizer("g", "local", 1)
    process_id = _plan(db, tasks=1, max_retries=0)
    task = db.claim_task("local.db.t", me, 0, FAR)
    assert task is not None
    assert db.ack_task(task, me, now_ms() + 50)
    time.sleep(0.15)
    db.reset_expired("g", heartbeat_timeout_ms=10**9, ack_timeout_ms=10**9)
    (row,) = db.tasks(process_id)
    assert (row.status, row.retries, row.max_retries) == (TaskStatus.FAILED, 1, 0)


def test_a_heartbeat_renews_table_leases_but_not_a_running_tasks_execute_deadline(db: SystemDatabase) -> None:
    # A task that hangs while its optimizer keeps heartbeating is still taken back when its
    # task-execute-timeout runs out (the heartbeat used to push that deadline forward).
    me = db.register_optimizer("g", "local", 1)
    process_id = _plan(db, tasks=1)
    assert db.claim_table("local.db.t", me, now_ms() + 50)
    task = db.claim_task("local.db.t", me, 0, FAR)
    assert task is not None
    assert db.ack_task(task, me, now_ms() + 100)
    assert db.heartbeat(me, FAR)
    assert db.table("local.db.t").lease_ms == FAR  # type: ignore[union-attr]
    time.sleep(0.2)
    db.reset_expired("g", heartbeat_timeout_ms=10**9, ack_timeout_ms=10**9)
    (row,) = db.tasks(process_id)
    assert (row.status, row.retries, row.owner) == (TaskStatus.PLANNED, 1, None)


def test_a_table_left_planning_and_a_process_left_committing_by_a_lapsed_lease_return_to_schedulable_states(
    db: SystemDatabase,
) -> None:
    process_id = _plan(db, tasks=1)
    db.sync_tables("g", [("local.db.t", "local", "db.t", 0.5), ("local.db.p", "local", "db.p", 0.5)])
    assert db.claim_table("local.db.p", "planner", now_ms() + 1000)
    assert db.begin_planning("local.db.p", "planner")
    assert db.claim_table("local.db.t", "committer", now_ms() + 1000)
    process = db.process(process_id)
    assert process is not None
    assert db.begin_commit(process, "committer")
    assert (db.table("local.db.t").status, db.process(process_id).status) == ("COMMITTING", "COMMITTING")  # type: ignore[union-attr]
    db.reset_expired("g", heartbeat_timeout_ms=10**9, ack_timeout_ms=10**9)
    assert db.table("local.db.p").status is TableStatus.PLANNING  # type: ignore[union-attr]  # leases still run
    time.sleep(1.1)
    db.reset_expired("g", heartbeat_timeout_ms=10**9, ack_timeout_ms=10**9)
    assert db.table("local.db.p").status is TableStatus.IDLE  # type: ignore[union-attr]
    table = db.table("local.db.t")
    assert table is not None
    assert (table.status, table.process_id, table.owner) == (TableStatus.MINOR, process_id, None)
    assert db.process(process_id).status is ProcessStatus.RUNNING  # type: ignore[union-attr]
    # The next holder commits it; a begin_commit by one who does not hold the lease is refused.
    assert not db.begin_commit(process, "committer")
    assert db.claim_table("local.db.t", "next", FAR)
    assert db.begin_commit(process, "next")
    assert db.finish_process(process, ProcessStatus.SUCCESS, snapshot_id=7)
    assert db.table("local.db.t").status is TableStatus.IDLE  # type: ignore[union-attr]


def test_a_failure_backs_off_by_one_formula_whoever_records_it(db: SystemDatabase) -> None:
    # A planning failure (fail_table) and a failed process (finish_process) count the same
    # consecutive failures and wait the same doubled back-off.
    db.sync_tables("g", [("local.db.t", "local", "db.t", 0.5)])
    waits = []
    for attempt in range(3):
        before = now_ms()
        if attempt == 1:
            process = db.process(_plan(db, tasks=1))
            assert process is not None
            assert db.finish_process(process, ProcessStatus.FAILED, error="boom", backoff_ms=1000)
        else:
            assert db.claim_table("local.db.t", "me", FAR)
            assert db.begin_planning("local.db.t", "me")
            assert db.fail_table("local.db.t", "me", error="planning failed", base_backoff_ms=1000)
        runtime = db.table("local.db.t")
        assert runtime is not None
        assert (runtime.status, runtime.failures, runtime.owner) == (TableStatus.FAILED, attempt + 1, None)
        waits.append(runtime.next_plan_ms - before)
    assert [backoff_ms(1000, n) for n in (1, 2, 3)] == [1000, 2000, 4000]
    for wait, expected in zip(waits, (1000, 2000, 4000), strict=True):
        assert expected <= wait < expected + 1000
    assert not db.fail_table("local.db.t", "not-the-holder", error="x", base_backoff_ms=1000)


def test_every_status_read_back_is_an_enum_and_an_unknown_one_is_refused_by_name(db: SystemDatabase) -> None:
    process_id = _plan(db, tasks=1)
    assert type(db.table("local.db.t").status) is TableStatus  # type: ignore[union-attr]
    assert type(db.process(process_id).status) is ProcessStatus  # type: ignore[union-attr]
    assert db.process(process_id).type is OptimizingType.MINOR  # type: ignore[union-attr]
    assert type(db.tasks(process_id)[0].status) is TaskStatus
    with db.engine.begin() as c:
        c.execute(text("UPDATE table_runtime SET status = 'SLEEPING'"))
    with pytest.raises(SystemDatabaseError, match=r"expected a TableStatus \(IDLE, .*\), found 'SLEEPING'"):
        db.table("local.db.t")


def test_every_transition_has_an_owner_and_every_in_flight_state_a_deadline_or_a_round_that_moves_it() -> None:
    transitions = [
        value for machine in (TASK, PROCESS, TABLE) for value in vars(machine).values() if isinstance(value, Transition)
    ]
    assert len(transitions) >= 15
    assert all(t.owner for t in transitions)
    # The states a holder enters and may leave hanging each carry the deadline that ends them.
    entered_with_deadline = {t.target for t in transitions if t.deadline is not None}
    assert {TaskStatus.SCHEDULED, TaskStatus.ACKED, ProcessStatus.COMMITTING, TableStatus.PLANNING} <= entered_with_deadline
    # ... and reset_expired moves each of them back to a schedulable state.
    back = {(t.sources, t.target) for t in (TASK.give_back, TASK.retry, PROCESS.resume, TABLE.unstick)}
    assert ((TaskStatus.SCHEDULED, TaskStatus.ACKED), TaskStatus.PLANNED) in back
    assert ((ProcessStatus.COMMITTING,), ProcessStatus.RUNNING) in back
    assert ((TableStatus.PLANNING,), TableStatus.IDLE) in back


def test_operator_queries_give_a_tables_process_history_its_groups_queue_and_its_runtime(db: SystemDatabase) -> None:
    hour = 3_600_000
    me = db.register_optimizer("g", "local", 2)
    db.register_optimizer("h", "local", 1)
    first = _plan(db, tasks=1)
    task = db.claim_task("local.db.t", me, 0, FAR)
    assert task is not None
    assert db.ack_task(task, me, FAR)
    assert db.complete_task(task, me, output="[]", rows_in=10, rows_out=7, bytes_out=99, duration_ms=1500)
    process = db.process(first)
    assert process is not None
    assert db.finish_process(process, ProcessStatus.SUCCESS, snapshot_id=1)
    second = _plan(db, tasks=3)
    running = db.claim_task("local.db.t", me, 0, FAR)
    scheduled = db.claim_task("local.db.t", me, 1, FAR)
    assert running is not None
    assert scheduled is not None
    assert db.ack_task(running, me, FAR)

    history = db.process_history("local.db.t")
    assert [h.process.process_id for h in history] == [second, first]  # newest first
    assert [t.status for t in history[0].tasks] == [TaskStatus.ACKED, TaskStatus.SCHEDULED, TaskStatus.PLANNED]
    assert [(t.status, t.rows_out) for t in history[1].tasks] == [(TaskStatus.SUCCESS, 7)]
    assert history[0].duration_ms is None
    assert history[1].duration_ms is not None
    assert history[1].duration_ms >= 0
    assert [h.process.process_id for h in db.process_history("local.db.t", limit=1)] == [second]
    assert db.process_history("local.db.none") == []

    queues = {q.group_name: q for q in db.group_queues(window_ms=hour, heartbeat_timeout_ms=hour)}
    assert set(queues) == {"g", "h"}  # h: an optimizer and nothing to do
    g = queues["g"]
    assert (g.live_optimizers, g.threads, g.tasks_planned, g.tasks_scheduled, g.tasks_acked) == (1, 2, 1, 1, 1)
    assert (g.tables, g.tables_failed, g.processes_running, g.processes_committing) == (1, 0, 1, 0)
    assert g.executor_ms >= 1500  # the finished run, plus the running one up to now
    assert g.occupation == pytest.approx(g.executor_ms / hour / 2)
    h = queues["h"]
    assert (h.live_optimizers, h.threads, h.tasks_planned, h.tables, h.executor_ms) == (1, 1, 0, 0, 0)

    (stats,) = db.table_stats("g", window_ms=hour)
    assert stats.runtime.table_id == "local.db.t"
    assert stats.runtime.status is TableStatus.MINOR
    assert (stats.tasks_running, stats.tasks_waiting, stats.processes_succeeded, stats.processes_failed) == (2, 1, 1, 0)
    assert stats.executor_ms >= 1500
    assert stats.last_process is not None
    assert stats.last_process.process_id == second
    assert db.table_stats("h", window_ms=hour) == []
    assert [s.runtime.table_id for s in db.table_stats(window_ms=hour)] == ["local.db.t"]
    # The metrics' queries: g's optimizer holds tasks in flight, h's is idle; processes by type and status.
    assert db.idle_optimizers(heartbeat_timeout_ms=hour) == {"h": 1}
    assert db.process_totals() == {
        ("local.db.t", OptimizingType.MINOR, ProcessStatus.SUCCESS): 1,
        ("local.db.t", OptimizingType.MINOR, ProcessStatus.RUNNING): 1,
    }
    # The dashboard's table list: a few columns per table; failed tasks per group (none failed here).
    (state,) = db.table_states()
    assert (state.table_id, state.group_name, state.status, state.failures) == ("local.db.t", "g", TableStatus.MINOR, 0)
    assert state.last_optimized_ms is not None
    assert state.last_optimized_ms == stats.runtime.last_optimized_ms
    assert db.failed_tasks() == {}
