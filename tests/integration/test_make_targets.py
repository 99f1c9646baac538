"""The README's ``make demo`` and ``make demo-library`` run as a user runs them (shorter), and
while ``make demo`` runs both PyFlink jobs, nothing they start listens beyond loopback.

``make demo-postgres`` runs in ``test_debezium_postgres.py``, beside the Kafka Connect worker
it shares with that test.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.make import make_command, run_make
from tests.support.services import ROOT
from tests.support.sockets import ListenerWatch

pytestmark = [pytest.mark.integration]


def test_make_demo_library_runs_the_library_demo(tmp_path: Path) -> None:
    done = run_make("demo-library", env={"MIXED_ICEBERG_WAREHOUSE_DIR": str(tmp_path)}, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "replay of the last one: skipped (idempotent)" in done.stdout
    assert done.stdout.rstrip().endswith("demo OK"), done.stdout[-3000:]


def _flink_logs(log_dir: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in log_dir.rglob("*.log"))


def _rest_endpoints(log_dir: Path) -> list[str]:
    """Where each local mini-cluster's REST API listened, from the jobs' Flink logs."""
    return sorted(set(re.findall(r"Rest endpoint listening at (\S+)", _flink_logs(log_dir))))


@pytest.mark.slow
def test_make_demo_ingests_optimizes_and_listens_on_loopback_only(kafka_bootstrap: str, tmp_path: Path) -> None:
    """Both jobs of the demo, end to end on a short stream; every socket their processes listen
    on is on loopback, the ingest job's Beam gRPC servers too (its JVM loads the loopback agent,
    java/loopback-agent/; the optimizer job, in thread mode, has none). Their REST APIs take no
    jar uploads."""
    started = time.monotonic()
    # The demo uses the running broker (it starts one only when none runs) and its own topics.
    args = ["--events", "3000", "--keys", "500", "--rate", "1500", "--bad", "3", "--every", "2"]
    log = tmp_path / "make-demo.log"
    log_dir = ROOT / ".warehouse" / "ingest-demo" / "flink-log"
    checked: set[str] = set()
    with log.open("w+") as output:
        make = subprocess.Popen(make_command("demo", args), cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, text=True)
        with ListenerWatch(lambda: [make.pid]).running() as watch:
            while make.poll() is None and time.monotonic() - started < 600:
                time.sleep(1.0)
                for rest in set(_rest_endpoints(log_dir)) - checked:
                    if _serves_no_jar_uploads(f"http://{rest}"):
                        checked.add(rest)
            code = make.wait(60)
        output.seek(0)
        text = output.read()
    assert code == 0, text[-5000:]
    assert re.search(r"rows in the producer's oracle:\s+[\d,]+\s+-> equal", text), text[-5000:]
    assert re.search(r"dead letters:\s+3\b", text), text[-3000:]

    # Both jobs were watched while they ran: two JVMs. Only the ingest job's (its pandas function
    # needs process mode) started Python workers, and so Beam's six gRPC servers per worker, which
    # the loopback agent it loaded rewrote onto 127.0.0.1: nothing listened beyond loopback.
    jvms = {listener.pid for listener in watch.seen if Path(listener.command.split(" ", 1)[0]).name == "java"}
    assert len(jvms) == 2, f"expected both jobs' JVMs among {sorted(map(str, watch.seen))}"
    (ingest_jvm,) = watch.workers
    assert "jobs/ingest_cdc.py" in watch.commands[watch.parents[ingest_jvm]]
    assert watch.exposed() == [], watch.report()
    assert "-javaagent:" in watch.commands[ingest_jvm], watch.commands[ingest_jvm]
    assert "Beam's Fn API gRPC servers listen on 127.0.0.1" in _flink_logs(log_dir), "the agent did not rewrite"
    # ... and both REST APIs, on loopback, answered without web submission (jar upload and run).
    assert len(_rest_endpoints(log_dir)) == 2, _rest_endpoints(log_dir)  # one Flink log per job
    assert len(checked) == 2, (checked, _rest_endpoints(log_dir))
    assert all(rest.startswith("127.0.0.1:") for rest in checked), checked
    print(f"make demo: {time.monotonic() - started:.1f} s, {watch.samples} samples, {len(watch.seen)} listeners")


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _serves_no_jar_uploads(rest: str) -> bool:
    """Whether the REST API at ``rest`` answered and offers no web submission (jar upload and
    run), cancel or rescale buttons; False while it does not answer (not up yet, or gone)."""
    try:
        with urllib.request.urlopen(f"{rest}/config", timeout=5) as response:
            features = json.load(response)["features"]
        jars = _status(f"{rest}/jars")
    except OSError:
        return False
    assert jars == 404, f"{rest}/jars: expected 404 (no web submission), found {jars}"
    assert (features["web-submit"], features["web-cancel"], features["web-rescale"]) == (False, False, False), features
    return True
