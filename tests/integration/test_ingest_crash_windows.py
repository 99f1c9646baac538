"""kill -9 inside every window of a commit, 16 times: each restart commits again within seconds.

One batch with a LogStore passes four crash points (:mod:`mixed_iceberg.faults`): LogStore rows
sent, table committed, position sent to the Kafka transaction, Kafka transaction committed. A
writer killed between sending its position and committing used to leave that position pending
in the group coordinator, and every restart then failed in ``prepare()`` (a stable offset fetch
timing out after 30 s) until the broker aborted the dead transaction two minutes later. The
ingest driver (the job's Python side without Flink, ``tests/support/ingest_driver.py``) is
killed four times at each point, at its 1st to 3rd pass, while a backlog waits; each restart
must reach its first commit within a bound far below the broker's transaction timeout, and
the final state must hold every record exactly once (table and LogStore).
"""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mixed_iceberg.faults import CRASH_AT, CRASH_POINTS
from tests.integration.test_ingest_pipeline import assert_logstore_exactly_once, assert_table_matches
from tests.support.ingest import IngestSetup, produce
from tests.support.services import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KILLS_PER_POINT = 4
#: The broker's transaction timeout is 120 s (``KafkaLogWriter``); a restart that waits for it fails this.
RESTART_BOUND_S = 20.0


def _first_commit_s(output: str) -> float | None:
    """Seconds from the driver's start to its first commit, of the table or the LogStore only (its
    log lines start with the milliseconds since the process started); None: it committed nothing."""
    found = re.search(r"^(\d+) INFO \S+: \S+: ingest commit ", output, re.MULTILINE)
    return int(found.group(1)) / 1000 if found else None


def _driver(setup: IngestSetup, log: Path, crash_at: str | None) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in setup.env.items() if k != CRASH_AT}
    if crash_at is not None:
        env[CRASH_AT] = crash_at
    command = [sys.executable, "-m", "tests.support.ingest_driver", "--config", "conf/ingest.yaml", *setup.args()]
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def test_a_kill_in_any_commit_window_restarts_within_seconds_and_loses_nothing(kafka_bootstrap: str, tmp_path: Path) -> None:
    setup = IngestSetup(tmp_path, kafka_bootstrap, "it-windows", parallelism=1)
    oracle = produce(setup, events=60_000, keys=5_000, bad=12)
    rng = random.Random(20261201)
    plan = [point for _ in range(KILLS_PER_POINT) for point in CRASH_POINTS]
    rng.shuffle(plan)
    history = []
    for cycle, point in enumerate(plan):
        nth = rng.randint(1, 3)
        log = tmp_path / f"driver-{cycle}.log"
        started = time.monotonic()
        driver = _driver(setup, log, f"{point}:{nth}")
        try:
            driver.wait(120)
        except subprocess.TimeoutExpired:
            driver.kill()
            raise AssertionError(f"cycle {cycle} ({point}:{nth}) still running:\n{log.read_text()[-4000:]}") from None
        output = log.read_text(errors="replace")
        assert driver.returncode == -signal.SIGKILL, (
            f"cycle {cycle}: expected a kill at {point}, got rc {driver.returncode}:\n{output[-4000:]}"
        )
        assert f"killing this process at {point}" in output
        history.append((cycle, f"{point}:{nth}", round(time.monotonic() - started, 1), _first_commit_s(output)))

    final_log = tmp_path / "driver-final.log"
    started = time.monotonic()
    final = _driver(setup, final_log, None)
    assert final.wait(300) == 0, final_log.read_text(errors="replace")[-5000:]
    print("crash windows (cycle, point:nth, seconds alive, seconds to first commit):", json.dumps(history))
    print(
        f"final run: {time.monotonic() - started:.1f} s to catch up, first commit after {_first_commit_s(final_log.read_text())} s"
    )
    assert len(history) == len(CRASH_POINTS) * KILLS_PER_POINT
    # A run killed at after-log-send:1 commits nothing; every other run commits before it dies.
    for cycle, where, _, first in history:
        if where != "after-log-send:1":
            assert first is not None, f"cycle {cycle} ({where}) never committed"
            assert first < RESTART_BOUND_S, f"cycle {cycle} ({where}) took {first} s to its first commit: {history}"
    assert_table_matches(setup, oracle)
    assert_logstore_exactly_once(setup)
