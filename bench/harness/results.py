"""Typed results and their JSON: a run is its environment and its figures, stored one file per run.

A :class:`Figure` is one measured number with its unit and, where the benchmark has one, the
baseline's number for the same thing from the same run (a figure compared across runs is
compared across machine loads). A :class:`Run` adds the settings the run was started with
(``config``), what the baseline is, notes (targets met or missed, what went wrong) and
``detail``: the raw measurements behind the figures (per-commit times, series for plots), stored
but never rendered. ``config`` and ``detail`` are normalized through JSON when a run is built,
so a run read back from its file equals the run written.

Frozen dataclasses, not pydantic models: the peers orchestrator's venv has no pydantic.
Files written before the harness (the results dated 2026-12-01) have shapes of their own and no
``format`` key: :func:`read_run` refuses them by name, ``json.load`` reads them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness.environment import ROOT, Environment

__all__ = ["FORMAT", "RESULTS_DIR", "Figure", "Run", "read_run", "result_path", "write_run"]

#: The committed history of benchmark results.
RESULTS_DIR = ROOT / "bench" / "results"
#: The ``format`` key of a harness result file.
FORMAT = "mixed-iceberg-bench/1"

_BENCH_NAME = re.compile(r"[a-z][a-z0-9_]*")


def _number(label: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{label}: expected a number or None, found {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{label}: expected a finite number or None (not measured), found {value!r}")
    return value


def _plain_json(label: str, value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` as JSON gives it back (tuples as lists, keys as strings); strict JSON only."""
    try:
        return dict(json.loads(json.dumps(value, allow_nan=False)))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{label}: expected plain JSON data (finite numbers), found {exc}") from exc


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured number: ``value`` in ``unit``, beside the ``baseline`` from the same run.

    ``None`` is "not measured" (a phase a system did not reach), never zero.
    """

    name: str
    value: float | None
    unit: str = ""
    baseline: float | None = None

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ValueError(f"expected a figure name, found {self.name!r}")
        _number(f"figure {self.name!r}", self.value)
        _number(f"baseline of figure {self.name!r}", self.baseline)

    @property
    def ratio(self) -> float | None:
        """``value / baseline`` where both were measured (and the baseline is not zero)."""
        if self.value is None or not self.baseline:
            return None
        return self.value / self.baseline

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "value": self.value, "unit": self.unit, "baseline": self.baseline}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Figure:
        return cls(data["name"], data["value"], data.get("unit", ""), data.get("baseline"))


@dataclass(frozen=True, slots=True)
class Run:
    """One run of one benchmark: ``bench`` names it (and its result files)."""

    bench: str
    environment: Environment
    figures: Sequence[Figure]
    baseline: str = ""  # what the baseline column measured
    config: Mapping[str, Any] = field(default_factory=dict)
    notes: Sequence[str] = ()
    detail: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not _BENCH_NAME.fullmatch(self.bench):
            raise ValueError(f"expected a benchmark name like format_core, found {self.bench!r}")
        figures = tuple(self.figures)
        seen: set[str] = set()
        for figure in figures:
            if not isinstance(figure, Figure):
                raise TypeError(f"{self.bench}: expected Figure objects, found {figure!r}")
            if figure.name in seen:
                raise ValueError(f"{self.bench}: expected one figure per name, found {figure.name!r} twice")
            seen.add(figure.name)
        # Frozen: the normalized values are set the way dataclasses set them.
        object.__setattr__(self, "figures", figures)
        object.__setattr__(self, "notes", tuple(str(note) for note in self.notes))
        object.__setattr__(self, "config", _plain_json(f"{self.bench} config", self.config))
        object.__setattr__(self, "detail", _plain_json(f"{self.bench} detail", self.detail))

    def figure(self, name: str) -> Figure:
        """The figure called ``name``."""
        for figure in self.figures:
            if figure.name == name:
                return figure
        raise KeyError(f"{self.bench}: no figure {name!r}")

    def to_json(self) -> dict[str, object]:
        return {
            "format": FORMAT,
            "bench": self.bench,
            "environment": self.environment.to_json(),
            "config": self.config,
            "baseline": self.baseline,
            "figures": [figure.to_json() for figure in self.figures],
            "notes": list(self.notes),
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Run:
        if data.get("format") != FORMAT:
            raise ValueError(f"expected a result of format {FORMAT!r}, found format {data.get('format')!r}")
        return cls(
            bench=data["bench"],
            environment=Environment.from_json(data["environment"]),
            figures=[Figure.from_json(f) for f in data["figures"]],
            baseline=data.get("baseline", ""),
            config=data.get("config", {}),
            notes=data.get("notes", ()),
            detail=data.get("detail", {}),
        )


def result_path(run: Run, directory: Path = RESULTS_DIR) -> Path:
    """``<bench>-<date>-<shortcommit>.json`` in ``directory``; ``-2``, ``-3``... when taken."""
    stem = f"{run.bench}-{run.environment.date}-{run.environment.short_commit}"
    path = directory / f"{stem}.json"
    n = 1
    while path.exists():
        n += 1
        path = directory / f"{stem}-{n}.json"
    return path


def write_run(run: Run, path: Path | None = None) -> Path:
    """Write ``run`` as JSON to ``path`` (default: a new :func:`result_path`); return the path."""
    target = path if path is not None else result_path(run)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(run.to_json(), indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return target


def read_run(path: Path) -> Run:
    """The run stored at ``path`` by :func:`write_run`."""
    try:
        return Run.from_json(json.loads(path.read_text(encoding="utf-8")))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc
