"""How a benchmark ends: its table on stdout, its JSON into the results, the path on stderr."""

from __future__ import annotations

import sys
from pathlib import Path

from bench.harness.markdown import markdown
from bench.harness.results import Run, write_run

__all__ = ["publish"]


def publish(run: Run, path: Path | None = None) -> Path:
    """Print ``run``'s Markdown and write its JSON to ``path`` (default: a new file in ``bench/results/``)."""
    written = write_run(run, path)
    print(markdown(run), end="", flush=True)
    print(f"\nJSON: {written}", file=sys.stderr, flush=True)
    return written
