"""Progress of a long operation on stderr: the CLI's own steps plus the library's INFO lines (one
per commit, task and maintenance step), while the operation runs.

On by default when stderr is a terminal (``--progress`` forces it, ``--quiet`` silences it);
stdout stays the result alone, so ``--json`` output is never mixed with progress.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from typing import TextIO

__all__ = ["Progress"]


class _Lines(logging.Handler):
    def __init__(self, progress: Progress) -> None:
        super().__init__(logging.INFO)
        self._progress = progress

    def emit(self, record: logging.LogRecord) -> None:
        self._progress.step(record.getMessage())


class Progress:
    """Steps of one operation, each on its own stderr line with the seconds since it started."""

    def __init__(self, enabled: bool, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self._stream = stream
        self._started = time.monotonic()

    def step(self, message: str) -> None:
        if self.enabled:
            stream = self._stream or sys.stderr
            print(f"[{time.monotonic() - self._started:6.1f}s] {message}", file=stream, flush=True)

    @contextlib.contextmanager
    def library_lines(self) -> Iterator[None]:
        """While the block runs, the library's INFO lines are steps too."""
        if not self.enabled:
            yield
            return
        logger = logging.getLogger("mixed_iceberg")
        handler = _Lines(self)
        level = logger.level
        logger.addHandler(handler)
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
