"""kill -9 of the whole job at random points, five times, while CDC keeps arriving: no loss, no duplicates.

Cycles alternate between a kill at a random moment after the job's first commit (from outside,
``killpg`` of the client and its gateway JVM) and a kill from inside right after a ChangeStore
commit and before the Kafka commit (the window where the table is ahead of the LogStore).
The final run catches up; the table must equal the producer's oracle and the LogStore must
hold every change exactly once.
"""

from __future__ import annotations

import contextlib
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mixed_iceberg.ingest.writer import KILL_AFTER_TABLE_COMMIT, committed_offsets
from mixed_iceberg.logstore.kafka import watermarks
from tests.integration.test_ingest_pipeline import assert_logstore_exactly_once, assert_table_matches
from tests.support.ingest import IngestJob, IngestSetup
from tests.support.services import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EVENTS, KEYS, RATE = 120_000, 10_000, 5_000


def _committed(setup: IngestSetup) -> int:
    try:
        table = setup.table()
    except Exception:  # the first run has not created the table yet
        return 0
    offsets = committed_offsets(table, setup.env["MIXED_ICEBERG_INGEST_JOB"], setup.topic, range(4))
    return sum(o or 0 for o in offsets.values())


def _produced(bootstrap: str, topic: str) -> int:
    try:
        return sum(high for _, high in watermarks(bootstrap, topic).values())
    except Exception:  # the producer has not created the topic yet
        return 0


def _wait_for_progress(setup: IngestSetup, job: IngestJob, above: int, timeout: float = 120.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = _committed(setup)
        if done > above or job.proc.poll() is not None:
            return done
        time.sleep(0.2)
    raise AssertionError(f"no commit within {timeout} s:\n{job.output()[-4000:]}")


def test_kill_9_at_random_points_loses_and_duplicates_nothing(kafka_bootstrap: str, tmp_path: Path) -> None:
    setup = IngestSetup(tmp_path, kafka_bootstrap, "it-crash", commit_interval_ms=300)
    oracle_path = tmp_path / "oracle.json"
    producer = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "produce_cdc.py"), "--bootstrap", kafka_bootstrap, "--topic", setup.topic,
         "--events", str(EVENTS), "--keys", str(KEYS), "--bad", "10", "--rate", str(RATE), "--oracle", str(oracle_path)],
        env=setup.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    rng = random.Random(20261129)
    history = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _produced(kafka_bootstrap, setup.topic) < RATE:
            time.sleep(0.5)  # the first run must find a backlog, or it has nothing to do
        for cycle in range(5):
            injected = cycle % 2 == 1
            if injected:
                setup.env[KILL_AFTER_TABLE_COMMIT] = str(rng.randint(1, 3))
            job = IngestJob(setup, timeout=600)
            before = _committed(setup)
            _wait_for_progress(setup, job, before)
            if injected:
                # The JVM killed itself right after a table commit; the client may linger.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    job.proc.wait(10)
            else:
                time.sleep(rng.uniform(0.0, 2.0))
            job.kill()
            setup.env.pop(KILL_AFTER_TABLE_COMMIT, None)
            history.append((cycle, "after-table-commit" if injected else "random", before, _committed(setup)))
    finally:
        assert producer.wait(300) == 0
    final = IngestJob(setup, timeout=300)
    assert final.wait(400) == 0, final.output()[-5000:]
    print("crash cycles (cycle, kill point, committed before, committed after):", history)
    assert len(history) == 5

    oracle = json.loads(oracle_path.read_text())
    assert_table_matches(setup, oracle)
    assert_logstore_exactly_once(setup)
