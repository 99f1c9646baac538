"""The optimizer service keeps a group's tables healthy on its own, and a bad table harms no sibling.

Real parts: SQLite catalogs and system database, real keyed tables, the service's own threads.
"""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from mixed_iceberg import MixedCatalog, MixedTable, TableFormat
from mixed_iceberg.basestore.optimized_sequence import read_optimized_sequence
from mixed_iceberg.optimizer import coordination
from mixed_iceberg.optimizer import execution as execution_module
from mixed_iceberg.optimizer.config import OptimizerConfig, parse_optimizer_config
from mixed_iceberg.optimizer.report import group_report, warnings
from mixed_iceberg.optimizer.service import OptimizerService
from mixed_iceberg.optimizer.sysdb.database import ProcessRecord, ProcessStatus, SystemDatabase, TableRuntime, TaskRecord
from mixed_iceberg.optimizer.work import ExecutedTask
from mixed_iceberg.optimizing.model import OptimizingType
from tests.support.optimizer import DUE, churn, due_table, successes, wait_for
from tests.support.tables import ORDERS_SCHEMA, changes, rows_of

#: Short intervals, so that a test sees several rounds within seconds.
FAST = {
    "refresh-interval": "300ms",
    "heartbeat-interval": "200ms",
    "heartbeat-timeout": "3s",
    "maintenance-interval": "0",
    "failure-backoff": "1min",
}
_ids = itertools.count()


def config(tmp_path: Path, **groups: dict[str, str]) -> OptimizerConfig:
    return parse_optimizer_config(
        {
            "system-database": f"sqlite:///{tmp_path}/system.db",
            "optimizer_groups": [{"name": name, "properties": {**FAST, **props}} for name, props in groups.items()],
        }
    )


def test_a_group_optimizes_its_tables_without_anyone_asking(
    tmp_path: Path, catalog: MixedCatalog, services: list[OptimizerService]
) -> None:
    served = [due_table(catalog, "a"), due_table(catalog, "b", **{"self-optimizing.group": "g"})]
    served[0].update_properties({"self-optimizing.group": "g"})
    elsewhere = due_table(catalog, "other", **{"self-optimizing.group": "h"})
    disabled = due_table(catalog, "off", **{"self-optimizing.group": "g", "self-optimizing.enabled": "false"})
    before = {t.name: sorted(rows_of(t.scan().to_arrow())) for t in [*served, elsewhere, disabled]}
    service = OptimizerService(config(tmp_path, g={}, h={}), "g", threads=2, catalogs={"local": catalog})
    services.append(service.start())
    db = service.db
    wait_for(lambda: all(successes(db, f"local.{t.name}") >= 1 for t in served), what="both tables of group g optimized")
    for table in served:
        table.refresh()
        assert sorted(rows_of(table.scan().to_arrow())) == before[table.name]
        assert table.optimizing.evaluate().type is None, "nothing is due after the service's run"
    assert {t.table_id for t in db.tables()} == {"local.db.a", "local.db.b"}
    first = next(p for p in db.processes("local.db.a") if p.status == "SUCCESS")
    assert first.files_in > 0  # the change files merged (and base files rewritten)
    assert first.files_out > 0
    assert first.rows_in > 0
    assert db.processes("local.db.other") == []
    assert db.processes("local.db.off") == []
    # Planned again each round (nothing is due, so it is found IDLE and its lease let go again).
    wait_for(lambda: getattr(db.table("local.db.a"), "status", None) == "IDLE", what="table a idle")
    runtime = db.table("local.db.a")
    assert runtime is not None
    assert runtime.last_minor_ms is not None
    assert runtime.failures == 0
    # More change arrives: the service notices on its own.
    churn(served[0], 4)
    wait_for(lambda: len([p for p in db.processes("local.db.a") if p.status == "SUCCESS"]) >= 2, what="the second round")
    assert warnings(group_report(db, service.config)) == []


