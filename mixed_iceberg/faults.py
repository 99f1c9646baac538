"""Crash points for the crash tests: ``kill -9`` of this process at a named point of a commit.

``MIXED_ICEBERG_TEST_CRASH_AT=<point>:<n>`` kills the process (SIGKILL: nothing is flushed,
no ``finally`` runs) the ``n``-th time it reaches ``point``. Unset (always, outside the crash
tests) :func:`crash_point` is one dictionary lookup. The points, in the order one batch of an
ingest writer with a LogStore passes them:

* ``after-log-send``: LogStore rows and dead letters are sent, the table is not committed;
* ``after-table-commit``: the ChangeStore holds the batch, the Kafka transaction is open;
* ``after-offsets-sent``: the position is sent to the transaction, which is not committed;
* ``after-kafka-commit``: both sides hold the batch.

The optimizer's, in the order one process passes them:

* ``optimizer-after-execute``: a task wrote its files, the system database does not know them;
* ``optimizer-after-commit``: the BaseStore holds the process's snapshot, the system database
  still calls it running.
"""

from __future__ import annotations

import collections
import logging
import os
import signal
import threading

__all__ = ["CRASH_AT", "CRASH_POINTS", "OPTIMIZER_CRASH_POINTS", "crash_point"]

log = logging.getLogger(__name__)

CRASH_AT = "MIXED_ICEBERG_TEST_CRASH_AT"
#: The ingest writer's points, in the order one batch passes them.
CRASH_POINTS = ("after-log-send", "after-table-commit", "after-offsets-sent", "after-kafka-commit")
#: The optimizer's points, in the order one process passes them.
OPTIMIZER_CRASH_POINTS = ("optimizer-after-execute", "optimizer-after-commit")

_reached: collections.Counter[str] = collections.Counter()
_lock = threading.Lock()


def crash_point(point: str) -> None:
    """Kill this process if :data:`CRASH_AT` names ``point`` and this is its ``n``-th time here."""
    wanted = os.environ.get(CRASH_AT)
    if not wanted:
        return
    name, _, count = wanted.partition(":")
    if name not in CRASH_POINTS + OPTIMIZER_CRASH_POINTS:
        raise ValueError(f"{CRASH_AT}={wanted!r}: expected <point>:<n> with a point of {CRASH_POINTS + OPTIMIZER_CRASH_POINTS}")
    if name != point:
        return
    with _lock:
        _reached[point] += 1
        due = _reached[point] == int(count or 1)
    if due:
        log.warning("killing this process at %s (%s=%s)", point, CRASH_AT, wanted)
        os.kill(os.getpid(), signal.SIGKILL)
