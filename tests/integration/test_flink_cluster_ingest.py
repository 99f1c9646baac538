"""The ingest job submitted with ``flink run -py`` to a real standalone session cluster.

``scripts/services/flink.sh`` starts a JobManager and a TaskManager (PyFlink's bundled
distribution) as separate JVMs; the job's Python client runs under the ``flink`` CLI and its
Python workers under the TaskManager, in the TaskManager's environment and working directory.
The table and LogStore must come out exactly as from the local mini-cluster, also for a
second run that resumes from what the first committed; the cluster listens on loopback only.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_ingest_pipeline import assert_logstore_exactly_once, assert_table_matches
from tests.support.ingest import IngestJob, IngestSetup, produce, produce_more, read_topic
from tests.support.services import FLINK, ROOT
from tests.support.sockets import ListenerWatch, service_pids

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def flink_rest() -> Iterator[str]:
    """REST address of the session cluster (``scripts/services/flink.sh``)."""
    with FLINK.leased() as rest:
        yield rest


def _cluster_job(rest: str, job_id: str, timeout: float = 15.0) -> dict[str, object]:
    """The cluster's record of the job once it reports a terminal state: its REST handlers serve
    a cached execution graph (``web.refresh-interval``, 3 s), so right after the client saw the
    job finish the record may still say RUNNING."""
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(f"{rest}/jobs/{job_id}", timeout=10) as response:
            found: dict[str, object] = json.load(response)
        if found.get("state") in ("FINISHED", "FAILED", "CANCELED") or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def _run_on_cluster(setup: IngestSetup, rest: str) -> dict[str, object]:
    """``flink run -py jobs/ingest_cdc.py --config conf/ingest.yaml --bounded``; the cluster's record of the job."""
    started = time.monotonic()
    job = IngestJob(setup, until_caught_up=False, bounded=True, on_cluster=True)
    assert job.wait(400) == 0, job.output()[-5000:]
    output = job.output()
    submitted = re.search(r"Job has been submitted with JobID ([0-9a-f]{32})", output)
    assert submitted is not None, output[-5000:]
    record = _cluster_job(rest, submitted.group(1))
    # The cluster reports FINISHED when the Java operators end; the Python workers' close()
    # may still be committing the last buffered partitions (seen: 4 commits landing up to 1 s
    # after FINISHED). What counts is that the table and LogStore end up holding everything.
    setup.wait_caught_up(60)
    print(f"flink run -py: {time.monotonic() - started:.1f} s wall, job {record['duration']} ms on the cluster")
    return record


def test_flink_run_on_a_session_cluster_ingests_exactly_once(kafka_bootstrap: str, flink_rest: str, tmp_path: Path) -> None:
    setup = IngestSetup(tmp_path, kafka_bootstrap, "it-cluster")
    oracle = produce(setup, events=3_000, keys=500, bad=5, seed=11)
    cluster = service_pids(FLINK)  # the JobManager and the TaskManager
    with ListenerWatch(lambda: cluster).running() as watch:
        first = _run_on_cluster(setup, flink_rest)
    # Nothing of the cluster listens beyond loopback while it runs the job, Beam's gRPC servers
    # for the TaskManager's Python workers too (flink.sh has it load the loopback agent), and it
    # takes no jar uploads.
    assert watch.workers, "the TaskManager's Python workers were not seen"
    assert watch.exposed() == [], watch.report()
    with pytest.raises(urllib.error.HTTPError, match="404"):
        urllib.request.urlopen(f"{flink_rest}/jars", timeout=10)
    assert first["name"] == setup.name
    assert first["state"] == "FINISHED"
    # The TaskManager's workers wrote the client's table (the warehouse is per test, set only
    # in the client's environment) and the client's LogStore topic.
    assert_table_matches(setup, oracle)
    assert_logstore_exactly_once(setup)

    # More events on the same keys: a second submission resumes from what the first committed.
    oracle = produce_more(setup, oracle, events=2_000, keys=600, seed=12)
    second = _run_on_cluster(setup, flink_rest)
    assert second["state"] == "FINISHED"
    assert_table_matches(setup, oracle)
    assert_logstore_exactly_once(setup)
    letters, _ = read_topic(kafka_bootstrap, setup.env["MIXED_ICEBERG_INGEST_DLQ"])
    assert len(letters) == 5
    # docs/ingest.md's `flink.sh cli list`: the flink CLI with the cluster's configuration.
    listed = subprocess.run(
        ["bash", "scripts/services/flink.sh", "cli", "list"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert "No running jobs." in listed.stdout, listed.stdout
