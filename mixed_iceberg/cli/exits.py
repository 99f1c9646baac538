"""The CLI's exit codes, one per kind of outcome, and the one line an error prints.

docs/cli.md lists the same table; ``tests/unit/cli/test_errors.py`` checks that each code is
documented there and that every error prints one line, never a traceback.
"""

from __future__ import annotations

import enum
import re

from mixed_iceberg.exceptions import (
    CommitError,
    CommitStateUnknownError,
    CorruptTableError,
    LogStoreError,
    MixedIcebergError,
    TableBusyError,
)

__all__ = ["ExitCode", "classify", "one_line"]


class ExitCode(enum.IntEnum):
    """What a ``mixed-iceberg`` run ended with (the process's exit status)."""

    OK = 0
    """Done; for ``status --check``: every health target met."""
    FAILED = 1
    """An unexpected error (a bug, or an error of a kind the CLI does not name); ``-v`` shows the traceback."""
    USAGE = 2
    """Bad input: an unknown verb or option, a missing catalog, namespace or table, a property the
    option registry refuses, a malformed config or spec file (argparse's own code, too)."""
    STORAGE = 3
    """The table's files or the storage could not be read or written: a damaged file, a missing
    file, an S3 error (access denied, unreachable endpoint), a LogStore (Kafka) error."""
    RETRY = 4
    """A transient refusal: another writer or optimizer got there first, or holds the table;
    running the same command again later is safe."""
    UNHEALTHY = 5
    """``status --check``: at least one table misses a health target (red)."""
    WARNING = 6
    """``status --check``: no target missed, but at least one is close (amber)."""


def one_line(message: str) -> str:
    """``message`` on one line: the lines of a multi-line error (pyarrow's S3 errors) joined."""
    return re.sub(r"\s*\n\s*", " | ", message.strip())


def classify(exc: BaseException) -> ExitCode:
    """The exit code of a run that raised ``exc``."""
    if isinstance(exc, CommitError | TableBusyError):
        return ExitCode.RETRY
    if isinstance(exc, CorruptTableError | LogStoreError | CommitStateUnknownError | OSError):
        return ExitCode.STORAGE
    if isinstance(exc, MixedIcebergError):
        return ExitCode.USAGE
    return ExitCode.FAILED