def test_a_table_is_planned_when_its_min_plan_interval_runs_out_not_at_the_next_refresh(
    tmp_path: Path, catalog: MixedCatalog, services: list[OptimizerService]
) -> None:
    # Refresh rounds 30 s apart: a plan that waited for one would come far too late.
    table = due_table(catalog, "steady", **{"self-optimizing.min-plan-interval": "1500"})
    service = OptimizerService(config(tmp_path, default={"refresh-interval": "30s"}), "default", catalogs={"local": catalog})
    done = threading.Event()

    def keep_writing() -> None:  # change keeps arriving, so the table is due whenever it may be planned
        while not done.wait(0.2):
            churn(table, 1)

    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    try:
        services.append(service.start())
        wait_for(lambda: len([p for p in service.db.processes("local.db.steady") if p.status == "SUCCESS"]) >= 3,
                 timeout=20, what="three processes, one per min-plan-interval")  # fmt: skip
    finally:
        done.set()
        writer.join()
    processes = sorted((p for p in service.db.processes("local.db.steady") if p.status == "SUCCESS"), key=lambda p: p.process_id)
    for previous, following in itertools.pairwise(processes[:3]):
        assert previous.finished_ms is not None
        # Not before the interval (counted from the commit, which precedes finished_ms), and
        # promptly after it: well within a second, against a 30 s refresh.
        wait = following.planned_ms - previous.finished_ms
        assert 1000 <= wait <= 1500 + 1000, (previous, following)


def test_a_poisoned_table_fails_with_its_error_and_its_siblings_are_served(
    tmp_path: Path, catalog: MixedCatalog, services: list[OptimizerService]
) -> None:
    bad = due_table(catalog, "bad", **{"self-optimizing.execute.num-retries": "1"})
    due_table(catalog, "good")
    # One of the bad table's change files is garbage: every execution of its task fails.
    change_file = bad.change_store.inspect.files().column("file_path")[0].as_py()  # type: ignore[union-attr]
    Path(change_file.removeprefix("file://")).write_bytes(b"not parquet at all")
    service = OptimizerService(config(tmp_path, default={}), "default", threads=1, catalogs={"local": catalog})
    services.append(service.start())
    db = service.db
    wait_for(lambda: getattr(db.table("local.db.bad"), "status", None) == "FAILED", what="the bad table FAILED")
    wait_for(lambda: successes(db, "local.db.good") >= 1, what="the good table optimized")
    runtime = db.table("local.db.bad")
    assert runtime is not None
    assert runtime.failures == 1
    assert runtime.last_error is not None
    assert "1 task(s) failed after their retries" in runtime.last_error
    assert runtime.next_plan_ms > time.time() * 1000 + 30_000  # backs off (failure-backoff 1 min)
    (task,) = db.tasks(db.processes("local.db.bad")[0].process_id)
    assert (task.status, task.runs, task.retries) == ("FAILED", 2, 2)  # num-retries 1: two runs
    assert "Parquet" in (task.error or "") or "parquet" in (task.error or "")
    lines = warnings(group_report(db, service.config))
    assert any(line.startswith("table local.db.bad FAILED (1 time(s) in a row)") for line in lines)


def test_a_group_without_a_live_optimizer_is_reported(tmp_path: Path) -> None:
    cfg = config(tmp_path, lonely={})
    db = SystemDatabase(cfg.system_database)
    db.migrate()
    db.sync_tables("lonely", [("local.db.t", "local", "db.t", 0.5)])
    db.create_process(
        table_id="local.db.t",
        group="lonely",
        type=OptimizingType.MINOR,
        planned_by="gone",
        base_metadata="m",
        change_metadata=None,
        unit=False,
        tasks=[("[]", 1), ("[]", 1)],
        max_retries=3,
    )
    assert warnings(group_report(db, cfg)) == ["group lonely has no live optimizer; 2 tasks pending, 1 table(s) waiting"]
    db.register_optimizer("lonely", "local", 1)
    assert warnings(group_report(db, cfg)) == []


