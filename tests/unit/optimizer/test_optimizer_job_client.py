"""The optimizer job's client keeps its job only while the job runs: a job that fails (or is
cancelled elsewhere) ends the client with exit status 1 and the failure's cause in one line,
instead of a client that stays up with no optimizer behind it."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest

from mixed_iceberg.flink_job import ended_because
from mixed_iceberg.optimizer import job


def _done(value: Any = None, error: BaseException | None = None) -> Future[Any]:
    future: Future[Any] = Future()
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)
    return future


class FakeJobClient:
    """Statuses in turn (the last one repeats); a FAILED job's result raises as Py4J does."""

    def __init__(self, *statuses: str) -> None:
        self.statuses = list(statuses)
        self.cancelled = False

    def get_job_id(self) -> str:
        return "j1"

    def get_job_status(self) -> Future[Any]:
        status = "CANCELED" if self.cancelled else self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return _done(status)

    def get_job_execution_result(self) -> Future[Any]:
        if self.statuses[0] == "FAILED":
            trace = 'java.lang.RuntimeException: Error received from SDK harness: Traceback (most recent call last):\n  File "x.py", line 1, in f\nOSError: disk full\n'
            return _done(error=RuntimeError(trace))
        return _done(None)

    def cancel(self) -> Future[Any]:
        self.cancelled = True
        return _done(None)


@pytest.fixture(autouse=True)
def _fast_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job, "POLL_S", 0.01)


def test_a_failed_job_ends_the_client_with_its_cause(caplog: pytest.LogCaptureFixture) -> None:
    client = FakeJobClient("RUNNING", "RUNNING", "FAILED")
    started = time.monotonic()
    with caplog.at_level(logging.ERROR):
        assert job.serve(client, threading.Event(), run_for=0, group="g") == 1
    assert time.monotonic() - started < 5
    assert "group g ended: FAILED: OSError: disk full" in caplog.text
    assert not client.cancelled


def test_a_job_cancelled_elsewhere_ends_the_client() -> None:
    assert job.serve(FakeJobClient("RUNNING", "CANCELED"), threading.Event(), run_for=0, group="g") == 1


def test_the_client_cancels_a_running_job_when_its_time_is_up_or_it_is_told_to_stop() -> None:
    client = FakeJobClient("RUNNING")
    assert job.serve(client, threading.Event(), run_for=0.05, group="g") == 0
    assert client.cancelled
    stop, client = threading.Event(), FakeJobClient("RUNNING")
    threading.Timer(0.05, stop.set).start()
    assert job.serve(client, stop, run_for=0, group="g") == 0
    assert client.cancelled


def test_ended_because_is_none_while_the_job_runs() -> None:
    assert ended_because(FakeJobClient("RUNNING")) is None
    assert ended_because(FakeJobClient("FINISHED")) == "FINISHED"
