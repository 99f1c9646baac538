"""kill -9 of the whole job, six times, while CDC keeps arriving: no loss, no duplicates, quick restarts.

Two cycles kill at a random moment after the job's first commit (from outside, ``killpg`` of the
client and its gateway JVM); four kill a writer's Python worker from inside at one of the commit's
crash points (:mod:`mixed_iceberg.faults`: LogStore rows sent, table committed, position sent to
the Kafka transaction, Kafka committed), and then the whole job. Every next run must commit again
within a bound far below the broker's transaction timeout (a run after a kill between sending
the position and committing used to fail in ``prepare()`` for two minutes). The final run
catches up; the table must equal the producer's oracle and the LogStore must hold every change
exactly once. ``tests/integration/test_ingest_crash_windows.py`` kills at every point more often,
without Flink.
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

from mixed_iceberg.faults import CRASH_AT
from mixed_iceberg.ingest.writer import log_position_group
from mixed_iceberg.logstore.kafka import KafkaLogStore
from tests.integration.test_ingest_pipeline import assert_logstore_exactly_once, assert_table_matches
from tests.support.ingest import IngestJob, IngestSetup
from tests.support.services import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EVENTS, KEYS, RATE = 200_000, 10_000, 1_000  # over three minutes of CDC: every cycle finds new records
CYCLES = ("random", "after-log-send", "after-table-commit", "random", "after-offsets-sent", "after-kafka-commit")
#: A job start (JVM, mini-cluster, Python workers) to its first commit takes 10-30 s on 2 busy
#: cores; one that waits for the broker to time a dead transaction out (120 s) fails this.
RESTART_BOUND_S = 75.0


def _committed(setup: IngestSetup) -> int:
    """Progress: the table's next offsets plus the LogStore's positions, over the partitions (a
    run after a kill between the two commits may commit to the LogStore only for a while)."""
    job = setup.env["MIXED_ICEBERG_INGEST_JOB"]
    positions = KafkaLogStore(setup.bootstrap).committed_positions(
        log_position_group(job), setup.topic, list(range(4)), stable=False
    )
    return setup.table_next() + sum(p or 0 for p in positions.values())


def _produced(bootstrap: str, topic: str) -> int:
    try:
        return sum(high for _, high in KafkaLogStore(bootstrap).watermarks(topic).values())
    except Exception:  # the producer has not created the topic yet
        return 0


def _wait_for_backlog(setup: IngestSetup, producer: subprocess.Popen[bytes], records: int = 2_000) -> None:
    """Until the topic holds ``records`` more than the table: a run with nothing to read would
    end at once (caught up) and prove nothing."""
    deadline = time.monotonic() + 120
    while _produced(setup.bootstrap, setup.topic) - setup.table_next() < records:
        assert producer.poll() is None, "the producer finished before this cycle: raise EVENTS"
        assert time.monotonic() < deadline, "no backlog within 120 s"
        time.sleep(0.5)


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
        for cycle, point in enumerate(CYCLES):
            if point != "random":
                # A run killed at after-log-send:1 would never commit: its restarts die there too.
                setup.env[CRASH_AT] = f"{point}:{rng.randint(2 if point == 'after-log-send' else 1, 3)}"
            _wait_for_backlog(setup, producer)
            job = IngestJob(setup, timeout=600)
            try:
                started = time.monotonic()
                before = _committed(setup)
                progress = _wait_for_progress(setup, job, before)
                restart_s = time.monotonic() - started
                assert progress > before, f"cycle {cycle}: the job ended without committing:\n{job.output()[-4000:]}"
                if point != "random":
                    # A writer's Python worker killed itself at the crash point; Flink restarts it.
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        job.proc.wait(10)
                else:
                    time.sleep(rng.uniform(0.0, 2.0))
            finally:
                job.kill()
            history.append((cycle, setup.env.pop(CRASH_AT, "random"), round(restart_s, 1), before, _committed(setup)))
    finally:
        assert producer.wait(300) == 0
    final = IngestJob(setup, timeout=300)
    assert final.wait(400) == 0, final.output()[-5000:]
    print("crash cycles (cycle, kill point, seconds to first commit, committed before, after):", history)
    assert len(history) == len(CYCLES)
    slow = [h for h in history if h[2] > RESTART_BOUND_S]
    assert not slow, f"runs that took more than {RESTART_BOUND_S} s to their first commit: {slow}"

    oracle = json.loads(oracle_path.read_text())
    assert_table_matches(setup, oracle)
    assert_logstore_exactly_once(setup)