def test_two_optimizers_of_a_group_share_its_tables_and_never_overlap_on_one(
    tmp_path: Path, catalog: MixedCatalog, services: list[OptimizerService]
) -> None:
    tables = [due_table(catalog, f"t{i}") for i in range(4)]
    cfg = config(tmp_path, default={})
    for _ in range(2):
        services.append(OptimizerService(cfg, "default", threads=1, catalogs={"local": catalog}).start())
    stop = threading.Event()

    def writer() -> None:  # continuous writes while the optimizers work
        while not stop.is_set():
            for table in tables:
                churn(table, 1)
            time.sleep(0.05)

    thread = threading.Thread(target=writer)
    thread.start()
    db = services[0].db
    try:
        wait_for(
            lambda: all(len([p for p in db.processes(f"local.db.t{i}") if p.status == "SUCCESS"]) >= 2 for i in range(4)),
            timeout=120,
            what="every table optimized twice",
        )
    finally:
        stop.set()
        thread.join()
    for i, table in enumerate(tables):
        processes = db.processes(f"local.db.t{i}")
        spans = sorted((p.planned_ms, p.finished_ms or 2**62) for p in processes)
        assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans)), f"t{i}: processes overlap: {spans}"
        table.refresh()
        keys = table.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()
        assert len(keys) == len(set(keys)), "one row per key"
    owners = {t.owner for t in db.tasks() if t.status == "SUCCESS"} | {p.planned_by for p in db.processes()}
    assert owners <= {s.optimizer_id for s in services}


def _partitioned(catalog: MixedCatalog, name: str, rows: int, **properties: str) -> MixedTable:
    table = catalog.create_table(
        f"db.{name}", ORDERS_SCHEMA, primary_key=["id"], partition_by=["bucket(8, id)"], properties={**DUE, **properties}
    )
    table.bulk_load(changes([("+I", k, "a", k, 1.0) for k in range(rows)]).drop_columns(["_change_action"]))
    return table


def _spread_churn(table: MixedTable, rows: int) -> None:
    """One commit touching every partition: a process of eight tasks."""
    keys = [next(_ids) % rows for _ in range(64)]
    with table.new_transaction() as txn:
        txn.write(changes([row for k in dict.fromkeys(keys) for row in (("-U", k, "a", k, 1.0), ("+U", k, "b", k, 2.0))]))


@pytest.mark.slow
def test_executor_time_follows_the_quotas_when_the_group_is_saturated(
    tmp_path: Path, catalog: MixedCatalog, services: list[OptimizerService]
) -> None:
    """Two tables under continuous writes, quotas 0.9 and 0.1, one executor thread: both are
    optimized and the 0.9 table gets most of the executor time.

    Measured here: 0.71 and 0.72 of it in two runs (equal quotas would give 0.5). It falls short of
    0.9 because a table has one process at a time. Between the last task of the 0.9 table's
    process and its next plan (the commit, then planning), only the 0.1 table has a task
    waiting, and the free thread takes it (Amoro's break-quota-limit, on by default). When
    both tables always have a task waiting, the policy alone gives 0.9 within 2 points
    (test_scheduling.py). Asserted: at least 0.6."""
    rows = 40_000
    big = _partitioned(catalog, "big", rows, **{"self-optimizing.quota": "0.9"})
    small = _partitioned(catalog, "small", rows, **{"self-optimizing.quota": "0.1"})
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            for table in (big, small):
                _spread_churn(table, rows)
            time.sleep(0.02)

    thread = threading.Thread(target=writer)
    thread.start()
    service = OptimizerService(
        config(tmp_path, default={"quota-look-back": "10min"}), "default", threads=1, catalogs={"local": catalog}
    )
    services.append(service.start())
    try:
        time.sleep(25)
    finally:
        stop.set()
        thread.join()
    loads = {load.table_id: load.executor_ms for load in service.db.table_loads("default", 0)}
    share = loads["local.db.big"] / (loads["local.db.big"] + loads["local.db.small"])
    print(f"executor ms: {loads}; share of the 0.9 table: {share:.3f}")
    assert successes(service.db, "local.db.big") >= 1
    assert successes(service.db, "local.db.small") >= 1
    assert 0.6 <= share <= 0.95


