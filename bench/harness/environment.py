"""What a run measured on: the commit, the interpreter and libraries, the machine, the date, the load.

Figures from a shared machine move by 2-3x between runs, so every run records the load average
at its start and end next to its figures. Versions are read from the installed distributions'
metadata, without importing them: the peers orchestrator has no pyiceberg, and a benchmark that
puts another tree's library first on ``PYTHONPATH`` records where ``mixed_iceberg`` came from
(``library``) without loading it before the benchmark does.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib.metadata
import importlib.util
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ROOT", "Environment", "capture_environment"]

#: The repository the ``bench`` package lives in: whose commit a run records.
ROOT = Path(__file__).resolve().parents[2]

LoadAverage = tuple[float, float, float]


@dataclass(frozen=True, slots=True)
class Environment:
    """The circumstances of one run.

    ``commit`` is the full hash of ``HEAD`` of the bench's repository (``None`` outside a git
    checkout) and ``dirty`` whether tracked files differed from it; untracked files do not count,
    so a result the last run wrote does not make the next run dirty. ``library`` is the folder the
    ``mixed_iceberg`` package is imported from, ``None`` where it is not installed.
    """

    commit: str | None
    dirty: bool | None
    python: str
    pyarrow: str | None
    pyiceberg: str | None
    numpy: str | None
    library: str | None
    cpus: int | None
    machine: str
    platform: str
    started_at: str
    load_average_start: LoadAverage
    load_average_end: LoadAverage | None = None

    def __post_init__(self) -> None:
        if self.commit is not None and (len(self.commit) < 7 or not all(c in "0123456789abcdef" for c in self.commit)):
            raise ValueError(f"expected a git commit hash, found {self.commit!r}")
        dt.datetime.fromisoformat(self.started_at)  # raises on anything but an ISO-8601 time

    @property
    def short_commit(self) -> str:
        """The commit's first 7 digits, ``nogit`` outside a checkout."""
        return self.commit[:7] if self.commit else "nogit"

    @property
    def date(self) -> str:
        """``YYYY-MM-DD`` of the start, in UTC."""
        return self.started_at[:10]

    def finished(self) -> Environment:
        """This environment with the load average at the end of the run."""
        return dataclasses.replace(self, load_average_end=_load_average())

    def to_json(self) -> dict[str, object]:
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Environment:
        values = dict(data)
        for key in ("load_average_start", "load_average_end"):
            if isinstance(values.get(key), list):
                values[key] = tuple(values[key])  # type: ignore[arg-type]  # JSON has no tuples
        return cls(**values)  # type: ignore[arg-type]  # the constructor checks the values it can


def capture_environment(root: Path = ROOT) -> Environment:
    """The environment now: call it before the benchmark starts, ``finished()`` when it ends."""
    commit = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no") if commit is not None else None
    return Environment(
        commit=commit,
        dirty=None if status is None else bool(status),
        python=platform.python_version(),
        pyarrow=_version("pyarrow"),
        pyiceberg=_version("pyiceberg"),
        numpy=_version("numpy"),
        library=_library(),
        cpus=os.cpu_count(),
        machine=platform.machine(),
        platform=platform.platform(),
        started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        load_average_start=_load_average(),
    )


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _library() -> str | None:
    module = sys.modules.get("mixed_iceberg")
    if module is not None and module.__file__:
        return str(Path(module.__file__).parent)
    spec = importlib.util.find_spec("mixed_iceberg")  # a top-level name: finds it without importing
    return str(Path(spec.origin).parent) if spec is not None and spec.origin else None


def _load_average() -> LoadAverage:
    one, five, fifteen = os.getloadavg()
    return round(one, 2), round(five, 2), round(fifteen, 2)
