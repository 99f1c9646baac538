"""Running the README's ``make`` targets from tests, as a user would, minus the install step.

``make <target>`` first brings the venv up to date (``install``), which would reinstall packages
under a running test session whenever ``pyproject.toml`` is newer than the stamp. The tests run
the target's own recipe instead (``-o .venv/.installed``: the stamp counts as up to date) with
this interpreter as ``PY``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

from tests.support.services import ROOT

__all__ = ["make_command", "run_make"]


def make_command(target: str, args: Sequence[str] = ()) -> list[str]:
    command = ["make", "--no-print-directory", "-o", ".venv/.installed", target, f"PY={sys.executable}"]
    if args:
        command.append(f"ARGS={' '.join(args)}")
    return command


def run_make(
    target: str, args: Sequence[str] = (), *, env: Mapping[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``make <target> ARGS=...`` in the checkout; stdout and stderr together in ``stdout``."""
    return subprocess.run(
        make_command(target, args),
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )
