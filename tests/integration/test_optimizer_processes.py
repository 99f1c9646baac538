"""Two optimizer processes of one group over four tables under continuous writes: they share the
work, every table is optimized, and no table ever has two processes at once (system DB history);
``mixed-iceberg groups`` (docs/optimizer.md) then reports them."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mixed_iceberg.optimizer.sysdb.database import SystemDatabase
from tests.support.optimizer import OptimizerSetup, churn
from tests.support.services import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_two_optimizer_processes_share_a_group_and_never_overlap_on_a_table(tmp_path: Path) -> None:
    setup = OptimizerSetup(tmp_path)
    tables = [setup.table(f"t{i}") for i in range(4)]
    ids = [f"local.{t.name}" for t in tables]
    command = [sys.executable, "-m", "mixed_iceberg.cli.main", "optimizer", "--config", str(setup.config_path)]
    logs = [(tmp_path / f"optimizer{i}.log").open("wb") for i in range(2)]
    optimizers = [
        subprocess.Popen([*command, "--threads", "1"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        for log in logs
    ]
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            for table in tables:
                churn(table, 1)
            time.sleep(0.1)

    thread = threading.Thread(target=writer)
    thread.start()
    db = SystemDatabase(setup.system_db)
    try:
        deadline = time.monotonic() + 150
        while True:
            time.sleep(1.0)
            try:
                done = {t: sum(p.status == "SUCCESS" for p in db.processes(t)) for t in ids}
            except Exception:
                continue
            if all(n >= 3 for n in done.values()):
                break
            assert time.monotonic() < deadline, f"not every table optimized three times: {done}"
    finally:
        stop.set()
        thread.join()
        for process in optimizers:
            os.killpg(process.pid, signal.SIGTERM)
        codes = [p.wait(60) for p in optimizers]
        for log in logs:
            log.close()
    assert codes == [0, 0], [log.name for log in logs]
    for table_id in ids:
        spans = sorted((p.planned_ms, p.finished_ms or 2**62) for p in db.processes(table_id))
        assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans)), f"{table_id}: overlapping processes"
    registered = {o.optimizer_id for o in db.optimizers("default")}
    assert len(registered) == 2
    workers = {t.owner for t in db.tasks() if t.status == "SUCCESS"} | {p.planned_by for p in db.processes()}
    assert workers == registered, "both optimizers did part of the work"
    assert db.live_optimizers("default", 60_000) == []  # both unregistered on SIGTERM
    # `mixed-iceberg groups`, as docs/optimizer.md runs it: the group, no live optimizer, every table.
    groups = subprocess.run(
        [str(Path(sys.executable).parent / "mixed-iceberg"), "groups", "--json", "--config", str(setup.config_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    (report,) = json.loads(groups.stdout)
    assert (report["group"], report["live_optimizers"]) == ("default", 0)
    assert sorted(t["table"] for t in report["tables"]) == sorted(ids)
    assert "group default has no live optimizer" in groups.stderr
