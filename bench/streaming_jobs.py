"""Kafka and the two PyFlink jobs as a benchmark runs them: started, watched, stopped.

The approach of ``scripts/demo_ingest.py`` (``make demo``), for benchmarks: the private broker
(``scripts/services/kafka.sh``), the ingest job (``jobs/ingest_cdc.py``, one table per job) and
the optimizer job of one group (``jobs/optimizer_job.py``), each a process group of its own so
that stopping one takes its JVM and Python workers along. Nothing here measures.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

import yaml

from bench.harness import ROOT

__all__ = [
    "KAFKA_SH",
    "Kafka",
    "delete_topics",
    "optimizer_config",
    "start_job",
    "stop_jobs",
    "wait_for_optimizers",
]

KAFKA_SH = ROOT / "scripts/services/kafka.sh"
PY = sys.executable


class Kafka:
    """The private broker: started unless it runs, and stopped again only if started here."""

    def __init__(self) -> None:
        self.started = False
        self.bootstrap = ""

    def __enter__(self) -> Kafka:
        self.started = subprocess.run(["bash", str(KAFKA_SH), "status"], capture_output=True).returncode != 0
        out = subprocess.run(["bash", str(KAFKA_SH), "start"], check=True, capture_output=True, text=True).stdout
        self.bootstrap = out.strip().splitlines()[-1]
        return self

    def __exit__(self, *_: object) -> None:
        if self.started:
            subprocess.run(["bash", str(KAFKA_SH), "stop"], check=False, capture_output=True)


def start_job(command: list[str], env: Mapping[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    """``command`` from the repository root in a new session (its process group is the job)."""
    return subprocess.Popen(command, env=dict(env), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop_jobs(jobs: list[subprocess.Popen[bytes]], timeout: float = 60.0) -> None:
    """SIGTERM to each job's client (the optimizer job then cancels its mini-cluster, so its
    optimizers unregister; a signal to the whole group killed the JVM under the client's cancel),
    then SIGKILL to whatever is left of each process group (a JVM, Python workers)."""
    for job in jobs:
        if job.poll() is None:
            job.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for job in jobs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            job.wait(max(0.1, deadline - time.monotonic()))
    for job in jobs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        job.wait()


def optimizer_config(path: Path, groups: Mapping[str, Mapping[str, str]], container: str = "flink") -> Path:
    """``conf/optimizer.yaml`` with ``groups`` (name: properties on top of its ``default``
    group's) instead of its own, written to ``path``."""
    raw = yaml.safe_load((ROOT / "conf/optimizer.yaml").read_text())
    default = next(g for g in raw["optimizer_groups"] if g["name"] == "default").get("properties", {})
    raw["optimizer_groups"] = [
        {"name": name, "container": container, "properties": {**default, **properties}} for name, properties in groups.items()
    ]
    path.write_text(yaml.safe_dump(raw))
    return path


def wait_for_optimizers(db_url: str, group: str, count: int, job: subprocess.Popen[bytes], timeout: float = 180.0) -> float:
    """Seconds until ``count`` optimizers of ``group`` are registered and alive (the optimizer
    job's JVM and Python workers are up by then)."""
    from mixed_iceberg.optimizer.sysdb.database import SystemDatabase

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if job.poll() is not None:
            raise RuntimeError(f"the optimizer job exited ({job.returncode}) before its optimizers registered")
        db = SystemDatabase(db_url)
        try:
            if len(db.live_optimizers(group, 60_000)) >= count:
                return time.monotonic() - started
        except Exception:  # the job has not created its system database yet
            pass
        finally:
            db.dispose()
        time.sleep(0.5)
    raise RuntimeError(f"the optimizer job's {count} optimizer(s) did not register within {timeout:.0f} s")


def delete_topics(bootstrap: str, prefixes: tuple[str, ...]) -> int:
    """Delete the broker's topics whose names start with one of ``prefixes``; how many."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    names = [name for name in admin.list_topics(timeout=10).topics if name.startswith(prefixes)]
    if names:
        for future in admin.delete_topics(names, operation_timeout=60).values():
            future.result()
    return len(names)
