"""kill -9 of an optimizer while it executes and right after it commits, several times: no table is left stuck.

The optimizer runs as the local container (``mixed-iceberg optimizer``) in its own process and
kills itself at a crash point (``mixed_iceberg/faults.py``). After each kill a fresh optimizer
takes over. The dead one's tasks go back once its heartbeat times out, and a commit that landed
is recognized by its commit id and recorded. Checked after every round: the merged read equals
the oracle, nothing is in flight, and nothing is due. At the end, orphan cleaning removes the
files the killed runs wrote and never committed.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from mixed_iceberg.faults import CRASH_AT
from mixed_iceberg.optimizer.sysdb.database import SystemDatabase
from mixed_iceberg.store.manifests.live_files import live_files
from tests.support.optimizer import OptimizerSetup, churn, merged
from tests.support.services import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _optimizer(setup: OptimizerSetup, crash_at: str | None, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != CRASH_AT}
    if crash_at:
        env[CRASH_AT] = crash_at
    command = [sys.executable, "-m", "mixed_iceberg.cli.main", "optimizer", "--config", str(setup.config_path)]
    command += ["--group", setup.group, "--threads", "1"]
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _settled(db: SystemDatabase, tables: list[str]) -> bool:
    runtimes = {t.table_id: t for t in db.tables()}
    return all(t in runtimes and runtimes[t].process_id is None and runtimes[t].status == "IDLE" for t in tables)


def _referenced(table: object) -> set[str]:
    """Every file any retained snapshot of the table's stores references (data and delete files)."""
    found: set[str] = set()
    for store in (table.base_store, table.change_store):  # type: ignore[attr-defined]
        for snapshot in store.metadata.snapshots:
            found |= {f.data_file.file_path.removeprefix("file://") for f in live_files(store, snapshot)}
    return found


def _on_disk(table: object) -> set[str]:
    found: set[str] = set()
    for store in (table.base_store, table.change_store):  # type: ignore[attr-defined]
        found |= {str(p) for p in Path(store.location().removeprefix("file://"), "data").rglob("*.parquet")}
    return found


def test_kill_9_while_executing_or_committing_never_leaves_a_table_stuck(tmp_path: Path) -> None:
    setup = OptimizerSetup(tmp_path)
    tables = [setup.table("a"), setup.table("b")]
    ids = [f"local.{t.name}" for t in tables]
    log = tmp_path / "optimizer.log"
    db = SystemDatabase(setup.system_db)
    rng = random.Random(17)
    points = ["optimizer-after-execute", "optimizer-after-commit", "optimizer-after-execute", "optimizer-after-commit"]
    kills = 0
    for round_, point in enumerate(points):
        expected = {t.name: merged(t) for t in tables}
        crash = f"{point}:{rng.randint(1, 2)}"
        dying = _optimizer(setup, crash, log)
        try:
            code = dying.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(dying.pid, signal.SIGKILL)
            pytest.fail(f"round {round_}: the optimizer never reached {crash}:\n{log.read_text()[-4000:]}")
        assert code == -signal.SIGKILL, f"round {round_}: expected a kill at {crash}, exit {code}:\n{log.read_text()[-4000:]}"
        kills += 1
        # A fresh optimizer takes over what the dead one left.
        survivor = _optimizer(setup, None, log)
        try:
            deadline = time.monotonic() + 90
            while not (_settled(db, ids) and all(t.refresh().optimizing.evaluate().type is None for t in tables)):
                if time.monotonic() > deadline:
                    due = {t.name: [(p.type, p.reason) for p in t.optimizing.evaluate().partitions] for t in tables}
                    pytest.fail(
                        f"round {round_} ({crash}): a table is stuck: {db.tables()}\ndue: {due}\n"
                        f"processes: {db.processes()}\ntasks: {db.tasks()}\n{log.read_text()[-6000:]}"
                    )
                time.sleep(0.3)
        finally:
            survivor.send_signal(signal.SIGTERM)
            assert survivor.wait(timeout=60) == 0, log.read_text()[-4000:]
        for table in tables:
            assert merged(table) == expected[table.name], f"round {round_} ({crash}): {table.name} changed"
        for table in tables:  # the next round has something to optimize
            churn(table, 4)
    assert kills == len(points)
    statuses = [p.status for t in ids for p in db.processes(t)]
    assert "SUCCESS" in statuses
    assert not {"RUNNING", "COMMITTING"} & set(statuses), statuses
    # Files the killed runs wrote but never committed are orphans; orphan cleaning removes them.
    for table in tables:
        table.refresh()
        table.maintenance.clean_orphan_files(older_than=timedelta(0))
        table.refresh()
        assert _on_disk(table) <= _referenced(table), f"{table.name}: unreferenced files left after orphan cleaning"