@pytest.mark.slow
def test_a_long_full_optimize_in_one_group_never_delays_another_groups_minor(
    tmp_path: Path, catalog: MixedCatalog, services: list[OptimizerService], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The heavy table's full optimize is held open (its tasks wait on a gate, up to 60 s) until
    the other group's minor has committed, so the test does not race the full's speed: if
    anything the stream group does waited on the batch group, the minor would not finish while
    the full is held, and the test would fail on the wait."""
    heavy_rows = 40_000
    heavy = _partitioned(
        catalog, "heavy", heavy_rows, **{"self-optimizing.group": "batch", "self-optimizing.full.trigger.interval": "0"}
    )
    _spread_churn(heavy, heavy_rows)
    light = due_table(catalog, "light", commits=0, **{"self-optimizing.group": "stream"})
    gate = threading.Event()
    held: list[int] = []
    real_run_task = execution_module.run_task

    def gated_run_task(table: MixedTable, process: ProcessRecord, task: TaskRecord) -> ExecutedTask:
        if process.table_id == "local.db.heavy":
            held.append(task.task_id)
            gate.wait(60)
        return real_run_task(table, process, task)

    monkeypatch.setattr(execution_module, "run_task", gated_run_task)
    cfg = config(tmp_path, batch={}, stream={})
    services.append(OptimizerService(cfg, "batch", threads=1, catalogs={"local": catalog}).start())
    db = services[0].db
    wait_for(lambda: bool(held), what="a task of the full optimize running")
    services.append(OptimizerService(cfg, "stream", threads=1, catalogs={"local": catalog}).start())
    churn(light, 4)
    try:
        wait_for(lambda: successes(db, "local.db.light") >= 1, timeout=45, what="the other group's minor")
    finally:
        gate.set()
    (full,) = [p for p in db.processes("local.db.heavy") if p.type is OptimizingType.FULL][:1]
    minor = next(p for p in db.processes("local.db.light") if p.status == "SUCCESS")
    assert full.planned_ms < minor.planned_ms
    # The full then finishes normally.
    wait_for(lambda: _status(db, full.process_id) == "SUCCESS", what="the held full optimize")
    finished = db.process(full.process_id)
    assert finished is not None
    assert finished.finished_ms is not None
    assert minor.finished_ms is not None
    assert minor.finished_ms < finished.finished_ms


def _status(db: SystemDatabase, process_id: int) -> str | None:
    record = db.process(process_id)
    return None if record is None else record.status


def test_maintenance_runs_from_the_service_on_its_interval(
    tmp_path: Path, catalog: MixedCatalog, services: list[OptimizerService]
) -> None:
    table = due_table(catalog, "kept", **{"snapshot.keep.duration": "0min", "snapshot.keep.min-count": "1"})
    snapshots = len(table.change_store.metadata.snapshots)  # type: ignore[union-attr]
    service = OptimizerService(config(tmp_path, default={"maintenance-interval": "1s"}), "default", catalogs={"local": catalog})
    services.append(service.start())
    wait_for(lambda: getattr(service.db.table("local.db.kept"), "last_maintenance_ms", None) is not None, what="maintenance")
    runtime = service.db.table("local.db.kept")
    assert runtime is not None
    assert runtime.maintenance_error is None
    assert len(table.refresh().change_store.metadata.snapshots) < snapshots  # type: ignore[union-attr]


def test_the_cli_reports_a_group_nobody_serves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mixed_iceberg.cli.main import main

    cfg_path = tmp_path / "optimizer.yaml"
    cfg_path.write_text(f"system-database: sqlite:///{tmp_path}/system.db\noptimizer_groups: [{{name: lonely}}]\n")
    db = SystemDatabase(f"sqlite:///{tmp_path}/system.db")
    db.migrate()
    db.sync_tables("lonely", [("local.db.t", "local", "db.t", 0.5)])
    assert main(["status", "--config", str(cfg_path), "--json"]) == 0
    out = capsys.readouterr()
    assert "group lonely has no live optimizer; 0 tasks pending, 1 table(s) waiting" in out.err
    assert '"group": "lonely"' in out.out


def test_plain_iceberg_tables_are_served_the_same_way(
    tmp_path: Path, catalog: MixedCatalog, services: list[OptimizerService]
) -> None:
    plain = catalog.create_table("db.plain", ORDERS_SCHEMA, properties=DUE, table_format=TableFormat.ICEBERG)
    for i in range(12):
        plain.bulk_load(changes([("+I", 100 * i + k, "p", k, 1.0) for k in range(50)]).drop_columns(["_change_action"]))
    before = sorted(rows_of(plain.scan().to_arrow()))
    files_before = len(plain.base_store.inspect.files())
    service = OptimizerService(config(tmp_path, default={}), "default", catalogs={"local": catalog})
    services.append(service.start())
    wait_for(lambda: successes(service.db, "local.db.plain") >= 1, what="the plain Iceberg table optimized")
    plain.refresh()
    assert sorted(rows_of(plain.scan().to_arrow())) == before
    assert len(plain.base_store.inspect.files()) < files_before


def test_allow_partial_commit_commits_the_partitions_that_succeeded(
    tmp_path: Path, catalog: MixedCatalog, services: list[OptimizerService]
) -> None:
    table = _partitioned(
        catalog,
        "partial",
        2_000,
        **{"self-optimizing.allow-partial-commit": "true", "self-optimizing.execute.num-retries": "0"},
    )
    _spread_churn(table, 2_000)
    # One partition's change file is garbage: its task fails, the other partitions' succeed.
    poisoned = table.change_store.inspect.files().column("file_path")[0].as_py()  # type: ignore[union-attr]
    Path(poisoned.removeprefix("file://")).write_bytes(b"not parquet")
    service = OptimizerService(config(tmp_path, default={}), "default", catalogs={"local": catalog})
    services.append(service.start())
    wait_for(lambda: successes(service.db, "local.db.partial") >= 1, what="a partial commit")
    process = next(p for p in service.db.processes("local.db.partial") if p.status == "SUCCESS")
    states = sorted(t.status for t in service.db.tasks(process.process_id))
    assert states.count("FAILED") == 1
    assert states.count("SUCCESS") == len(states) - 1 >= 1
    sequences = read_optimized_sequence(table.refresh().base_store, table.base_store.current_snapshot())
    assert len([p for p, s in sequences.items() if s > 0]) == len(states) - 1  # the poisoned partition is left as it was


@pytest.mark.filterwarnings("ignore:.* has been deprecated since version:DeprecationWarning")  # pyflink.table, at import
def test_the_flink_jobs_optimizer_stops_and_unregisters_once_its_subtask_stops_ticking(tmp_path: Path) -> None:
    """In PyFlink's thread mode no close() tells the function that its task was cancelled or
    failed: without ticks its service must stop on its own, not run on in the JVM."""
    pytest.importorskip("pyflink", reason="the flink extra")
    import json

    from mixed_iceberg.optimizer.flink import OptimizerFunction

    pinned = json.dumps(
        {"system-database": f"sqlite:///{tmp_path}/system.db", "optimizer_groups": [{"name": "g", "properties": FAST}]}
    )
    function = OptimizerFunction(pinned, "g", threads=1, tick_timeout=1.0)
    function.open(None)
    db = SystemDatabase(f"sqlite:///{tmp_path}/system.db")
    try:
        for _ in range(5):  # ticking for longer than the timeout keeps it
            assert function.eval(0) == 1
            time.sleep(0.3)
        assert [o.optimizer_id for o in db.live_optimizers("g", 60_000)] == [function.service.optimizer_id]
        wait_for(lambda: db.live_optimizers("g", 60_000) == [], "it stopped and unregistered without ticks", 10)
        assert not function.service.running
        assert function.eval(0) == 0
    finally:
        function.close()
        db.dispose()


def test_a_due_table_is_planned_while_another_tables_process_commits(
    tmp_path: Path, catalog: MixedCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit (the bookkeeping of a finished process) runs beside the planning of the tables
    with nothing in flight, never before it: a due table does not wait behind it."""
    due_table(catalog, "a")
    service = OptimizerService(config(tmp_path, default={}), "default", threads=1, catalogs={"local": catalog})
    service.db.migrate()
    service.optimizer_id = service.db.register_optimizer("default", service.container, 1)
    with ThreadPoolExecutor(max_workers=2) as planners:
        service.coordinate(planners)  # a planned
        while service.execute_one():
            pass  # a's tasks done: its process waits for its commit
        due_table(catalog, "b")
        b_planning = threading.Event()
        plan = coordination.plan_process

        def planning(table: MixedTable, *args: Any, **kwargs: Any) -> Any:
            if table.name == "db.b":
                b_planning.set()
            return plan(table, *args, **kwargs)

        advance = service.bookkeeping.advance

        def committing(runtime: TableRuntime) -> ProcessStatus | None:
            assert b_planning.wait(10), "b's planning waited for a's commit"
            return advance(runtime)

        monkeypatch.setattr(coordination, "plan_process", planning)
        monkeypatch.setattr(service.bookkeeping, "advance", committing)
        service.coordinate(planners)
    assert successes(service.db, "local.db.a") == 1
    assert service.db.table("local.db.b").process_id is not None  # type: ignore[union-attr]
    service.db.dispose()
