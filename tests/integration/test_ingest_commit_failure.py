"""A commit that fails on the committer thread of an idle job fails the subtask; Flink restarts it.

Every event is in the topic before the job starts and the commit interval is longer than the
read, so the first commits are made while no records arrive (no call of the Python function
could raise them). The first of them
fails (injected through ``MIXED_ICEBERG_TEST_FAIL_FIRST_TABLE_COMMIT``). Before the wake-up
topic the job then sat idle with those records uncommitted until ``--timeout``; now the
subtask fails, the restart strategy restarts it, and the restarted writers commit the rest
exactly once. The client says so in one line, naming the injected cause, between its progress
reports; with ``--max-restarts 0`` it gives up at the first failure and exits 1.
"""

from __future__ import annotations

import re
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
    assert_client_reported(job.output(), setup)


_CAUSE = r"WriterFailedError: .*a commit failed.* \(caused by OSError: .*injected table commit failure"


def assert_client_reported(output: str, setup: IngestSetup) -> None:
    """Progress lines for every source partition, the failure in one line, no traceback."""
    lines = re.findall(r"^\d\d:\d\d:\d\d   p(\d): lag [\d,]+ \(table [\d,-]+ LogStore [\d,-]+ end [\d,]+\), "
                       r"[\d.,]+ commits/s, ([\d.,]+) rows/s, dead letters \d+", output, re.MULTILINE)  # fmt: skip
    assert {p for p, _ in lines} == {"0", "1", "2", "3"}, output[-3000:]
    assert any(rate != "0.0" for _, rate in lines), output[-3000:]  # some interval saw commits
    assert re.search(rf"^\d\d:\d\d:\d\d {setup.name} RUNNING \d+ s, restarts 1: lag", output, re.MULTILINE), output[-3000:]
    failure = re.findall(rf"ERROR .*{setup.name}: subtask \d/2 failed, restart 1 \(at most 5\): {_CAUSE}", output)
    assert len(failure) == 1, output[-3000:]
    assert "Traceback" not in output


def test_the_client_gives_up_after_max_restarts_and_names_the_cause(kafka_bootstrap: str, tmp_path: Path) -> None:
    setup = IngestSetup(tmp_path, kafka_bootstrap, "it-give-up", commit_interval_ms=500)
    produce(setup, events=200, keys=50, seed=6)
    setup.env[FAIL_FIRST_TABLE_COMMIT] = str(tmp_path / "commit-failed")
    # Without --until-caught-up: the client watches the job until it ends, or gives up.
    job = IngestJob(setup, until_caught_up=False, extra=["--max-restarts", "0", "--quiet"])
    assert job.wait(180) == 1, job.output()[-5000:]
    output = job.output()
    assert re.search(rf"ERROR .*{setup.name}: restarted 1 times \(more than 0\); giving up: {_CAUSE}", output), output
    assert not re.search(r"^\d\d:\d\d:\d\d ", output, re.MULTILINE)  # --quiet: no progress lines
    assert "Traceback" not in output
