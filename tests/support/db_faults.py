"""Faults at the system database's connection seam: a step's statements fail or stall.

Every transaction of :class:`~mixed_iceberg.optimizer.sysdb.database.SystemDatabase` is named
by its verb (:func:`~mixed_iceberg.optimizer.sysdb.connection.current_step`). A
:class:`ConnectionFaults` listens to the engine's ``before_cursor_execute`` event and, the
``n``-th time a step begins, raises the driver-level ``OperationalError`` a dropped connection
raises, or sleeps first (a stalled connection) and then lets the statement run. The database
is real (a SQLite file or a PostgreSQL server); only the moment and the kind of failure are chosen.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import Engine, event
from sqlalchemy.exc import OperationalError

from mixed_iceberg.optimizer.sysdb.connection import current_step, current_transaction

__all__ = ["ConnectionFaults", "Fault"]


@dataclass(frozen=True, slots=True)
class Fault:
    """``kind`` at the ``occurrence``-th transaction of ``step`` (a verb's name)."""

    step: str
    occurrence: int
    kind: Literal["fail", "stall"]
    stall_s: float = 0.0


@dataclass
class ConnectionFaults:
    """Inject ``faults`` into ``engine`` until :meth:`remove`; :attr:`fired` lists those that happened."""

    engine: Engine
    faults: list[Fault]
    fired: list[Fault] = field(default_factory=list)
    _begun: Counter[str] = field(default_factory=Counter)
    _seen: set[int] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        event.listen(self.engine, "before_cursor_execute", self._before)

    def remove(self) -> None:
        """Stop injecting (once or more)."""
        if event.contains(self.engine, "before_cursor_execute", self._before):
            event.remove(self.engine, "before_cursor_execute", self._before)

    def _before(self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        step, transaction = current_step(), current_transaction()
        if step is None or transaction is None:
            return
        with self._lock:
            if transaction in self._seen:  # only a transaction's first statement counts, and may fail
                return
            self._seen.add(transaction)
            self._begun[step] += 1
            due = [f for f in self.faults if f.step == step and f.occurrence == self._begun[step]]
            if not due:
                return
            fault = due[0]
            self.fired.append(fault)
        if fault.kind == "stall":
            time.sleep(fault.stall_s)
            return
        raise OperationalError(statement, parameters, ConnectionError(f"injected: the connection dropped during {step}"))
