"""A submitted PyFlink job seen from its client: its status, whether it ended, and the one-line
cause of a failure, from the stack trace Flink reports for it.

A failure of the ingest function reaches Flink as a Java exception chain (``AsynchronousException``
... ``Caused by: java.lang.RuntimeException: Error received from SDK harness ...``) whose message
holds the Python worker's traceback, often twice, and with Python's own chain in it (a
``WriterFailedError`` raised ``from`` the commit's ``OSError``). The client prints what a user
needs instead of those few hundred lines: the Python exception that ended the traceback and the
first exception of its chain, or, when no Python traceback is in it, the Java root cause::

    >>> failure_cause('''java.lang.RuntimeException: Error received from SDK harness for instruction 2: Traceback (most recent call last):
    ...   File "writer.py", line 101, in commit
    ... OSError: injected table commit failure
    ...
    ... The above exception was the direct cause of the following exception:
    ...
    ... Traceback (most recent call last):
    ...   File "buffering.py", line 203, in add
    ... mixed_iceberg.exceptions.WriterFailedError: t: a commit failed
    ... ''')
    'WriterFailedError: t: a commit failed (caused by OSError: injected table commit failure)'
"""

from __future__ import annotations

import re
from typing import Any, Protocol

__all__ = ["TERMINAL", "JobClient", "ended_because", "failure_cause", "job_status"]

#: The statuses a job does not leave (PyFlink's ``JobStatus`` names).
TERMINAL = frozenset({"FAILED", "CANCELED", "FINISHED"})


class _Result(Protocol):
    def result(self) -> Any: ...


class JobClient(Protocol):
    """What the jobs' clients use of PyFlink's ``JobClient``."""

    def get_job_id(self) -> object: ...

    def get_job_status(self) -> _Result: ...

    def get_job_execution_result(self) -> _Result: ...

    def cancel(self) -> _Result: ...


def job_status(client: JobClient) -> str:
    """The job's status by name (``RUNNING``; PyFlink's enum prints as ``JobStatus.RUNNING``)."""
    status = client.get_job_status().result()
    return str(getattr(status, "name", status))


def ended_because(client: JobClient) -> str | None:
    """None while the job runs; once it ended, its status and, for a failure, the one-line cause
    from its execution result (``FAILED: OSError: ...``)."""
    status = job_status(client)
    if status not in TERMINAL:
        return None
    try:
        client.get_job_execution_result().result()
    except Exception as exc:  # the job's boundary: a Py4J error carrying the Java trace
        return f"{status}: {failure_cause(str(exc))}"
    return status


_TRACEBACK = "Traceback (most recent call last):"
#: Python's chaining sentences between the tracebacks of one exception chain.
_CHAINED = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)
#: ``pkg.module.SomeError: message`` (or a bare ``SomeError``) at the start of a line.
_PYTHON_EXCEPTION = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")
_JAVA_CAUSE = re.compile(r"^Caused by: (?P<name>[\w.$]+)(?::\s?(?P<message>.*))?$")
_LIMIT = 300


def _short(name: str, message: str | None) -> str:
    text = name.rsplit(".", 1)[-1] + (f": {message.strip()}" if message and message.strip() else "")
    return text if len(text) <= _LIMIT else text[: _LIMIT - 3] + "..."


def _python_chain(lines: list[str]) -> list[str]:
    """The exceptions of the first Python exception chain in ``lines``, in the order printed."""
    start = next((i for i, line in enumerate(lines) if line.rstrip().endswith(_TRACEBACK)), None)
    if start is None:
        return []
    chain: list[str] = []
    in_traceback = True
    for line in lines[start + 1 :]:
        stripped = line.strip()
        if stripped == _TRACEBACK:
            in_traceback = True
            continue
        if stripped in _CHAINED or not stripped:
            continue
        if not in_traceback:
            break  # whatever follows the chain (a Java "Caused by:", Beam's own lines)
        if line[:1].isspace():
            continue  # a frame or its source line
        found = _PYTHON_EXCEPTION.match(stripped)
        if found is None or stripped.startswith("Caused by:"):
            break
        chain.append(_short(found["name"], found["message"]))
        in_traceback = False
    return chain


def failure_cause(stacktrace: str) -> str:
    """A one-line cause: ``Last: message (caused by First: message)`` of the Python chain, else
    the Java root cause (the last ``Caused by:``), else the trace's first line."""
    lines = stacktrace.splitlines()
    chain = _python_chain(lines)
    if chain:
        return chain[-1] if len(chain) == 1 else f"{chain[-1]} (caused by {chain[0]})"
    causes = [found for line in lines if (found := _JAVA_CAUSE.match(line.strip())) is not None]
    if causes:
        return _short(causes[-1]["name"], causes[-1]["message"])
    first = next((line.strip() for line in lines if line.strip()), "")
    found = _PYTHON_EXCEPTION.match(first)
    return _short(found["name"], found["message"]) if found else _short(first, None)
