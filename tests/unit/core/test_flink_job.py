"""flink_job: a job's end as its client sees it; failure_cause: one line out of the stack trace Flink reports for a failed subtask."""

from __future__ import annotations

import doctest

import pytest

from mixed_iceberg import flink_job
from mixed_iceberg.flink_job import failure_cause

# Shortened from the exception history of the commit-failure test (a Python chain inside the
# Java chain, printed twice as Flink does).
_PYTHON_CHAIN = """org.apache.flink.runtime.taskmanager.AsynchronousException: Caught exception while processing timer.
\tat org.apache.flink.streaming.runtime.tasks.StreamTask.handleAsyncException(StreamTask.java:1708)
Caused by: java.lang.RuntimeException: Error while waiting for BeamPythonFunctionRunner flush
Caused by: java.util.concurrent.ExecutionException: java.lang.RuntimeException: Error received from SDK harness for instruction 2: Traceback (most recent call last):
  File "/work/main/mixed_iceberg/ingest/writer.py", line 101, in _fail_first_commit_for_tests
    raise OSError(f"{table}: injected table commit failure ({FAIL_FIRST_TABLE_COMMIT})")
OSError: it.t: injected table commit failure (MIXED_ICEBERG_TEST_FAIL_FIRST_TABLE_COMMIT)

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/work/main/mixed_iceberg/ingest/buffering.py", line 203, in _raise_failure
    raise WriterFailedError(f"{self._name}: a commit failed") from (
mixed_iceberg.exceptions.WriterFailedError: it.t: a commit failed

\tat java.base/java.util.concurrent.CompletableFuture.reportGet(CompletableFuture.java:396)
Caused by: java.lang.RuntimeException: Error received from SDK harness for instruction 2: Traceback (most recent call last):
  File "/work/main/mixed_iceberg/ingest/writer.py", line 101, in _fail_first_commit_for_tests
OSError: it.t: injected table commit failure (MIXED_ICEBERG_TEST_FAIL_FIRST_TABLE_COMMIT)
"""


@pytest.mark.parametrize(
    ("trace", "cause"),
    [
        (
            _PYTHON_CHAIN,
            "WriterFailedError: it.t: a commit failed (caused by OSError: it.t: injected table commit failure "
            "(MIXED_ICEBERG_TEST_FAIL_FIRST_TABLE_COMMIT))",
        ),
        (
            "java.lang.RuntimeException: Error received from SDK harness for instruction 1: Traceback (most recent call last):\n"
            '  File "/x/flink.py", line 80, in open\n'
            "    from mixed_iceberg import compat\n"
            "ImportError: cannot import name 'compat'\n",
            "ImportError: cannot import name 'compat'",
        ),
        (
            "org.apache.flink.runtime.JobException: Recovery is suppressed\n\tat x.y(Z.java:1)\n"
            "Caused by: org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment.\n\tat a.b(C.java:2)\n",
            "TimeoutException: Timed out waiting for a node assignment.",
        ),
        ("java.lang.OutOfMemoryError: Java heap space\n\tat x.y(Z.java:1)\n", "OutOfMemoryError: Java heap space"),
        (
            'Traceback (most recent call last):\n  File "x.py", line 1, in f\nmixed_iceberg.exceptions.LogStoreError\n',
            "LogStoreError",
        ),
        ("", ""),
    ],
)
def test_failure_cause_names_the_python_exception_or_the_java_root_cause(trace: str, cause: str) -> None:
    assert failure_cause(trace) == cause


def test_a_long_message_is_cut() -> None:
    cause = failure_cause('Traceback (most recent call last):\n  File "x"\nValueError: ' + "x" * 1000)
    assert len(cause) == 300
    assert cause.endswith("...")


def test_the_module_example_runs() -> None:
    assert doctest.testmod(flink_job).failed == 0
