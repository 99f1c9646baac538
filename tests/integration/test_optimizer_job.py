"""The optimizer as a PyFlink job, on the local mini-cluster and submitted to a standalone session cluster.

Each subtask is one optimizer of the group (``container`` flink in the system database); the
job optimizes the group's tables on its own and its optimizers unregister when it is cancelled.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mixed_iceberg.optimizer.sysdb.database import SystemDatabase
from tests.support.optimizer import OptimizerSetup, merged
from tests.support.services import FLINK, ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def flink_rest() -> Iterator[str]:
    with FLINK.leased() as rest:
        yield rest


def _run(setup: OptimizerSetup, *, on_cluster: bool, seconds: int) -> str:
    launcher = ["bash", "scripts/services/flink.sh", "run", "-py"] if on_cluster else [sys.executable]
    command = [*launcher, "jobs/optimizer_job.py", "--config", str(setup.config_path), "--group", setup.group]
    command += ["--parallelism", "2", "--run-for", str(seconds)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=seconds + 300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    return output


@pytest.mark.parametrize("on_cluster", [False, True], ids=["mini-cluster", "session-cluster"])
def test_the_optimizer_job_serves_its_group(tmp_path: Path, on_cluster: bool, request: pytest.FixtureRequest) -> None:
    if on_cluster:
        request.getfixturevalue("flink_rest")
    setup = OptimizerSetup(tmp_path)
    tables = [setup.table("a"), setup.table("b"), setup.table("elsewhere", **{"self-optimizing.group": "other"})]
    before = {t.name: merged(t) for t in tables}
    started = time.monotonic()
    _run(setup, on_cluster=on_cluster, seconds=30)
    db = SystemDatabase(setup.system_db)
    for name in ("a", "b"):
        processes = db.processes(f"local.db.{name}")
        assert [p.status for p in processes][:1] == ["SUCCESS"], processes
    assert db.processes("local.db.elsewhere") == []
    for table in tables:
        assert merged(table) == before[table.name]
    optimizers = db.optimizers(setup.group)
    assert len(optimizers) == 2, optimizers  # one per subtask
    assert {o.container for o in optimizers} == {"flink"}
    # A cancelled job's optimizers unregister (close() runs) or, where the cluster kills the
    # workers first, stop heartbeating: within the heartbeat timeout none is live.
    time.sleep(3.5)
    assert db.live_optimizers(setup.group, 3000) == []
    print(f"optimizer job ({'cluster' if on_cluster else 'mini-cluster'}): {time.monotonic() - started:.1f} s")
