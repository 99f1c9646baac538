"""A commit that fails on the committer thread of an idle job fails the subtask; Flink restarts it.

Every event is in the topic before the job starts and the commit interval is longer than the
read, so the first commits are made while no records arrive (no call of the Python function
could raise them). The first of them
fails (injected through ``MIXED_ICEBERG_TEST_FAIL_FIRST_TABLE_COMMIT``). Before the wake-up
topic the job then sat idle with those records uncommitted until ``--timeout``; now the
subtask fails, the restart strategy restarts it, and the restarted writers commit the rest
exactly once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mixed_iceberg.ingest.writer import FAIL_FIRST_TABLE_COMMIT
from tests.integration.test_ingest_pipeline import assert_logstore_exactly_once, assert_table_matches
from tests.support.ingest import IngestJob, IngestSetup, produce

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _flink_logs(setup: IngestSetup) -> str:
    return "\n".join(path.read_text(errors="replace") for path in sorted((setup.root / "flink-log").glob("*.log")))


def test_a_failed_background_commit_fails_the_subtask_and_the_restart_commits_the_rest(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    setup = IngestSetup(tmp_path, kafka_bootstrap, "it-flusher", commit_interval_ms=2000)
    oracle = produce(setup, events=2_000, keys=300, seed=5)
    marker = tmp_path / "commit-failed"
    setup.env[FAIL_FIRST_TABLE_COMMIT] = str(marker)
    job = IngestJob(setup, timeout=150)
    assert job.wait(300) == 0, job.output()[-5000:]

    assert marker.exists()  # the injected failure happened
    logs = _flink_logs(setup)
    assert "background commit failed" in logs  # ... on the committer thread, while no records arrive
    assert "failing this writer so that it is restarted" in logs
    assert "tasks will be restarted to recover the failed task" in logs
    assert_table_matches(setup, oracle)
    assert_logstore_exactly_once(setup)
