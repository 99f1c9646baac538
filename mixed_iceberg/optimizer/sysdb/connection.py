"""The connection seam of the system database: the engine, the schema's migrations, and the
one place every read and write transaction begins.

Each transaction is named by the verb that runs it (:func:`current_step` while it runs), so
that a test can make the connection fail or stall at a chosen step of a process with a plain
SQLAlchemy event listener on :attr:`Connected.engine` (``tests/support/db_faults.py``), against
a real database.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import Connection

from mixed_iceberg.exceptions import ConfigError

__all__ = ["HEAD", "Connected", "current_step", "current_transaction"]

#: The newest schema version (the Alembic revision of ``migrations/versions/``).
HEAD = "0003"
_MIGRATIONS = Path(__file__).with_name("migrations")
_SQLITE_BUSY_MS = 60_000

_STEP: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar("sysdb_step", default=None)
_SERIAL = itertools.count(1)


def current_step() -> str | None:
    """The verb whose transaction this thread runs now (None outside one)."""
    step = _STEP.get()
    return step[0] if step is not None else None


def current_transaction() -> int | None:
    """A number unique to the transaction (or read) this thread runs now (None outside one)."""
    step = _STEP.get()
    return step[1] if step is not None else None


class Connected:
    """The system database at ``url`` (SQLAlchemy: ``sqlite:///path`` or ``postgresql+psycopg2://...``).

    Raises:
        ConfigError: the URL does not parse or names a driver that is not installed.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            if url.startswith("sqlite"):
                self.engine: Engine = create_engine(url, connect_args={"timeout": 60, "check_same_thread": False})
                event.listen(self.engine, "connect", _sqlite_connect)
                event.listen(self.engine, "begin", _sqlite_begin)
            else:
                self.engine = create_engine(url, pool_pre_ping=True)
        except Exception as exc:
            raise ConfigError(f"system database {url!r}: {exc}") from exc

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.engine.url.render_as_string(hide_password=True)!r})"

    def migrate(self, revision: str = "head") -> None:
        """Bring the schema to ``revision`` (default: the newest), from an empty database or any older version."""
        config = Config()
        config.set_main_option("script_location", str(_MIGRATIONS))
        with self._write("migrate") as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)

    def schema_version(self) -> str | None:
        """The schema's revision; None for a database never migrated."""
        with self._read("schema_version") as connection:
            return MigrationContext.configure(connection).get_current_revision()

    def dispose(self) -> None:
        self.engine.dispose()

    @contextlib.contextmanager
    def _write(self, step: str) -> Iterator[Connection]:
        """A transaction of the verb ``step``: committed when the block ends, rolled back on an error."""
        token = _STEP.set((step, next(_SERIAL)))
        try:
            with self.engine.begin() as connection:
                yield connection
        finally:
            _STEP.reset(token)

    @contextlib.contextmanager
    def _read(self, step: str) -> Iterator[Connection]:
        """A read-only connection of the verb ``step``."""
        token = _STEP.set((step, next(_SERIAL)))
        try:
            with self.engine.connect() as connection:
                yield connection
        finally:
            _STEP.reset(token)


def _sqlite_connect(connection: Any, _: Any) -> None:
    # SQLAlchemy's recipe for SQLite transactions: the driver's own BEGIN is deferred, so two
    # processes that both read and then write deadlock ("database is locked" at once). Every
    # transaction begins IMMEDIATE instead (_sqlite_begin) and waits for the lock.
    connection.isolation_level = None
    cursor = connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={_SQLITE_BUSY_MS}")
    # Turning WAL on takes the database's exclusive lock, and SQLite answers "database is
    # locked" at once, without its busy handler, while another connection holds a write
    # transaction begun before WAL was on: optimizers starting together on a fresh database
    # (two subtasks of the PyFlink job in one process, in thread mode) met that. Wait instead.
    deadline = time.monotonic() + _SQLITE_BUSY_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    connection.exec_driver_sql("BEGIN IMMEDIATE")
