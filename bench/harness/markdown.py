"""The one Markdown rendering of a run: a heading, then figure | baseline | value | value / baseline.

Numbers keep three significant digits (whole numbers from 1,000 up, with separators) and carry
their unit, so a row reads on its own: ``| merged read, best | 0.31 s | 0.12 s | 0.39x |``.
"""

from __future__ import annotations

import json

from bench.harness.environment import Environment
from bench.harness.results import Run

__all__ = ["format_number", "markdown"]

_ATTACHED_UNITS = frozenset({"x", "%"})  # 1.5x, 12%: no space before the unit


def format_number(value: float | None, unit: str = "") -> str:
    """``value`` for a table cell: ``-`` when not measured."""
    if value is None:
        return "-"
    if isinstance(value, int):
        text = f"{value:,}"
    elif abs(value) >= 1000:
        text = f"{value:,.0f}"
    elif value == 0:
        text = "0"
    elif abs(value) < 0.001:
        text = f"{value:.2e}"
    else:
        text = f"{value:.3g}"
    if not unit:
        return text
    return f"{text}{unit}" if unit in _ATTACHED_UNITS else f"{text} {unit}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _versions(env: Environment) -> str:
    parts = [f"Python {env.python}"]
    parts += [f"{name} {version}" for name, version in (("pyarrow", env.pyarrow), ("pyiceberg", env.pyiceberg)) if version]
    return ", ".join(parts)


def _heading(run: Run) -> list[str]:
    env = run.environment
    commit = "no git checkout" if env.commit is None else f"commit {env.short_commit}{' (dirty)' if env.dirty else ''}"
    end = "-" if env.load_average_end is None else f"{env.load_average_end[0]:g}"
    lines = [
        f"**{run.bench}**, {env.started_at}, {commit}; {_versions(env)}; {env.cpus} CPUs ({env.machine}), "
        f"load average {env.load_average_start[0]:g} at start, {end} at end.",
    ]
    if run.config:
        settings = ", ".join(
            f"{key}={value if isinstance(value, str | int | float) else json.dumps(value)}" for key, value in run.config.items()
        )
        lines += ["", f"Settings: {settings}."]
    if run.baseline:
        lines += ["", f"Baseline: {run.baseline}."]
    return lines


def markdown(run: Run) -> str:
    """``run`` as Markdown: heading, the figures table, then the notes as a list."""
    lines = [*_heading(run), "", "| figure | baseline | value | value / baseline |", "|---|--:|--:|--:|"]
    for figure in run.figures:
        ratio = figure.ratio
        cells = (
            _cell(figure.name),
            format_number(figure.baseline, figure.unit),
            format_number(figure.value, figure.unit),
            "-" if ratio is None else f"{format_number(ratio)}x",
        )
        lines.append("| " + " | ".join(cells) + " |")
    if run.notes:
        lines.append("")
        lines += [f"- {note}" for note in run.notes]
    return "\n".join(lines) + "\n"
